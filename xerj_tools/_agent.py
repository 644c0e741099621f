"""The agent loop: ask the model, run its tool calls through the dispatcher, repeat; sync and async.

Retries live in one place per layer: model requests are retried by the `openai` client alone
(its ``max_retries``, 2 by default), XERJ requests by the dispatcher's `RetryPolicy` alone. The
loop adds no retries of its own, so attempts never multiply.
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from . import _trace_turns
from ._answers import PendingAnswers
from ._core import DispatchCore, ToolResult
from ._exceptions import ConfigurationError, MaxTurnsExceeded
from ._shapes import Assembler, Step, ToolCall, loop_shape
from ._turns import (
    AgentEvent,
    AgentResult,
    RunFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    ToolStats,
    TurnFinished,
    call_key,
    deny_reason,
    final_outcome,
    incomplete_reason,
    record,
)
from ._usage import TokenUsage

if TYPE_CHECKING:
    from ._async_dispatch import AsyncDispatcher
    from ._dispatch import Dispatcher

__all__ = ["arun_agent", "astream_agent", "run_agent", "stream_agent"]

_CUT_OFF = ("length", "content_filter")  # the output ended before its calls were whole
ToolCallHook = Callable[[ToolCall], Any]
ToolResultHook = Callable[[ToolResult], Any]


class _Run:
    """The state of one run, shared by every driver: transcript, figures, loop guard."""

    def __init__(
        self,
        dispatcher: Any,
        api: str,
        model: str,
        messages: Any,
        max_turns: int,
        max_repeats: int,
        on_max_turns: str,
        create_kwargs: dict[str, Any],
    ) -> None:
        self.shape = loop_shape(api)  # the wire shape: definitions, requests, replies
        if max_turns < 1 or max_repeats < 1:
            raise ConfigurationError("max_turns and max_repeats must be at least 1")
        if on_max_turns not in ("return", "raise"):
            raise ConfigurationError("on_max_turns must be 'return' or 'raise'")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        # A list is extended in place, so that the caller holds a valid transcript even when
        # the run is interrupted.
        self.transcript: list[Any] = messages if isinstance(messages, list) else list(messages)
        self.dispatcher, self.model = dispatcher, model
        self.core: DispatchCore = dispatcher._core
        self.max_turns, self.max_repeats, self.on_max_turns = max_turns, max_repeats, on_max_turns
        self.kwargs = create_kwargs
        self.stats: dict[str, ToolStats] = {}
        self.usage = TokenUsage()
        self.seen: Counter[str] = Counter()
        self.last_text = ""
        self.answers = PendingAnswers(None, [])  # the current turn's
        self.ready: dict[str, ToolResult] = {}  # its calls answered without XERJ
        self.tools = self.shape.definitions(dispatcher.registry)
        self.trace = _trace_turns.NO_TURN

    def begin(self, turn: int) -> None:
        """A turn starts: its span, when something traces."""
        self.trace = _trace_turns.turn(turn, self.model, self.shape.name)

    def request(self, stream: bool) -> dict[str, Any]:
        request = {
            "model": self.model,
            str(self.shape.request_key): list(self.transcript),
            "tools": self.tools,
            **self.kwargs,
        }
        if stream:
            request["stream"] = True
        return request

    def create(self, client: Any) -> Any:
        return self.trace.wrap(self.shape.create(client))

    def step(self, response: Any) -> Step:
        return self.shape.step(response)

    def assembler(self) -> Assembler:
        return self.shape.assembler()

    def screen(self, call: ToolCall) -> ToolResult | None:
        """The loop guard: a call repeated past `max_repeats` is answered without XERJ."""
        key = call_key(call)
        self.seen[key] += 1
        if self.seen[key] > self.max_repeats:
            times = self.seen[key] - 1
            reason = (
                f"this exact call was already made {times} times in this run; its result is above"
            )
            return self.answer(call, "repeated_call", reason)
        return None

    def answer(self, call: ToolCall, code: str, reason: str) -> ToolResult:
        with self.trace.use():  # its span, if any, belongs to the turn
            return self.core.answer(call, code, reason)

    def deny(self, call: ToolCall, verdict: Any) -> ToolResult | None:
        reason = deny_reason(verdict)
        return None if reason is None else self.answer(call, "denied", reason)

    def cut_off(self, step: Step) -> list[ToolResult]:
        reason = incomplete_reason(step.finish_reason)
        return [self.answer(c, "incomplete_call", reason) for c in step.calls]

    def settle(self, position: int, answer: ToolResult | None, todo: list[ToolCall]) -> None:
        """A call the loop guard or `on_tool_call` stopped is answered now; others go to `todo`."""
        call = self.answers.calls[position]
        if answer is None:
            todo.append(call)
        else:
            self.ready[call.call_id] = answer
            self.answers.put(position, answer.message)

    def interrupted(self, sink: list[Any]) -> None:
        """After an interruption: the answers the dispatcher made, ``cancelled`` for the other
        calls (their spans under the turn), then the exception goes on."""
        self.answers.by_id(sink)
        core = self.core
        with self.trace.use():
            for position in self.answers.unanswered():
                call = self.answers.calls[position]
                self.answers.put(position, core.cancelled(call, core.clock()).message)
        self.trace.end(error=sys.exc_info()[1])

    def deliver(self, results: Sequence[ToolResult]) -> None:
        """Put the turn's answers into the transcript and count them in the figures."""
        for position, result in enumerate(results):
            self.answers.put(position, result.message)
            record(self.stats, result)

    def results(self, step: Step, done: Sequence[ToolResult]) -> list[ToolResult]:
        by_id = {r.call.call_id: r for r in done}
        results = [self.ready.get(c.call_id) or by_id[c.call_id] for c in step.calls]
        self.deliver(results)
        return results

    def take(self, step: Step) -> list[AgentEvent]:
        """The model answered: its turn joins the transcript together with a ``cancelled``
        answer to each call, replaced as real answers come (see `_answers`), so that the
        transcript is valid wherever the run is interrupted. Calls cut off mid-way are
        answered at once."""
        self.last_text = step.text or self.last_text
        self.usage += step.usage or TokenUsage()
        self.answers = PendingAnswers(self.transcript, step.calls, before=step.items)
        self.ready = {}
        events: list[AgentEvent] = [ToolCallStarted(call) for call in step.calls]
        if step.calls and step.finish_reason in _CUT_OFF:
            results = self.cut_off(step)
            self.deliver(results)
            events += [ToolResultEvent(r) for r in results]
        return events

    def close(self, turn: int, step: Step) -> list[AgentEvent]:
        """The turn is over; a turn without usable calls also ends the run."""
        self.trace.end(step.finish_reason, len(step.calls))
        events: list[AgentEvent] = [TurnFinished(turn, step.finish_reason)]
        if not step.calls or step.finish_reason in _CUT_OFF:
            events.append(self.end(final_outcome(step.finish_reason), turn))
        return events

    def end(self, outcome: Any, turns: int) -> RunFinished:
        result = AgentResult(
            outcome, self.last_text, self.transcript, turns, self.stats, self.usage
        )
        if outcome == "max_turns" and self.on_max_turns == "raise":
            raise MaxTurnsExceeded(result)
        return RunFinished(result)


