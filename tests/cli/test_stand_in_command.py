"""`python -m xerj_tools.testing` and `xerj-tools stand-in`: the stand-in on a port, until
interrupted, optionally with an API key; its URL printed first."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import pytest

from xerj_tools._cli._main import _parser, main
from xerj_tools.testing import XerjStandIn
from xerj_tools.testing._serve import serve


@contextmanager
def serving(*flags: str) -> Iterator[tuple[str, io.StringIO]]:
    """`xerj-tools stand-in --port 0 <flags>` served in a thread until the block ends: the URL it
    printed, and all it prints."""
    printed = threading.Event()

    class Out(io.StringIO):
        def flush(self) -> None:
            if "XERJ_URL=" in self.getvalue():
                printed.set()

    stop, out = threading.Event(), Out()
    args = _parser().parse_args(["stand-in", "--port", "0", *flags])
    thread = threading.Thread(target=serve, args=(args, out, stop))
    thread.start()
    try:
        assert printed.wait(5)
        yield out.getvalue().splitlines()[0].removeprefix("XERJ_URL="), out
    finally:
        stop.set()
        thread.join(5)


def test_it_serves_until_stopped_and_asks_for_the_key() -> None:
    with serving("--api-key", "test-key") as (url, out):
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        assert "test-key" not in out.getvalue()  # the key is never printed
        body = {"query": {"match_all": {}}}
        assert httpx2.post(f"{url}/docs/_search", json=body).status_code == 401
        ok = httpx2.post(f"{url}/docs/_search", json=body, headers={"Authorization": "ApiKey test-key"})
        assert ok.status_code == 200 and ok.json()["hits"]["hits"]
    assert out.getvalue().endswith("stopped\n")


def test_with_catalog_it_holds_the_autoindex_catalog_of_its_corpus() -> None:
    with serving("--catalog") as (url, out):
        listed = httpx2.get(f"{url}/_cat/indices").text
        assert "autoindex-catalog" in listed and "autoindex-catalog" in out.getvalue()


def test_a_port_in_use_is_a_clear_usage_error() -> None:
    with XerjStandIn() as taken:
        port = int(taken.url.rsplit(":", 1)[1])
        out = io.StringIO()
        assert main(["stand-in", "--port", str(port)], stdout=out) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in out.getvalue() and "--port 0" in out.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("command", [["-m", "xerj_tools.testing"], ["-m", "xerj_tools", "stand-in"]])
def test_the_command_runs_until_interrupted(command: list[str]) -> None:
    process = subprocess.Popen([sys.executable, *command, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().removeprefix("XERJ_URL=")
        assert httpx2.get(f"{url}/_cat/indices?format=json").status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 0
        assert process.stdout.read().endswith("stopped\n")
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize("depth", [129, 100_000])
def test_a_body_nested_past_serdes_limit_is_answered_400_and_the_next_is_served(depth: int) -> None:
    body = b'{"query":' + b"[" * depth + b"]" * depth + b"}"
    with XerjStandIn() as stand_in:
        deep = httpx2.post(f"{stand_in.url}/docs/_search", content=body,
                           headers={"Content-Type": "application/json"}, timeout=10)
        assert deep.status_code == 400
        assert deep.json()["error"]["reason"] == (
            "malformed JSON in request body: recursion limit exceeded at line 1 column 137"
        )
        assert httpx2.get(f"{stand_in.url}/", timeout=10).status_code == 200


def test_a_body_nested_to_serdes_limit_is_read() -> None:
    body = b'{"query": {"bool": {"must": [{"match_all": {}}], "filter":' + b"[" * 124 + b"]" * 124 + b"}}}"
    with XerjStandIn() as stand_in:
        answer = httpx2.post(f"{stand_in.url}/docs/_search", content=body,
                             headers={"Content-Type": "application/json"}, timeout=10)
        assert "recursion limit" not in answer.text
