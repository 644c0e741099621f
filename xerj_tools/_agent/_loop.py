"""The agent loop: ask the model, run its tool calls through the dispatcher, repeat; sync and async.

Retries live in one place per layer: model requests are retried by the `openai` client alone
(its ``max_retries``, 2 by default), XERJ requests by the dispatcher's `RetryPolicy` alone. The
loop adds no retries of its own, so attempts never multiply.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigurationError
from .._shapes import ToolCall
from ._agent_options import AgentOptions
from ._run import AgentRun
from ._streams import aclose_stream, close_stream
from ._turns import AgentEvent, AgentResult, RunFinished, TextDelta, ToolResultEvent

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._sync import Dispatcher

__all__ = ["arun_agent", "astream_agent", "run_agent", "stream_agent"]


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


_DEFAULT = AgentOptions()


def _start(
    dispatcher: Any, model: str, messages: Any, options: AgentOptions | None, stream: bool
) -> AgentRun:
    """The run; `stream` is the entry point's default, for options that do not say."""
    if options is None:
        options = _DEFAULT
    elif not isinstance(options, AgentOptions):
        raise TypeError(f"options= takes an AgentOptions, not {type(options).__name__}")
    return AgentRun(dispatcher, model, messages, options, stream)


def _turns(client: Any, run: AgentRun) -> Iterator[AgentEvent]:
    """The sync loop: one model request and one turn of tool calls after another."""
    from .._dispatch._sync import Dispatcher

    dispatcher = run.dispatcher
    assert isinstance(dispatcher, Dispatcher)  # the sync entry points take only this
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if run.stream:
            assembler = run.shape.assembler()
            chunks = run.ask(client)
            try:
                for chunk in chunks:
                    if (delta := assembler.feed(chunk)) is not None:
                        yield TextDelta(delta)
            finally:  # closed or interrupted mid-answer: the response is let go of now
                close_stream(chunks)
            step = assembler.step()
        else:
            step = run.shape.step(run.ask(client))
            if step.text:
                yield TextDelta(step.text)
        yield from run.take(step)
        if step.calls:
            sink: list[Any] = []
            try:
                todo: list[ToolCall] = []
                for position, call in enumerate(step.calls):
                    answer = run.cut(step, position, call) or run.over_bound(position, call)
                    answer = answer or run.screen(call)
                    answer = answer or run.deny(call, _sync_hook(run.on_tool_call, call))
                    run.settle(position, answer, todo)
                with run.trace.use():
                    done = dispatcher.run_many(todo, transcript=sink)
            except BaseException:
                run.interrupted(sink)
                raise
            for result in run.results(step, done):
                _sync_hook(run.on_tool_result, result)
                yield ToolResultEvent(result)
        events = run.close(turn, step)
        yield from events
        if isinstance(events[-1], RunFinished):
            return
    yield run.end("max_turns", run.max_turns)


async def _aturns(client: Any, run: AgentRun) -> AsyncGenerator[AgentEvent, None]:
    """The async loop, the twin of `_turns`; hooks may be async."""
    from .._dispatch._async import AsyncDispatcher

    dispatcher = run.dispatcher
    assert isinstance(dispatcher, AsyncDispatcher)  # the async entry points take only this
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if run.stream:
            assembler = run.shape.assembler()
            chunks = await run.ask(client)
            try:
                async for chunk in chunks:
                    if (delta := assembler.feed(chunk)) is not None:
                        yield TextDelta(delta)
            finally:  # closed or cancelled mid-answer: the response is let go of now
                await aclose_stream(chunks)
            step = assembler.step()
        else:
            step = run.shape.step(await run.ask(client))
            if step.text:
                yield TextDelta(step.text)
        for event in run.take(step):
            yield event
        if step.calls:
            sink: list[Any] = []
            try:
                todo: list[ToolCall] = []
                for position, call in enumerate(step.calls):
                    answer = run.cut(step, position, call) or run.over_bound(position, call)
                    answer = answer or run.screen(call)
                    answer = answer or run.deny(call, await _async_hook(run.on_tool_call, call))
                    run.settle(position, answer, todo)
                with run.trace.use():
                    done = await dispatcher.run_many(todo, transcript=sink)
            except BaseException:
                run.interrupted(sink)
                raise
            for result in run.results(step, done):
                await _async_hook(run.on_tool_result, result)
                yield ToolResultEvent(result)
        events = run.close(turn, step)
        for event in events:
            yield event
        if isinstance(events[-1], RunFinished):
            return
    yield run.end("max_turns", run.max_turns)


def stream_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Dispatcher,
    options: AgentOptions | None = None,
) -> Iterator[AgentEvent]:
    """Run the loop and yield its events: `TextDelta`, `ToolCallStarted`, `ToolResultEvent`,
    `TurnFinished`, and last `RunFinished` with the `AgentResult`.

    With ``stream=True`` (the default here) the model's answer is streamed and its tool-call
    deltas assembled; ``run_agent`` is this loop with ``stream=False``, drained. Its parameters
    are those of `run_agent`.
    """
    yield from _turns(client, _start(dispatcher, model, messages, options, True))


def run_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Dispatcher,
    options: AgentOptions | None = None,
) -> AgentResult:
    """Run a tool-calling conversation to its end with `openai.OpenAI` (or any compatible
    server), and return the `AgentResult`.

    Each turn passes the registry's definitions as ``tools=``, runs the turn's calls
    concurrently through ``dispatcher.run_many``, and appends a clean assistant message and
    the tool messages in call order to `messages`. It stops at a final answer
    (``outcome="completed"``), after `max_turns` (``"max_turns"``, or `MaxTurnsExceeded` with
    ``on_max_turns="raise"``), or when the model's text is cut off (``"length"``,
    ``"content_filter"``). In a turn cut off inside a tool call, that call (the last) is answered
    ``incomplete_call``, the turn's whole calls run, and the run goes on.

    Parameters, beside the `client`: `model`; `messages`, the conversation (a list, extended in
    place, or a string for one user message); `dispatcher`; and `options`, an `AgentOptions`:
    how the loop runs (``api="chat" | "responses"``, `max_turns` 10, `max_repeats` 2,
    `max_calls_per_turn` 16, the `on_tool_call` and `on_tool_result` hooks, `on_max_turns`,
    `stream`: False here) and the model's ``create()`` options (`create_options`, handed over
    unchanged; ``model``, ``messages``, ``input``, ``tools`` and ``stream`` belong to the loop).
    Default: ``AgentOptions()``.
    """
    for event in _turns(client, _start(dispatcher, model, messages, options, False)):
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("the loop ended without a result")  # pragma: no cover


async def astream_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: AsyncDispatcher,
    options: AgentOptions | None = None,
) -> AsyncIterator[AgentEvent]:
    """The asyncio twin of `stream_agent`, for `openai.AsyncOpenAI`; hooks may be async."""
    run = _start(dispatcher, model, messages, options, True)
    # `async for` alone would leave the loop suspended when this generator is closed: its open
    # answer (if any) is closed here, not whenever the garbage collector gets to it.
    async with aclosing(_aturns(client, run)) as events:
        async for event in events:
            yield event


async def arun_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: AsyncDispatcher,
    options: AgentOptions | None = None,
) -> AgentResult:
    """The asyncio twin of `run_agent`, for `openai.AsyncOpenAI`; hooks may be async."""
    run = _start(dispatcher, model, messages, options, False)
    async with aclosing(_aturns(client, run)) as events:
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("the loop ended without a result")  # pragma: no cover
