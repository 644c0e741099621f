"""What the framework adapters share: one call at a time through a dispatcher, identical calls in
flight together sent once (as ``dispatch_many`` does for a whole turn)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._calls import ToolCall
from .._core import ToolResult

if TYPE_CHECKING:
    from .._async_dispatch import AsyncDispatcher
    from .._dispatch import Dispatcher
    from .._dispatch_base import Begun


__all__ = ["CallRunner"]


@dataclass
class _Flight:
    """A request in flight and how many calls wait for it."""

    task: asyncio.Future[ToolResult]
    waiters: int = 0


class CallRunner:
    """Runs one call through the dispatcher; identical calls in flight share one request."""

    def __init__(self, dispatcher: AsyncDispatcher | Dispatcher) -> None:
        from .._async_dispatch import AsyncDispatcher

        self._dispatcher = dispatcher
        self._native = isinstance(dispatcher, AsyncDispatcher)
        self._flights: dict[tuple[Hashable, str], _Flight] = {}
        self._lock = threading.Lock()
        self._threads: dict[tuple[Hashable, str], concurrent.futures.Future[ToolResult]] = {}

    @property
    def native(self) -> bool:
        """Whether the dispatcher is an `AsyncDispatcher` (only `run` serves it)."""
        return self._native

    def run_sync(self, call: ToolCall, scope: Hashable) -> ToolResult:
        """`run` for a sync `Dispatcher` on the caller's thread: identical calls of `scope` in
        flight together on other threads wait for the first one's request."""
        dispatcher: Any = self._dispatcher
        begun = dispatcher.begin(call)
        if begun.key is None:  # refused: answered at once, nothing is sent
            refused: ToolResult = dispatcher.complete(begun)
            return refused
        key = (scope, begun.key)
        with self._lock:
            future = self._threads.get(key)
            first = future is None
            if future is None:
                future = self._threads[key] = concurrent.futures.Future()
        if first:
            try:
                result: ToolResult = dispatcher.complete(begun)
                future.set_result(result)
            except BaseException as exc:
                future.set_exception(exc)
                raise
            finally:
                with self._lock:
                    del self._threads[key]
            return result
        result = future.result()
        if result.call.call_id == call.call_id:
            return result
        copy: ToolResult = dispatcher.copy_of(call, result, begun.started)
        return copy

    def _send(self, begun: Begun) -> Awaitable[ToolResult]:
        dispatcher: Any = self._dispatcher
        if self._native:
            sent: Awaitable[ToolResult] = dispatcher.complete(begun)
            return sent
        return asyncio.to_thread(dispatcher.complete, begun)

    async def run(self, call: ToolCall, scope: Hashable) -> ToolResult:
        """Run `call`; identical calls with the same `scope` (one agent run) in flight together
        share one request, and the later ones get the first one's answer with a note."""
        dispatcher: Any = self._dispatcher
        begun = dispatcher.begin(call)
        if begun.key is None:  # refused: answered at once, nothing is sent (no thread hop)
            refused: ToolResult = (
                await dispatcher.complete(begun) if self._native else dispatcher.complete(begun)
            )
            return refused
        key = (scope, begun.key)
        flight = self._flights.get(key)
        if flight is None:
            new = flight = _Flight(asyncio.ensure_future(self._send(begun)))
            self._flights[key] = new
            new.task.add_done_callback(lambda _: self._land(key, new))
        flight.waiters += 1
        try:
            result = await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                self._land(key, flight)  # nobody waits for it any more
                flight.task.cancel()
            raise
        if result.call.call_id == call.call_id:
            return result
        copy: ToolResult = dispatcher.copy_of(call, result, begun.started)
        return copy

    def _land(self, key: tuple[Hashable, str], flight: _Flight) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
