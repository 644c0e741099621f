"""`xerj-tools mcp --http`: the bind rules, the Host and Origin checks, authentication wiring,
and the watch that cancels a call whose HTTP request was closed.

Host and Origin are checked on every bind, by this module (not the SDK's check, which it turns
on only for the literal hosts 127.0.0.1, localhost and ::1, and matches Host by prefix): a
``Host`` that is not one of the server's names is answered 421, an ``Origin`` whose host is not
one of them and that is not listed with ``--allowed-origin`` is answered 403, before any
authentication. A request without ``Origin`` (any non-browser client) passes that check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ..._exceptions import ConfigurationError

__all__ = ["HangUpWatch", "HostOriginGuard", "allowed_names", "bind", "is_loopback", "parse_bind"]

Scope = MutableMapping[str, Any]
HUNG_UP = "xerj_tools.hung_up"  # the scope key of the event set when the client hangs up
_LOOPBACK_NAMES = ("localhost",)
_WILDCARDS = ("0.0.0.0", "::")


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it could resolve anywhere


def parse_bind(text: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT``, ``:PORT`` or ``PORT`` -> (host, port); loopback unless
    `allow_remote` (which `serve` accepts only with authentication)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not (port_text.isascii() and port_text.isdigit()) or not 0 <= int(port_text) <= 65535:
        raise ConfigurationError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765); got {text!r}")
    if not allow_remote and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve on {host}: it is not a loopback address. Bind to 127.0.0.1 "
            "(behind a reverse proxy), or pass --allow-remote with --callers FILE (bearer "
            "tokens) or --oauth-issuer/--oauth-resource so that every caller authenticates"
        )
    return host, int(port_text)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def _name(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    return f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host


def allowed_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names a server bound to `host` answers to: its own address (and, on loopback,
    127.0.0.1, localhost and [::1]), plus `extra` (``--allowed-host``: ``name`` for any port,
    ``name:port`` for one). A wildcard bind has no name of its own: it needs `extra`."""
    names = {_name(h) for h in extra}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "[::1]", _name(host)}
    elif host not in _WILDCARDS:
        names.add(_name(host))
    if not names:
        raise ConfigurationError(
            f"serving on {host} answers any host name: add --allowed-host NAME (the name or "
            "address clients connect to, e.g. mcp.example.com), repeatable"
        )
    return frozenset(names)


def _split(hostport: str) -> tuple[str, str]:
    hostport = hostport.strip().lower()
    if hostport.startswith("["):
        end = hostport.find("]")
        return hostport[: end + 1], hostport[end + 2 :] if end >= 0 else ""
    host, _, port = hostport.partition(":")
    return host.rstrip("."), port


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HostOriginGuard:
    """ASGI middleware: 421 for a foreign ``Host``, 403 for a foreign ``Origin``, on every path
    but the public OAuth metadata (``/.well-known/…``)."""

    def __init__(self, app: Any, names: frozenset[str], origins: Iterable[str] = ()) -> None:
        self.app, self.names = app, names
        self.origins = frozenset(o.strip().lower().rstrip("/") for o in origins)

    def host_ok(self, value: str | None) -> bool:
        if not value:
            return False
        host, port = _split(value)
        if port and not port.isdigit():
            return False  # `localhost:80@evil` passes a prefix match; not this one
        return host in self.names or f"{host}:{port}" in self.names

    def origin_ok(self, value: str | None) -> bool:
        if value is None:
            return True  # not a browser, or a same-origin GET: no cross-site page behind it
        origin = value.strip().lower().rstrip("/")
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # `null` (a sandboxed page, a file) and anything else
        host, port = _split(parts.netloc)
        if port and not port.isdigit():
            return False
        return (
            host in self.names
            or f"{host}:{port}" in self.names
            or f"{parts.scheme}://{host}:*" in self.origins
        )

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/.well-known/"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.host_ok(headers.get("host")):
            await _refuse(send, 421, "Invalid Host header")
        elif not self.origin_ok(headers.get("origin")):
            await _refuse(send, 403, "Invalid Origin header")
        else:
            await self.app(scope, receive, send)


class HangUpWatch:
    """ASGI middleware: once a POST's body is read, watch for the client closing the request,
    and set the event at ``scope[HUNG_UP]``; the call it carried is cancelled on it (the MCP
    rule that a disconnect is not a cancellation would leave its XERJ request running, holding
    a slot, for nobody)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        hung_up = asyncio.Event()
        scope[HUNG_UP] = hung_up
        watcher: asyncio.Future[Any] | None = None

        def ended(future: asyncio.Future[Any]) -> None:
            if (
                not future.cancelled()
                and future.exception() is None
                and future.result().get("type") == "http.disconnect"
            ):
                hung_up.set()

        async def watched_receive() -> Any:
            nonlocal watcher
            if watcher is not None:  # after the body, the next message is the disconnect
                return await asyncio.shield(watcher)
            message = await receive()
            if message.get("type") == "http.disconnect":
                hung_up.set()
            elif not message.get("more_body", False):
                watcher = asyncio.ensure_future(receive())
                watcher.add_done_callback(ended)
            return message

        try:
            await self.app(scope, watched_receive, send)
        finally:
            if watcher is not None and not watcher.done():
                watcher.cancel()


async def cancelled_on(work: Any, event: asyncio.Event | None) -> Any:
    """Await `work` (a coroutine); if `event` is set first (the client hung up, the server is
    stopping), cancel it, wait for it to end, and return None."""
    if event is None:
        return await work
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return None if task.cancelled() else task.result()
