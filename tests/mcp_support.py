"""An MCP SDK client connected to a `xerj-tools mcp` process (stdio or streamable HTTP), kept
open on a loop thread, for the tests that drive the server as a user's MCP client does."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

import pytest
from support import until_async

from xerj_tools.testing import XerjStandIn

HAVE_SDK = importlib.util.find_spec("mcp") is not None
needs_sdk = pytest.mark.skipif(
    not HAVE_SDK, reason="the MCP SDK is not installed: pip install 'xerj-tools[mcp]'"
)
T = TypeVar("T")


class Connected:
    """An SDK client connected to one `xerj-tools mcp` process, kept open on a loop thread so
    that the (slow to start) server serves a whole module of tests."""

    def __init__(self, transport: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.transport, self.log_path = transport, log
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self._ready = threading.Event()
        self._closing: asyncio.Event | None = None
        self._owner = asyncio.run_coroutine_threadsafe(self._own(args, env), self._loop)
        while not self._ready.wait(0.05):
            if self._owner.done():
                self._owner.result()  # raises what went wrong
                raise RuntimeError(f"the MCP client stopped early; server log:\n{self.log()}")

    async def _own(self, args: list[str], env: dict[str, str]) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._closing = asyncio.Event()
        command = [sys.executable, "-m", "xerj_tools", "mcp", "--log-level", "info", *args]
        async with AsyncExitStack() as stack:
            errlog = stack.enter_context(open(self.log_path, "w"))  # noqa: SIM115
            if self.transport == "stdio":
                params = StdioServerParameters(command=command[0], args=command[1:], env=env)
                client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
            else:
                process = subprocess.Popen([*command, "--http", "127.0.0.1:0"], env=env, stderr=errlog)
                stack.callback(process.wait, 30)
                stack.callback(process.terminate)
                url = await until_async(lambda: self._announced_url(process))
                client = await stack.enter_async_context(Client(url))
            self.client = client
            self._ready.set()
            await self._closing.wait()

    def _announced_url(self, process: subprocess.Popen[bytes]) -> str | None:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{self.log()}")
        text = self.log()
        return text.split(" on ", 1)[1].split(";", 1)[0] if "/mcp;" in text else None

    def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(work(self.client), self._loop).result(timeout=120)

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Call a tool; return (isError, the decoded text content)."""
        result = self.run(lambda client: client.call_tool(name, arguments))
        assert len(result.content) == 1 and result.content[0].type == "text"
        return result.is_error, json.loads(result.content[0].text)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def close(self) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        self._owner.result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


def server_env(xerj: XerjStandIn, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XERJ_")}
    return {**env, "XERJ_URL": xerj.url, **extra}