def _sync_hook(hook: Callable[..., Any] | None, value: Any) -> Any:
    if hook is None:
        return None
    out = hook(value)
    if inspect.isawaitable(out):
        if inspect.iscoroutine(out):
            out.close()
        raise ConfigurationError("an async hook needs the async loop (arun_agent / astream_agent)")
    return out


async def _async_hook(hook: Callable[..., Any] | None, value: Any) -> Any:
    if hook is None:
        return None
    out = hook(value)
    return await out if inspect.isawaitable(out) else out


def stream_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Dispatcher,
    api: Literal["chat", "responses"] = "chat",
    max_turns: int = 10,
    max_repeats: int = 2,
    on_tool_call: ToolCallHook | None = None,
    on_tool_result: ToolResultHook | None = None,
    on_max_turns: Literal["return", "raise"] = "return",
    stream: bool = True,
    **create_kwargs: Any,
) -> Iterator[AgentEvent]:
    """Run the loop and yield its events: `TextDelta`, `ToolCallStarted`, `ToolResultEvent`,
    `TurnFinished`, and last `RunFinished` with the `AgentResult`.

    With ``stream=True`` (the default here) the model's answer is streamed and its tool-call
    deltas assembled; ``run_agent`` is this loop with ``stream=False``, drained.
    """
    run = _Run(
        dispatcher, api, model, messages, max_turns, max_repeats, on_max_turns, create_kwargs
    )
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if stream:
            assembler = run.assembler()
            for chunk in run.create(client)(**run.request(True)):
                if (delta := assembler.feed(chunk)) is not None:
                    yield TextDelta(delta)
            step = assembler.step()
        else:
            step = run.step(run.create(client)(**run.request(False)))
            if step.text:
                yield TextDelta(step.text)
        yield from run.take(step)
        if step.calls and step.finish_reason not in _CUT_OFF:
            sink: list[Any] = []
            try:
                todo: list[ToolCall] = []
                for position, call in enumerate(step.calls):
                    answer = run.screen(call) or run.deny(call, _sync_hook(on_tool_call, call))
                    run.settle(position, answer, todo)
                with run.trace.use():
                    done = dispatcher.run_many(todo, transcript=sink)
            except BaseException:
                run.interrupted(sink)
                raise
            results = run.results(step, done)
            for result in results:
                _sync_hook(on_tool_result, result)
                yield ToolResultEvent(result)
        events = run.close(turn, step)
        yield from events
        if isinstance(events[-1], RunFinished):
            return
    yield run.end("max_turns", run.max_turns)


