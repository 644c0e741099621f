"""What the framework adapters share: one call at a time through a dispatcher, identical calls in
flight together sent once (as ``dispatch_many`` does for a whole turn)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._dispatch._core import ToolResult
from .._shapes import ToolCall

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._base import Begun
    from .._dispatch._policy import Policy
    from .._dispatch._sync import Dispatcher


__all__ = ["CallRunner"]


def _scoped(scope: Hashable, policy: Policy | None) -> Hashable:
    """The scope within which identical calls share an answer: one run, and one policy (an
    answer read under one tenant's policy is never another's)."""
    if policy is None:
        return scope
    try:
        hash(policy)
    except TypeError:  # a Policy given lists instead of tuples
        return (scope, id(policy))
    return (scope, policy)  # equal policies guard alike


@dataclass
class _Flight:
    """A request in flight and how many calls wait for it."""

    task: asyncio.Future[ToolResult]
    waiters: int = 0


class CallRunner:
    """Runs one call through the dispatcher; identical calls in flight share one request.

    With `per_turn` (a scope is one turn of the model, as a LangGraph step is), an identical call
    of the same turn that starts after the first one finished gets its answer too, as
    ``dispatch_many`` does for a whole turn, however the framework schedules the turn's calls;
    the answers of the last `KEPT_TURNS` turns are kept for that. Without it (a scope is a whole
    run, where a later turn may ask again on purpose), only calls in flight together share."""

    KEPT_TURNS = 64

    def __init__(self, dispatcher: AsyncDispatcher | Dispatcher, *, per_turn: bool = False) -> None:
        from .._dispatch._async import AsyncDispatcher

        self.dispatcher = dispatcher
        self.native = isinstance(dispatcher, AsyncDispatcher)  # only `run` serves an async one
        self._flights: dict[tuple[Hashable, str], _Flight] = {}
        self._lock = threading.Lock()
        self._threads: dict[tuple[Hashable, str], concurrent.futures.Future[ToolResult]] = {}
        self._per_turn = per_turn
        self._finished: OrderedDict[Hashable, dict[str, ToolResult]] = OrderedDict()

    def _keep(self, key: tuple[Hashable, str], result: ToolResult) -> None:
        """A finished answer, for an identical call of the same turn that starts later."""
        if not self._per_turn:
            return
        scope, call_key = key
        with self._lock:
            self._finished.setdefault(scope, {})[call_key] = result
            self._finished.move_to_end(scope)
            while len(self._finished) > self.KEPT_TURNS:
                self._finished.popitem(last=False)

    def _kept(self, key: tuple[Hashable, str]) -> ToolResult | None:
        with self._lock:
            return self._finished.get(key[0], {}).get(key[1])

    def _answer(self, call: ToolCall, result: ToolResult, started: float) -> ToolResult:
        """`result` for `call`: itself, or a copy under `call`'s id for an identical call."""
        if result.call.call_id == call.call_id:
            return result
        return self.dispatcher.copy_of(call, result, started)

    def run_sync(self, call: ToolCall, scope: Hashable, policy: Policy | None = None) -> ToolResult:
        """`run` for a sync `Dispatcher` on the caller's thread: identical calls of `scope` in
        flight together on other threads wait for the first one's request."""
        dispatcher: Any = self.dispatcher
        begun = dispatcher.begin(call, policy=policy)
        if begun.key is None:  # refused: answered at once, nothing is sent
            refused: ToolResult = dispatcher.complete(begun)
            return refused
        key = (_scoped(scope, policy), begun.key)
        if (kept := self._kept(key)) is not None:
            return self._answer(call, kept, begun.started)
        with self._lock:
            future = self._threads.get(key)
            first = future is None
            if future is None:
                future = self._threads[key] = concurrent.futures.Future()
        if first:
            try:
                result: ToolResult = dispatcher.complete(begun)
                self._keep(key, result)
                future.set_result(result)
            except BaseException as exc:
                future.set_exception(exc)
                raise
            finally:
                with self._lock:
                    del self._threads[key]
            return result
        return self._answer(call, future.result(), begun.started)

    def _send(self, begun: Begun) -> Awaitable[ToolResult]:
        dispatcher: Any = self.dispatcher
        if self.native:
            sent: Awaitable[ToolResult] = dispatcher.complete(begun)
            return sent
        return asyncio.to_thread(dispatcher.complete, begun)

    async def run(
        self, call: ToolCall, scope: Hashable, policy: Policy | None = None
    ) -> ToolResult:
        """Run `call`; identical calls with the same `scope` (one agent run) in flight together
        share one request, and the later ones get the first one's answer with a note. `policy`
        replaces the dispatcher's for this call; only calls under the same policy share."""
        dispatcher: Any = self.dispatcher
        begun = dispatcher.begin(call, policy=policy)
        if begun.key is None:  # refused: answered at once, nothing is sent (no thread hop)
            refused: ToolResult = (
                await dispatcher.complete(begun) if self.native else dispatcher.complete(begun)
            )
            return refused
        key = (_scoped(scope, policy), begun.key)
        if (kept := self._kept(key)) is not None:
            return self._answer(call, kept, begun.started)
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
        return self._answer(call, result, begun.started)

    def _land(self, key: tuple[Hashable, str], flight: _Flight) -> None:
        task = flight.task
        if task.done() and not task.cancelled() and task.exception() is None:
            self._keep(key, task.result())
        if self._flights.get(key) is flight:
            del self._flights[key]
