"""Support for the MCP-for-a-team tests: the real HTTP server on a loop thread, the MCP SDK's
client with a bearer token, and a local OAuth issuer (JWKS over HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

from xerj_tools.integrations.mcp._serve import configure, serve_until
from xerj_tools.testing import XerjStandIn

INIT = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}  # fmt: skip
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def tenants_node() -> Iterator[XerjStandIn]:
    """A stand-in holding tenant A's and tenant B's documents and memories."""
    with XerjStandIn() as stand_in:
        stand_in.add_documents("tenant-a-docs", {"a1": {"body": "alpha plan"}})
        stand_in.add_documents("tenant-b-docs", {"b1": {"body": "bravo secret plan"}})
        for ns, text in (("tenant-a", "A remembers the alpha plan"), ("tenant-b", "B's secret plan")):
            httpx2.post(f"{stand_in.url}/_memory/{ns}", json={"text": text}).raise_for_status()
        yield stand_in


class Running:
    """`configure(**options)` (what `xerj-tools mcp` runs) served on 127.0.0.1 by a loop thread."""

    def __init__(self, connections: Any = None, **options: Any) -> None:
        options.setdefault("http", "127.0.0.1:0")
        self.setup = configure(**options)
        bounds = connections or self.setup.connections  # deadlines and bound of the connections
        assert self.setup.sock is not None
        host, port = self.setup.sock.getsockname()[:2]
        self.port = port
        self.base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        self.url = self.base + "/mcp"
        self._stop: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        async def run() -> None:
            self._stop = asyncio.Event()
            started.set()
            await serve_until(dataclasses.replace(self.setup, connections=bounds), self._stop)

        def thread() -> None:
            self._loop.run_until_complete(run())
            # What the SDK's transports leave behind (sse-starlette's shutdown watchers) ends
            # here, not as "Task was destroyed but it is pending" when the loop closes.
            self._loop.run_until_complete(drain())

        async def drain() -> None:
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        self._thread = threading.Thread(target=thread, daemon=True)
        self._thread.start()
        started.wait(10)

    def close(self) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self._loop.close()
        assert self.setup.sock is not None
        self.setup.sock.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@asynccontextmanager
async def connect(url: str, token: str | None = None, **client: Any) -> AsyncIterator[Any]:
    """The MCP SDK's `Client` over streamable HTTP, sending `token` as a bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, **client) as http,
        Client(streamable_http_client(url, http_client=http)) as session,
    ):
        yield session


def text_of(result: Any) -> dict[str, Any]:
    assert len(result.content) == 1 and result.content[0].type == "text"
    payload: dict[str, Any] = json.loads(result.content[0].text)
    return payload


class Issuer:
    """An OAuth authorization server's public side on 127.0.0.1: its metadata and its keys
    (JWKS), and `token()` to sign access tokens with its private key."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self._jwt = jwt
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "key-1"
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-authorization-server":
                    body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks"}
                elif self.path == "/jwks":
                    issuer.fetches += 1
                    body = {"keys": [issuer.jwk()]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # `close()` waits out one poll of `serve_forever` (0.5 s by default).
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(
            self._jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key())
        )
        return {**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def token(self, audience: str, key: Any = None, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": audience, "iat": now, "exp": now + 300, **claims}
        token: str = self._jwt.encode(
            body, key or self.key, algorithm="RS256", headers={"kid": self.kid}
        )
        return token

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
