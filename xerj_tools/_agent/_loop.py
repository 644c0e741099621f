"""The agent loop: ask the model, run its tool calls through the dispatcher, repeat; sync and async.

Retries live in one place per layer: model requests are retried by the `openai` client alone
(its ``max_retries``, 2 by default), XERJ requests by the dispatcher's `RetryPolicy` alone. The
loop adds no retries of its own, so attempts never multiply.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigurationError
from .._shapes import ToolCall
from ._agent_options import (
    AgentKeywords,
    AgentOptions,
    ToolCallHook,
    ToolResultHook,
    advertise_loop,
    loop_options,
)
from ._run import AgentRun
from ._streams import aclose_stream, close_stream
from ._turns import AgentEvent, AgentResult, RunFinished, TextDelta, ToolResultEvent

if TYPE_CHECKING:
    from typing_extensions import Unpack

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


def _start(
    owner: str,
    dispatcher: Any,
    model: str,
    messages: Any,
    options: AgentOptions | None,
    keywords: Mapping[str, Any],
    stream: bool,
) -> tuple[AgentRun, AgentOptions, bool]:
    """The run, its options (`loop_options`) and whether it streams (`stream` by default)."""
    options = loop_options(owner, options, keywords)
    run = AgentRun(dispatcher, model, messages, options)
    return run, options, stream if options.stream is None else options.stream


def _turns(
    client: Any,
    run: AgentRun,
    stream: bool,
    on_tool_call: ToolCallHook | None,
    on_tool_result: ToolResultHook | None,
) -> Iterator[AgentEvent]:
    """The sync loop: one model request and one turn of tool calls after another."""
    from .._dispatch._sync import Dispatcher

    dispatcher = run.dispatcher
    assert isinstance(dispatcher, Dispatcher)  # the sync entry points take only this
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if stream:
            assembler = run.assembler()
            chunks = run.create(client)(**run.request(True))
            try:
                for chunk in chunks:
                    if (delta := assembler.feed(chunk)) is not None:
                        yield TextDelta(delta)
            finally:  # closed or interrupted mid-answer: the response is let go of now
                close_stream(chunks)
            step = assembler.step()
        else:
            step = run.step(run.create(client)(**run.request(False)))
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
                    answer = answer or run.deny(call, _sync_hook(on_tool_call, call))
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


async def _aturns(
    client: Any,
    run: AgentRun,
    stream: bool,
    on_tool_call: ToolCallHook | None,
    on_tool_result: ToolResultHook | None,
) -> AsyncGenerator[AgentEvent, None]:
    """The async loop, the twin of `_turns`; hooks may be async."""
    from .._dispatch._async import AsyncDispatcher

    dispatcher = run.dispatcher
    assert isinstance(dispatcher, AsyncDispatcher)  # the async entry points take only this
    for turn in range(1, run.max_turns + 1):
        run.begin(turn)
        if stream:
            assembler = run.assembler()
            chunks = await run.create(client)(**run.request(True))
            try:
                async for chunk in chunks:
                    if (delta := assembler.feed(chunk)) is not None:
                        yield TextDelta(delta)
            finally:  # closed or cancelled mid-answer: the response is let go of now
                await aclose_stream(chunks)
            step = assembler.step()
        else:
            step = run.step(await run.create(client)(**run.request(False)))
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
                    answer = answer or run.deny(call, await _async_hook(on_tool_call, call))
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


def stream_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Dispatcher,
    options: AgentOptions | None = None,
    **keywords: Unpack[AgentKeywords],
) -> Iterator[AgentEvent]:
    """Run the loop and yield its events: `TextDelta`, `ToolCallStarted`, `ToolResultEvent`,
    `TurnFinished`, and last `RunFinished` with the `AgentResult`.

    With ``stream=True`` (the default here) the model's answer is streamed and its tool-call
    deltas assembled; ``run_agent`` is this loop with ``stream=False``, drained. Its parameters
    are those of `run_agent`.
    """
    run, o, stream = _start("stream_agent", dispatcher, model, messages, options, keywords, True)
    yield from _turns(client, run, stream, o.on_tool_call, o.on_tool_result)


def run_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Dispatcher,
    options: AgentOptions | None = None,
    **keywords: Unpack[AgentKeywords],
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
    place, or a string for one user message); `dispatcher`; `options`, an `AgentOptions`; and as
    keywords, each changing `options` (the keyword wins): ``api="chat" | "responses"``;
    `max_turns` (10); `max_repeats` (2, the loop guard: a call repeated more often is answered
    ``repeated_call``); `max_calls_per_turn` (16: the calls of one turn past it are answered
    ``too_many_calls`` without being run); `on_tool_call` (return False or a reason to deny a call);
    `on_tool_result`; `on_max_turns` (``"return"`` or ``"raise"``: `MaxTurnsExceeded`);
    `stream` (False: each answer whole; True: streamed, as `stream_agent` does). A keyword that
    is none of these nor a `CreateOptions` key raises `TypeError`.

    Options for the model's ``create()`` go through unchanged: as keywords typed by
    `CreateOptions` (``temperature=0``, ``tool_choice=``, ``stream_options=``…), or in
    `create_options` (any option your client takes). ``model``, ``messages``, ``input``,
    ``tools`` and ``stream`` belong to the loop; passing one there raises `ConfigurationError`.
    """
    run, o, stream = _start("run_agent", dispatcher, model, messages, options, keywords, False)
    for event in _turns(client, run, stream, o.on_tool_call, o.on_tool_result):
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
    **keywords: Unpack[AgentKeywords],
) -> AsyncIterator[AgentEvent]:
    """The asyncio twin of `stream_agent`, for `openai.AsyncOpenAI`; hooks may be async."""
    run, o, stream = _start("astream_agent", dispatcher, model, messages, options, keywords, True)
    # `async for` alone would leave the loop suspended when this generator is closed: its open
    # answer (if any) is closed here, not whenever the garbage collector gets to it.
    async with aclosing(_aturns(client, run, stream, o.on_tool_call, o.on_tool_result)) as events:
        async for event in events:
            yield event


async def arun_agent(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: AsyncDispatcher,
    options: AgentOptions | None = None,
    **keywords: Unpack[AgentKeywords],
) -> AgentResult:
    """The asyncio twin of `run_agent`, for `openai.AsyncOpenAI`; hooks may be async."""
    run, o, stream = _start("arun_agent", dispatcher, model, messages, options, keywords, False)
    async with aclosing(_aturns(client, run, stream, o.on_tool_call, o.on_tool_result)) as events:
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("the loop ended without a result")  # pragma: no cover


# `inspect.signature` and `help()` list every keyword with its entry point's default.
advertise_loop(run_agent, stream=False)
advertise_loop(arun_agent, stream=False)
advertise_loop(stream_agent, stream=True)
advertise_loop(astream_agent, stream=True)
