"""The connections of `xerj-tools mcp --http`: a deadline for each request's head and body, and a
bound on how many are open, so that clients that send slowly (a slowloris) cannot hold every
file descriptor of the server before any of them is authenticated.

uvicorn (0.55, the h11 protocol this server runs) times out only an idle keep-alive connection
(`timeout_keep_alive`, counted from the end of a response) and answers 503 past
`limit_concurrency`, which counts the open connections: a connection that never finishes its
request line and headers is never closed, and a thousand of them make every new client wait
for a descriptor, or make each one's request a 503. Here, on top of uvicorn's `H11Protocol`:

- **the head** (request line and headers) must arrive within `head_seconds` of the moment the
  connection starts waiting for it (opened, or its previous response sent); past it the
  connection is answered 408 if some of the head came, and closed. This is also what closes an
  idle keep-alive connection (uvicorn's own keep-alive timer is cancelled; see
  `on_response_complete`);
- **the body** must arrive within `body_seconds`, extended by one second for each `body_rate`
  bytes received (so a large body sent at a sane rate is never cut, a dribble is); past it the
  connection is closed and the request's handler sees the client leave;
- **at most `max_connections` are open**. One more evicts the connection that has waited longest
  for a request head (idle keep-alive connections included); when every open connection is
  running a request, the new one is answered 503 and closed. The default is bounded by the
  process's descriptor limit, leaving a quarter of it for the connections to XERJ and the rest;
  connections are accepted at most `backlog` at a time (asyncio makes the protocols of a batch
  after accepting all of it), and by default that batch fits in what the limit leaves past the
  bound, so that a burst never runs the process out of descriptors before the evictions free
  theirs.

Nothing here looks at what a request holds: Host, Origin and authentication come after.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_MAX_CONNECTIONS", "ConnectionLimits", "protocol_for"]

logger = logging.getLogger("xerj_tools")

DEFAULT_MAX_CONNECTIONS = 1000
_LOG_EVERY = 60.0  # seconds between two summaries of the connections closed for slowness

_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 33\r\n\r\nthe request head came too slowly\n"
)
_503 = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\nretry-after: 1\r\ncontent-length: 43\r\n\r\n"
    b"every connection of this server is serving\n"
)


def descriptor_bound(requested: int | None = None) -> int:
    """`requested` (default `DEFAULT_MAX_CONNECTIONS`), at most three quarters of the soft
    limit on open files (RLIMIT_NOFILE)."""
    wanted = requested if requested is not None else DEFAULT_MAX_CONNECTIONS
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return wanted
    return max(1, min(wanted, soft - max(64, soft // 4)))


@dataclass(frozen=True)
class ConnectionLimits:
    """The deadlines (seconds) and the bound; see the module's text."""

    head_seconds: float = 10.0
    body_seconds: float = 10.0
    body_rate: int = 16 * 1024
    max_connections: int = field(default_factory=descriptor_bound)
    backlog: int | None = None
    """The listening queue, and how many connections are accepted in one go: a burst takes at
    most this many descriptors before the oldest waiting connections are closed. None: what
    the open-file limit leaves past `max_connections` and 64 more, between 16 and 2048
    (uvicorn's own default)."""

    def accept_batch(self) -> int:
        if self.backlog is not None:
            return self.backlog
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return 2048
        return max(16, min(2048, soft - self.max_connections - 64))

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")


@dataclass
class _Open:
    """The open connections of one server; `waiting` those waiting for a head, oldest first."""

    limits: ConnectionLimits
    every: set[Any] = field(default_factory=set)
    waiting: dict[Any, None] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=dict)
    logged_at: float = -_LOG_EVERY

    def note(self, why: str, loop: asyncio.AbstractEventLoop) -> None:
        self.closed[why] = self.closed.get(why, 0) + 1
        if loop.time() - self.logged_at >= _LOG_EVERY:
            self.logged_at = loop.time()
            counts = ", ".join(f"{n} {what}" for what, n in sorted(self.closed.items()))
            logger.warning(
                "connections closed for slowness or at the bound of %d open: %s",
                self.limits.max_connections,
                counts,
            )
            self.closed.clear()


