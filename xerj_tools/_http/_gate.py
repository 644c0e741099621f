"""The in-flight bound: at most N requests of a dispatcher on the wire at once, in FIFO order.

Why: whenever a request joins or leaves httpcore's connection pool, the pool walks every queued
request and, for each, every connection (httpcore 1.0.9 ``_async/connection_pool.py:270-330``,
the sync twin alike): with many more requests than connections that walk is most of the work, and
raw httpx fell from 523 to 222 calls/s going from 10 to 500 calls in flight on a pool of 10.
Requests that wait here, in a FIFO queue, instead of in the pool, keep it short.

A slot is taken per attempt, not per call: a call sitting out a retry's backoff holds none. The
wait counts against the call's deadline and the client's pool timeout; a call that gets no slot
in time ends as a `Failure` that says nothing was sent (``deadline``, or ``timeout`` like
httpx2's own pool timeout).
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

import httpx2

from ._deadline import Deadline
from ._models import Failure, Outcome

if TYPE_CHECKING:  # asyncio is imported where it runs: `Dispatcher` alone does not pay for it
    import asyncio

__all__ = ["AsyncGate", "Gate", "MaxInFlight", "pool_limit", "resolve_bound"]

MaxInFlight = int | None | Literal["pool"]


def pool_limit(client: httpx2.Client | httpx2.AsyncClient) -> int | None:
    """The connection limit of a client's pool, or None when it cannot be read (a custom
    transport such as `httpx2.MockTransport`, mounts, or an httpx2 whose layout differs).

    httpx2 keeps its `Limits` on the httpcore2 pool only (``ConnectionPool._max_connections``);
    an unlimited pool reads as ``sys.maxsize`` there and is None here."""
    if getattr(client, "_mounts", None):
        return None
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    limit = getattr(pool, "_max_connections", None)
    if not isinstance(limit, int) or limit <= 0 or limit >= sys.maxsize:
        return None
    return limit


def resolve_bound(
    max_in_flight: MaxInFlight, client: httpx2.Client | httpx2.AsyncClient | None, pool_size: int
) -> int | None:
    """``"pool"``: the owned client's `pool_size`, or the connection limit of the client passed
    in where it can be read (else no bound: its limits are the caller's business)."""
    if max_in_flight == "pool":  # a value checked when its `Limits` was made
        return pool_size if client is None else pool_limit(client)
    return max_in_flight


def _refused(deadline: Deadline, node: str, by_deadline: bool) -> Failure:
    """A call whose wait for a slot ran out: by its deadline, or by the pool timeout."""
    if not by_deadline:
        return Failure("timeout", "no free connection in the pool in time", node, sent=False)
    return Failure(
        "deadline",
        f"the call's deadline of {deadline.seconds:g} s passed while it waited for one of the "
        "dispatcher's in-flight slots; nothing was sent",
        node, sent=False, deadline=deadline.seconds,
    )  # fmt: skip


_W = TypeVar("_W")


class _Slots(Generic[_W]):
    """`limit` slots, the free ones counted, and the queue of calls waiting for one."""

    def __init__(self, limit: int, pool_timeout: float | None) -> None:
        self.limit, self._pool_timeout = limit, pool_timeout
        self._free = limit
        self._waiters: deque[_W] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def in_flight(self) -> int:
        return self.limit - self._free


class Gate(_Slots[threading.Event]):
    """The bound for `Dispatcher`, shared by every thread that sends through it. A waiter's
    event is set, under the lock, when a slot is handed to it."""

    def __init__(self, limit: int, pool_timeout: float | None) -> None:
        super().__init__(limit, pool_timeout)
        self._lock = threading.Lock()

    def send(self, deadline: Deadline, node: str, send: Callable[[], Outcome]) -> Outcome:
        """`send()` once a slot is free, the slot given back however `send` ends."""
        refused = self._acquire(deadline, node)
        if refused is not None:
            return refused
        try:
            return send()
        finally:
            self._release()

    def _acquire(self, deadline: Deadline, node: str) -> Failure | None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return None
            waiter = threading.Event()
            self._waiters.append(waiter)
        limit, by_deadline = _wait_limit(deadline, self._pool_timeout)
        try:
            waiter.wait(limit)
        except BaseException:  # KeyboardInterrupt while waiting: a slot handed over goes on
            if not self._abandon(waiter):
                self._release()
            raise
        return _refused(deadline, node, by_deadline) if self._abandon(waiter) else None

    def _abandon(self, waiter: threading.Event) -> bool:
        """Leave the queue; True if no slot had been handed to `waiter` (else it holds one)."""
        with self._lock:
            if waiter.is_set():
                return False
            self._waiters.remove(waiter)
            return True

    def _release(self) -> None:
        with self._lock:
            if self._waiters:  # hand the slot straight to the longest waiter: no barging
                self._waiters.popleft().set()
            else:
                self._free += 1


class AsyncGate(_Slots["asyncio.Future[bool]"]):
    """The bound for `AsyncDispatcher` (one event loop at a time). A waiter's future is True
    when a slot is handed to it, False when its wait ran out."""

    async def send(
        self, deadline: Deadline, node: str, send: Callable[[], Awaitable[Outcome]]
    ) -> Outcome:
        if self._free and not self._waiters:
            self._free -= 1
        else:
            refused = await self._wait(deadline, node)
            if refused is not None:
                return refused
        try:
            return await send()
        finally:
            self._release()

    async def _wait(self, deadline: Deadline, node: str) -> Failure | None:
        import asyncio

        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(waiter)
        limit, by_deadline = _wait_limit(deadline, self._pool_timeout)
        timer = loop.call_later(limit, self._expire, waiter)
        try:
            granted = await waiter
        except asyncio.CancelledError:
            # A slot handed over just before the cancellation arrived goes on to the next waiter.
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self._release()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise
        finally:
            timer.cancel()
        return None if granted else _refused(deadline, node, by_deadline)

    def _expire(self, waiter: asyncio.Future[bool]) -> None:
        if not waiter.done():
            self._waiters.remove(waiter)
            waiter.set_result(False)

    def _release(self) -> None:
        while self._waiters:  # hand the slot straight to the longest waiter: no barging
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self._free += 1


def _wait_limit(deadline: Deadline, pool_timeout: float | None) -> tuple[float, bool]:
    """How long a call may wait for a slot, and whether its deadline (not the pool timeout) is
    what ends that wait."""
    left = max(deadline.remaining(), 0.0)
    if pool_timeout is None or left <= pool_timeout:
        return left, True
    return pool_timeout, False