def run_agent(
    client: Any, *, model: str, messages: Any, dispatcher: Dispatcher, **options: Any
) -> AgentResult:
    """Run a tool-calling conversation to its end with `openai.OpenAI` (or any compatible
    server), and return the `AgentResult`.

    Each turn passes the registry's definitions as ``tools=``, runs the turn's calls
    concurrently through ``dispatcher.run_many``, and appends a clean assistant message and
    the tool messages in call order to `messages` (extended in place when it is a list). It
    stops at a final answer (``outcome="completed"``), after `max_turns` (``"max_turns"``, or
    `MaxTurnsExceeded` with ``on_max_turns="raise"``), or when the model's output is cut off
    (``"length"``; calls cut mid-way are answered ``incomplete_call``).

    Options: ``api="chat" | "responses"``, ``max_turns=10``, ``max_repeats=2`` (the loop guard),
    ``on_tool_call`` (return False or a reason to deny a call), ``on_tool_result``; anything
    else goes to ``create()`` (``temperature=``, ``tool_choice=``…).
    """
    events = stream_agent(
        client,
        model=model,
        messages=messages,
        dispatcher=dispatcher,
        **{"stream": False, **options},
    )
    for event in events:
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("the loop ended without a result")  # pragma: no cover


async def astream_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: AsyncDispatcher,
    api: Literal["chat", "responses"] = "chat",
    max_turns: int = 10,
    max_repeats: int = 2,
    on_tool_call: ToolCallHook | None = None,
    on_tool_result: ToolResultHook | None = None,
    on_max_turns: Literal["return", "raise"] = "return",
    stream: bool = True,
    **create_kwargs: Any,
) -> AsyncIterator[AgentEvent]:
    """The asyncio twin of `stream_agent`, for `openai.AsyncOpenAI`; hooks may be async."""
    run = _Run(
        dispatcher, api, model, messages, max_turns, max_repeats, on_max_turns, create_kwargs
    )
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if stream:
            assembler = run.assembler()
            async for chunk in await run.create(client)(**run.request(True)):
                if (delta := assembler.feed(chunk)) is not None:
                    yield TextDelta(delta)
            step = assembler.step()
        else:
            step = run.step(await run.create(client)(**run.request(False)))
            if step.text:
                yield TextDelta(step.text)
        for event in run.take(step):
            yield event
        if step.calls and step.finish_reason not in _CUT_OFF:
            sink: list[Any] = []
            try:
                todo: list[ToolCall] = []
                for position, call in enumerate(step.calls):
                    answer = run.screen(call) or run.deny(
                        call, await _async_hook(on_tool_call, call)
                    )
                    run.settle(position, answer, todo)
                with run.trace.use():
                    done = await dispatcher.run_many(todo, transcript=sink)
            except BaseException:
                run.interrupted(sink)
                raise
            results = run.results(step, done)
            for result in results:
                await _async_hook(on_tool_result, result)
                yield ToolResultEvent(result)
        events = run.close(turn, step)
        for event in events:
            yield event
        if isinstance(events[-1], RunFinished):
            return
    yield run.end("max_turns", run.max_turns)


async def arun_agent(
    client: Any, *, model: str, messages: Any, dispatcher: AsyncDispatcher, **options: Any
) -> AgentResult:
    """The asyncio twin of `run_agent`, for `openai.AsyncOpenAI`."""
    async for event in astream_agent(
        client,
        model=model,
        messages=messages,
        dispatcher=dispatcher,
        **{"stream": False, **options},
    ):
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("the loop ended without a result")  # pragma: no cover
