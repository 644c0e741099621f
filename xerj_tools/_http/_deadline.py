"""One deadline per call: every attempt, wait, connect, read and write of a call ends by it.

httpx2's timeouts bound each socket operation, so a node that dribbles a byte every half second
(headers or body) or a pool that never frees a connection can keep a call for ever. The owned
client's socket streams are wrapped so that each operation waits at most until the deadline of
the call running it (held in a context variable); the retry loop does not start an attempt or a
wait that would end past it; the body loop checks it between chunks.
"""

from __future__ import annotations

import contextvars
import ssl
import sys
import time
import typing
from collections.abc import Callable, Iterable
from typing import Any

import httpcore2
import httpx2

__all__ = ["Deadline", "Running", "guard", "http_library", "timeouts"]


class Deadline:
    """The moment a call must be over, on `clock`."""

    __slots__ = ("_at", "_clock", "seconds")

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self._clock = seconds, clock
        self._at = clock() + seconds

    def remaining(self) -> float:
        return self._at - self._clock()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "xerj_tools_deadline", default=None
)


class Running:
    """Socket operations of the owned client, inside this block, end by `deadline`."""

    __slots__ = ("_deadline", "_token")

    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._deadline)

    def __exit__(self, *exc_info: object) -> None:
        _CURRENT.reset(self._token)


def timeouts(base: httpx2.Timeout, deadline: Deadline) -> httpx2.Timeout:
    """`base` with no timeout longer than what is left of `deadline` (for any client: the
    result is of `base`'s own class, httpx2's or a plain httpx client's)."""
    left = max(deadline.remaining(), 0.001)
    if all(v is not None and v <= left for v in (base.connect, base.read, base.write, base.pool)):
        return base  # the usual case: the deadline is further off than every timeout

    def cap(value: float | None) -> float:
        return left if value is None else min(value, left)

    return type(base)(
        connect=cap(base.connect), read=cap(base.read), write=cap(base.write), pool=cap(base.pool)
    )


def http_library(client: object) -> Any:
    """The module (`httpx2`, or a caller's plain `httpx`) whose exceptions and `Timeout` the
    client uses: the two libraries share an API but not their classes. A plain httpx client
    was made by its caller, so `httpx` is imported already: xerj-tools never imports it."""
    for cls in type(client).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("httpx", "httpx2") and root in sys.modules:
            return sys.modules[root]
    return httpx2


def _bound(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _CURRENT.get()
    if deadline is None:
        return timeout
    left = deadline.remaining()
    if left <= 0:
        raise error("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bound(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bound(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:  # fmt: skip
        timeout = _bound(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


# The owned transport is made without `uds` and without connect `retries` (`_transport`), so
# httpcore2 never asks a backend of its for `connect_unix_socket` or `sleep`: the two backends
# wrap `connect_tcp` alone (and the streams it opens).


class _Backend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,
        local_address: str | None = None, socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:  # fmt: skip
        timeout = _bound(timeout, httpcore2.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))


class _AsyncStream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, _bound(timeout, httpcore2.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _bound(timeout, httpcore2.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:  # fmt: skip
        timeout = _bound(timeout, httpcore2.ConnectTimeout)
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,
        local_address: str | None = None, socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:  # fmt: skip
        timeout = _bound(timeout, httpcore2.ConnectTimeout)
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _AsyncStream(stream)


_Transport = typing.TypeVar("_Transport", httpx2.HTTPTransport, httpx2.AsyncHTTPTransport)


def guard(transport: _Transport) -> _Transport:
    """Wrap the network backend of an httpx2 transport that xerj-tools owns.

    httpx2 has no public hook for it: the backend sits on the httpcore2 pool (httpcore2
    ``ConnectionPool._network_backend``). Should a future httpcore2 move it, the transport is
    left as it is, and the deadline is still kept between attempts and between chunks.
    """
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore2.NetworkBackend):
        pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    elif isinstance(backend, httpcore2.AsyncNetworkBackend):
        pool._network_backend = _AsyncBackend(backend)  # type: ignore[union-attr]
    return transport