_HEAD, _BODY, _APP, _REFUSED = "head", "body", "app", "refused"


def protocol_for(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with `limits`, for ``uvicorn.Config(http=...)``; each call makes
    the class of one server (its connections are counted together)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    state = _Open(limits)

    class Bounded(H11Protocol):
        _phase: str | None = None
        _timer: asyncio.TimerHandle | None = None
        _deadline = 0.0
        _head_bytes = 0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            state.every.add(self)
            if len(state.every) > limits.max_connections:
                oldest = next(iter(state.waiting), None)
                if oldest is None:  # every other connection is running a request
                    state.note("refused (503) with every connection busy", self.loop)
                    self._drop()
                    self._phase = _REFUSED
                    # Closed once the client has read the answer and closed its side (or after
                    # a second): closing with its request unread would reset the connection,
                    # and the client might never see the 503.
                    transport.write(_503)
                    transport.write_eof()
                    self._timer = self.loop.call_later(1.0, transport.close)
                    return
                state.note("evicted while waiting for a request", self.loop)
                oldest._drop()
                oldest.transport.close()
            self._waiting()

        def _waiting(self) -> None:
            self._phase, self._head_bytes = _HEAD, 0
            state.waiting.pop(self, None)
            state.waiting[self] = None
            self._arm(limits.head_seconds)

        def _arm(self, seconds: float) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._deadline = self.loop.time() + seconds
            self._timer = self.loop.call_at(self._deadline, self._expired)

        def _expired(self) -> None:
            self._timer = None
            if self._phase == _BODY and (
                self.loop.time() < self._deadline or self.flow.read_paused
            ):  # more body came meanwhile, or the server is the one not reading
                self._timer = self.loop.call_at(
                    max(self._deadline, self.loop.time() + 1), self._expired
                )
                return
            if self._phase not in (_HEAD, _BODY) or self.transport.is_closing():
                return
            if self._phase == _HEAD and self._head_bytes:
                state.note("slow request heads", self.loop)
                self.transport.write(_408)
            elif self._phase == _BODY:
                state.note("slow request bodies", self.loop)
            self._drop()
            self.transport.close()

        def _drop(self) -> None:
            self._phase = None
            state.every.discard(self)
            state.waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _follow(self) -> None:
            """Move to the phase the request is in, from h11's view of the client."""
            if self._phase in (None, _REFUSED):
                return
            their = self.conn.their_state
            if their is h11.IDLE:
                if self._phase != _HEAD:
                    self._waiting()
            elif their is h11.SEND_BODY:
                if self._phase != _BODY:
                    state.waiting.pop(self, None)
                    self._phase = _BODY
                    self._arm(limits.body_seconds)
            elif self._phase != _APP:
                state.waiting.pop(self, None)
                self._phase = _APP
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None

        def data_received(self, data: bytes) -> None:
            if self._phase == _REFUSED:
                return  # the request of a connection answered 503: read and dropped
            if self._phase == _HEAD:
                self._head_bytes += len(data)
            elif self._phase == _BODY:
                self._deadline += len(data) / limits.body_rate
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # An idle connection is closed by the head deadline alone, not by uvicorn's keep-alive
            # timer (`timeout_keep_alive`, 5 s from the response's end: uvicorn 0.55,
            # protocols/http/h11_impl.py lines 322 and 355-363). httpx reuses an idle connection
            # for 5 s too (`keepalive_expiry`: httpx 0.29, _config.py line 178; httpx2 2.17, the
            # MCP SDK's client, _config.py line 172), counted from when it has read the response
            # (httpcore 1.0, _async/http11.py line 248), so past the server's 5 s: a request sent
            # near its end meets a connection the server is closing, unread, and is lost to a
            # reset. The head deadline (10 s by default) outlasts such clients.
            self._unset_keepalive_if_required()
            self._follow()

        def eof_received(self) -> None:
            if self._phase == _REFUSED:
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._drop()
            super().connection_lost(exc)

    return Bounded
