"""`xerj-tools mcp` as processes: two stateless replicas serving one client alternately, the
start-up warning of a remote bind, and the bound on one stdio message (its reader:
test_mcp_stdio_ids.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xerj_tools.testing import XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from support import until_async

from xerj_tools.integrations.mcp._callers import hash_token


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn() as stand_in:
        stand_in.add_documents("docs", {"d1": {"body": "one"}, "d2": {"body": "two"}})
        yield stand_in


def start(xerj: XerjStandIn, log: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XERJ_")}
    with open(log, "w") as errlog:
        return subprocess.Popen(
            [sys.executable, "-m", "xerj_tools", "mcp", "--log-level", "info", *args],
            env={**env, "XERJ_URL": xerj.url}, stderr=errlog, stdin=subprocess.DEVNULL,
        )  # fmt: skip


def announced(process: subprocess.Popen[bytes], log: Path) -> str | None:
    if process.poll() is not None:
        raise AssertionError(f"the server exited: {log.read_text()}")
    text = log.read_text()
    return text.split(" on ", 1)[1].split(" ", 1)[0].rstrip(";") if "/mcp" in text else None


@pytest.mark.slow
def test_two_stateless_replicas_serve_one_client_alternately(
    xerj: XerjStandIn, tmp_path: Path
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    replicas = [start(xerj, log, "--http", "127.0.0.1:0", "--stateless") for log in logs]
    try:
        urls = [
            asyncio.run(until_async(lambda p=p, log=log: announced(p, log)))
            for p, log in zip(replicas, logs, strict=True)
        ]
        served: list[str] = []

        class Alternate(httpx2.AsyncBaseTransport):
            """A load balancer with no session affinity: each request to the next replica."""

            def __init__(self) -> None:
                self.inner = httpx2.AsyncHTTPTransport()

            async def handle_async_request(self, request: Any) -> Any:
                target = httpx2.URL(urls[len(served) % 2])
                served.append(str(target))
                request.url = request.url.copy_with(port=target.port)
                request.headers["host"] = f"127.0.0.1:{target.port}"
                return await self.inner.handle_async_request(request)

            async def aclose(self) -> None:
                await self.inner.aclose()

        async def scenario() -> list[Any]:
            async with (
                httpx2.AsyncClient(transport=Alternate(), timeout=30) as http,
                Client(streamable_http_client(urls[0], http_client=http)) as client,
            ):
                tools = (await client.list_tools()).tools
                assert "xerj_search" in [t.name for t in tools]
                search = {"index": "docs", "query": {"match_all": {}}, "size": 1}
                return [await client.call_tool("xerj_search", search) for _ in range(4)]

        results = asyncio.run(scenario())
        assert [json.loads(r.content[0].text)["ok"] for r in results] == [True] * 4
        assert set(served) == set(urls)  # both replicas answered the one client
        for log in logs:  # and each ran some of its calls
            asyncio.run(until_async(lambda log=log: "call by local: 'xerj_search' ok" in log.read_text()))
    finally:
        for process in replicas:
            process.terminate()
        for process in replicas:
            process.wait(30)


@pytest.mark.slow
def test_a_remote_bind_starts_only_with_tokens_and_warns(xerj: XerjStandIn, tmp_path: Path) -> None:
    callers = tmp_path / "callers.toml"
    callers.write_text(f'[[caller]]\nname = "a"\ntoken_sha256 = "{hash_token("xt_x")}"\n')
    log = tmp_path / "server.log"
    process = start(xerj, log, "--http", "0.0.0.0:0", "--allow-remote", "--callers", str(callers),
                    "--allowed-host", "mcp.example.com")  # fmt: skip
    try:
        asyncio.run(until_async(lambda: "warning" in log.read_text() or process.poll() is not None))
        text = log.read_text()
        assert "1 callers" in text
        assert "warning: serving on 0.0.0.0, reachable from other machines" in text
    finally:
        process.terminate()
        process.wait(30)


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_stdio_message_past_the_limit_is_refused_without_being_held(
    xerj: XerjStandIn, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "xerj_tools", "mcp", "--max-message-bytes", "1048576"],
        env={**os.environ, "XERJ_URL": xerj.url}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    def answer() -> dict[str, Any]:
        assert process.stdout is not None
        reply: dict[str, Any] = json.loads(process.stdout.readline())
        return reply

    try:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})  # fmt: skip
        assert answer()["id"] == 0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        before = _peak_rss_kib(process.pid)
        head = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"xerj_search","arguments":{"index":"docs","query":{"match":{"body":"'
        process.stdin.write(head)
        chunk = b"a" * (1 << 20)
        for _ in range(48):  # 48 MB on one line: the SDK's reader alone held ~5x that
            process.stdin.write(chunk)
        process.stdin.write(b'"}}}}}\n')
        process.stdin.flush()
        refused = answer()
        assert refused["id"] == 41 and refused["error"]["code"] == -32600
        assert "longer than 1048576 bytes" in refused["error"]["message"]
        assert _peak_rss_kib(process.pid) - before < 24 * 1024
        send({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {
            "name": "xerj_search", "arguments": {"index": "docs", "query": {"match_all": {}}}}})  # fmt: skip
        served = answer()
        assert (
            served["id"] == 42 and json.loads(served["result"]["content"][0]["text"])["ok"] is True
        )
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()
