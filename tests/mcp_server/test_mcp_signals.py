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
    reason="the MCP SDK is not installed: pip install -e '.[mcp]' (in the clone)",
)
KEY = "mcp-signal-key-9c2a"


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn(api_key=KEY) as stand_in:
        yield stand_in


def start(
    xerj: XerjStandIn, *args: str, command: tuple[str, ...] = ("-m", "xerj_tools", "mcp")
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server (`xerj-tools mcp`, or the Python `command`); return it once its start
    line is out (and that line)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XERJ_")}
    env.update(XERJ_URL=xerj.url, XERJ_API_KEY=KEY)
    process = subprocess.Popen(
        [sys.executable, *command, *args],
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


# An application that runs the server itself: its own logging on the root logger, code after
# `serve` returns. The server's log goes to stderr by its own handler; the application's logging
# is what it was, during the run and after it.
EMBEDDED = """
import atexit, logging, sys
from xerj_tools.integrations.mcp import serve
logging.basicConfig(level=logging.INFO, format="app %(name)s: %(message)s", stream=sys.stderr)
root = logging.getLogger()
before = (root.level, list(root.handlers))
atexit.register(lambda: print("atexit ran", file=sys.stderr, flush=True))
code = serve(http=sys.argv[1] or None, log_level="info")
unchanged = (root.level, list(root.handlers)) == before
print(f"serve returned {code}; root logger unchanged: {unchanged}", file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize("http", ["", "127.0.0.1:0"], ids=["stdio", "http"])
def test_an_application_running_the_server_keeps_its_logging_and_its_exit(xerj: XerjStandIn, http: str) -> None:
    process, _ = start(xerj, http, command=("-c", EMBEDDED))
    process.send_signal(signal.SIGTERM)  # stdin stays open: the stdio session is cancelled
    rest = finish(process)
    assert process.returncode == 0, rest
    lines = rest.splitlines()
    # Returned (no exit from inside the server), the root logger as the application left it,
    # the interpreter's own exit (atexit ran).
    assert lines[-2:] == ["serve returned 0; root logger unchanged: True", "atexit ran"], rest
    # The stop is logged once by the server's handler and once by the application's (the
    # record propagates to the root logger as any library's does).
    stopped = [line for line in lines if "stopped on SIGTERM" in line]
    assert len(stopped) == 2 and stopped[0].endswith("xerj_tools INFO: stopped on SIGTERM: sessions and XERJ connections closed"), rest
    assert stopped[1] == "app xerj_tools: stopped on SIGTERM: sessions and XERJ connections closed"
    assert "Traceback" not in rest and KEY not in rest
