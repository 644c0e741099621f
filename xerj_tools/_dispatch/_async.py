"""The asyncio dispatcher: the twin of `Dispatcher` on a pooled `httpx2.AsyncClient`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import replace
from typing import Any

import httpx2

from .._exceptions import ClosedError, ToolCallError
from .._http._deadline import Deadline
from .._http._gate import AsyncGate
from .._http._models import Failure, HttpRequest, Outcome, Reply
from .._http._retry import retry_settings, should_retry
from .._http._transport import AsyncTransport
from .._shapes import ToolMessage
from ._after import Flow
from ._answers import PendingAnswers
from ._base import BaseDispatcher, Begun
from ._core import ToolResult
from ._policy import Policy
from ._trace import ToolCallScope

__all__ = ["AsyncDispatcher"]


OFF_LOOP_BYTES = 256 * 1024
"""A reply whose body is larger than this is read, and its call's tool message shaped, on a
worker thread (``asyncio.to_thread``: the loop's default executor), so that decoding a large
answer (JSON of many megabytes, a mapping of 150,000 fields) never holds up the event loop's
other tasks. Below it the work stays on the loop: a few milliseconds at most, which a thread
hop would cost more than it saves."""


def _step(flow: Flow, sent: tuple[Outcome, int] | None) -> tuple[HttpRequest | None, Any]:
    """`flow.send(sent)` as a value: ``(next request, None)``, or ``(None, its payload)`` when
    the flow ended (a `StopIteration` can neither cross a thread's future nor leave a
    coroutine)."""
    try:
        return flow.send(sent), None  # type: ignore[arg-type]  # None starts the flow
    except StopIteration as stop:
        return None, stop.value


class AsyncDispatcher(BaseDispatcher[httpx2.AsyncClient, Callable[[float], Awaitable[None]]]):
    """The asyncio twin of `Dispatcher`, on a pooled `httpx2.AsyncClient`.

    Its keywords are `Dispatcher`'s, each with the same meaning and default (``help(Dispatcher)``
    lists them by concern), but two:

    - ``client``: your own `httpx2.AsyncClient`, left open by `aclose()`. Default: None, an
      owned client built from the HTTP keywords.
    - ``sleep``: an async function that waits between attempts, called with seconds. Default:
      None: ``asyncio.sleep``.

    A turn's calls run as tasks, as many as it has: ``limits.max_workers`` is not read.
    """

    def _connect(
        self,
        client: httpx2.AsyncClient | None,
        sleep: Callable[[float], Awaitable[None]] | None,
        bound: int | None,
        pool: float | None,
    ) -> None:
        self._transport = AsyncTransport(self._endpoint, self._settings, client, self._core.clock)
        self._gate = None if bound is None else AsyncGate(bound, pool)
        self._sleep = asyncio.sleep if sleep is None else sleep

    async def run(self, call: Any, *, policy: Policy | None = None) -> ToolResult:
        if self._closed:
            raise ClosedError("this AsyncDispatcher was closed; make a new one")
        return await self.complete(self.begin(call, policy=policy))

    async def complete(self, begun: Begun) -> ToolResult:
        """Send a call that `begin` prepared (retries, deadline, budget) and return its result;
        a refused call gets its error answer and sends nothing."""
        tool_call, prepared, started = begun
        with ToolCallScope(tool_call):
            if isinstance(prepared, ToolCallError):
                return self._core.refusal(tool_call, prepared, started)
            try:
                payload, attempts, large = await self._drive(
                    self._core.flow(prepared, self._endpoint.label),
                    Deadline(self.timeout.call, self._core.clock),
                    self._response_cap(prepared),
                )
                if large:  # a payload read from a large reply: fitted off the loop too
                    return await asyncio.to_thread(
                        self._core.result, tool_call, payload, attempts, started, prepared
                    )
                return self._core.result(tool_call, payload, attempts, started, prepared)
            except Exception as exc:  # see `_crashed`
                return self._crashed(tool_call, exc, started)

    async def dispatch(self, call: Any, *, policy: Policy | None = None) -> ToolMessage:
        """Run one call; see `Dispatcher.dispatch` (`policy`: this call's own `Policy`)."""
        return (await self.run(call, policy=policy)).message

    def run_many(
        self,
        calls: Iterable[Any],
        *,
        transcript: list[Any] | None = None,
        assistant: Any = None,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> Coroutine[Any, Any, list[ToolResult]]:
        """Run a turn's calls as concurrent tasks; results in call order. Identical calls
        (same tool, same arguments after repair) are sent once; each call id gets its answer.

        Not a coroutine function: the calls are parsed and their ``cancelled`` answers put
        into `transcript` when it is called, so that a task cancelled before it ever ran
        still leaves a valid transcript. Await what it returns.
        """
        answers, started = self._open_turn(calls, transcript, assistant, policy, max_calls)
        return self._run_turn(answers, started, policy, max_calls)

    def dispatch_many(
        self,
        calls: Iterable[Any],
        *,
        transcript: list[Any] | None = None,
        assistant: Any = None,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> Coroutine[Any, Any, list[ToolMessage]]:
        """Run a turn's calls concurrently; see `Dispatcher.dispatch_many` and `run_many`."""
        answers, started = self._open_turn(calls, transcript, assistant, policy, max_calls)
        return self._messages(answers, started, policy, max_calls)

    async def _messages(
        self, answers: PendingAnswers, started: float, policy: Policy | None, max_calls: int | None
    ) -> list[ToolMessage]:
        return [r.message for r in await self._run_turn(answers, started, policy, max_calls)]

    async def _run_turn(
        self, answers: PendingAnswers, started: float, policy: Policy | None, max_calls: int | None
    ) -> list[ToolResult]:
        tasks: list[asyncio.Future[ToolResult]] = []
        begun: list[Begun] = []
        unique: list[int] = []
        copies: dict[int, int] = {}
        try:
            begun, unique, copies = self._plan(answers.calls, started, policy, max_calls)
            tasks = [asyncio.ensure_future(self.complete(begun[i])) for i in unique]
            done = list(await asyncio.gather(*tasks))
        except BaseException:
            # Cancelled: cancel every request still in flight and wait until they are gone,
            # answer what finished, then let the cancellation go on.
            for task in tasks:
                task.cancel()
            try:
                await asyncio.gather(*tasks, return_exceptions=True)
            finally:
                finished = {
                    i: t.result() for i, t in zip(unique, tasks, strict=False)
                    if t.done() and not t.cancelled() and t.exception() is None
                }  # fmt: skip
                self._salvage(answers, started, copies, finished)
            raise
        return self._answer_all(answers, self._assemble(begun, unique, copies, done))

    async def _send(self, request: HttpRequest, deadline: Deadline) -> tuple[Outcome, int]:
        attempts = 0

        async def attempt() -> Outcome:
            nonlocal attempts
            if self._closed:
                return Failure("cancelled", "the dispatcher was closed", self.url, sent=False)
            attempts += 1
            return await self._transport.send(request, deadline)

        if self._gate is not None:  # the attempt runs once it holds a slot
            attempt = functools.partial(self._gate.send, deadline, self.url, attempt)

        first: list[Outcome] = [await attempt()]
        if not should_retry(request, first[0], self.retry) or self.retry.max_attempts < 2:
            return first[0], attempts

        async def resume() -> Outcome:
            return first.pop() if first else await attempt()

        import tenacity  # on the first retry: offline validation never imports it

        settings = retry_settings(request, self.retry, deadline)
        outcome: Outcome = await tenacity.AsyncRetrying(sleep=self._sleep, **settings)(resume)
        return outcome, attempts

    async def _drive(
        self, flow: Flow, deadline: Deadline, cap: int | None
    ) -> tuple[dict[str, Any], int, bool]:
        """Send the flow's requests; return its payload, the call's attempts, and whether a
        reply was large (`OFF_LOOP_BYTES`): the flow reads each large one on a worker thread."""
        total, large = 0, False
        request, payload = _step(flow, None)
        while request is not None:
            if cap is not None:  # the call's own policy reads less of a response
                request = replace(request, max_response_bytes=cap)
            outcome, attempts = await self._send(request, deadline)
            if request.kind != "listing":  # a follow-up for the message, not the call
                total += attempts
            if isinstance(outcome, Reply) and len(outcome.body) > OFF_LOOP_BYTES:
                large = True
                request, payload = await asyncio.to_thread(_step, flow, (outcome, attempts))
            else:
                request, payload = _step(flow, (outcome, attempts))
        return payload, total, large

    async def aclose(self) -> None:
        """Close the owned HTTP client; any call after this raises `ClosedError`, and attempts
        of calls still running end as ``cancelled``. Closing twice is harmless."""
        self._closed = True
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncDispatcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
