"""How `xerj-tools mcp` stops: SIGTERM and SIGINT at any moment, as a real subprocess."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from xerj_tools import load_registry
from xerj_tools.testing import XerjStandIn

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the MCP SDK is not installed: pip install 'xerj-tools[mcp]'",
)
KEY = "mcp-signal-key-9c2a"


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn(api_key=KEY) as stand_in:
        yield stand_in


def start(xerj: XerjStandIn, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server; return it once its start line is out (and that line)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XERJ_")}
    env.update(XERJ_URL=xerj.url, XERJ_API_KEY=KEY)
    process = subprocess.Popen(
        [sys.executable, "-m", "xerj_tools", "mcp", *args],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    banner = process.stderr.readline().decode()
    assert banner.startswith("xerj-tools mcp "), banner
    return process, banner


def finish(process: subprocess.Popen[bytes]) -> str:
    """Wait for the process to exit (stdin stays open: it must not need EOF); return stderr."""
    assert process.stderr is not None
    try:
        rest = process.stderr.read().decode()  # EOF once the process (and its stderr) is gone
        process.wait(timeout=60)
    finally:
        process.kill()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return rest


# The race is run three times per transport; the repeats (a server start each, ~1 s of CPU) are a
# stress case: CI runs them with `-m slow`.
@pytest.mark.parametrize("args", [(), ("--http", "127.0.0.1:0")], ids=["stdio", "http"])
@pytest.mark.parametrize("attempt", [0, *(pytest.param(n, marks=pytest.mark.slow) for n in (1, 2))])
def test_sigint_right_after_the_start_line_is_one_line_and_exit_130(xerj: XerjStandIn, args: tuple[str, ...], attempt: int) -> None:
    process, _ = start(xerj, *args)
    process.send_signal(signal.SIGINT)
    rest = finish(process)
    assert (process.returncode, rest) == (130, "xerj-tools: interrupted\n")


@pytest.mark.parametrize("args", [(), ("--http", "127.0.0.1:0")], ids=["stdio", "http"])
def test_sigterm_is_a_graceful_stop_with_exit_0(xerj: XerjStandIn, args: tuple[str, ...]) -> None:
    process, _ = start(xerj, "--log-level", "info", *args)
    process.send_signal(signal.SIGTERM)
    rest = finish(process)
    assert process.returncode == 0, rest
    assert rest.endswith("stopped on SIGTERM: sessions and XERJ connections closed\n"), rest
    assert "Traceback" not in rest and "Warning" not in rest


def test_sigterm_stops_the_http_server_with_a_session_open(xerj: XerjStandIn) -> None:
    from mcp import Client

    process, banner = start(xerj, "--log-level", "info", "--http", "127.0.0.1:0")
    url = banner.split(" on ", 1)[1].split(";", 1)[0]

    async def session_then_sigterm() -> int:
        client = Client(url)
        await client.__aenter__()  # left open: the server must not wait for the client to leave
        listed = await client.list_tools()
        process.send_signal(signal.SIGTERM)
        return len(listed.tools)

    assert asyncio.run(session_then_sigterm()) == len(load_registry())
    rest = finish(process)
    assert process.returncode == 0, rest
    assert "stopped on SIGTERM: sessions and XERJ connections closed" in rest
    assert "Traceback" not in rest and KEY not in rest
