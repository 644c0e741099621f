"""Interrupt every driver at every point it passes, deterministically: the transcript stays valid.

The invariant the model APIs demand: every call id answered exactly once, after its call, in
call order. Interruptions are injected, not signalled: an exception from the consumer at each
event (or a `break` that never resumes), from each hook call, from each request the dispatcher
sends, from each validation; and asyncio cancellation after each number of event-loop passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import openai
import pytest

from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    Dispatcher,
    RunFinished,
    TextDelta,
    ToolCallStarted,
    arun_agent,
    astream_agent,
    stream_agent,
)
from xerj_tools._agent._streams import aclose_stream, close_stream
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

from conftest import chat_call, openai_client

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
SCRIPT = [
    Turn(text="Looking.", tool_calls=[("xerj_search", SEARCH), ("xerj_memory_recall", {"namespace": "a", "query": "tea"}),
                                      ("xerj_search", SEARCH), ("xerj_search", '{"index": ')]),
    Turn(tool_calls=[("xerj_memory_store", {"namespace": "a", "text": "likes tea"})]),
    Turn(text="Done."),
]


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Boom(BaseException):
    """Stands for KeyboardInterrupt (which pytest would take for the user's own Ctrl-C)."""


def assert_answered_in_order(transcript: list[Any]) -> None:
    """Each call answered exactly once, after its call and before anything else, in call order."""
    pending: list[str] = []
    for item in transcript:
        answer = item.get("tool_call_id") if item.get("role") == "tool" else (
            item.get("call_id") if item.get("type") == "function_call_output" else None)
        if answer is not None:
            assert pending and pending[0] == answer, f"answer {answer} where {pending} were due"
            pending.pop(0)
            continue
        if item.get("type") == "function_call":
            pending.append(item["call_id"])
            continue
        assert not pending, f"calls {pending} left unanswered before {item}"
        if item.get("role") == "assistant":
            pending += [c["id"] for c in item.get("tool_calls") or []]
    assert not pending, f"calls {pending} left unanswered"


def tool_answers(transcript: list[Any]) -> int:
    return sum(item.get("role") == "tool" or item.get("type") == "function_call_output" for item in transcript)


class Once:
    """Raises `Boom` on its `at`-th call (counting from 0), passes otherwise."""

    def __init__(self, at: int) -> None:
        self.at, self.count = at, 0

    def __call__(self, *args: Any) -> None:
        self.count += 1
        if self.count - 1 == self.at:
            raise Boom


RUN = "x-replay-run"


class Replay(ScriptedModel):
    """The scripted model, replayed from the start for each run (one server, one client).

    Each run has a copy of the script of its own. A run cancelled while its request is on the
    wire leaves that request behind: its bytes are in the server's socket, and a server thread
    takes a turn for it whenever it gets to it, often after the next run began. A request that
    names its run (the `RUN` header, from `restart()`) takes that run's turn, not the next run's;
    one without the header takes the latest run's (the sync loops leave no request behind)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._runs: dict[str, list[Turn]] = {}

    def restart(self) -> dict[str, str]:
        """Start a run; returns the headers that tie a request to it."""
        with self._lock:
            run = str(len(self._runs))
            self._runs[run] = self._turns = list(self.script)
        return {RUN: run}

    def _take(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Turn | None:
        run = {name.lower(): value for name, value in headers.items()}.get(RUN)
        with self._lock:
            self.requests.append({"path": path, **body})
            self.headers.append(headers)
            turns = self._turns if run is None else self._runs[run]
            return turns.pop(0) if turns else None


@pytest.fixture
def rig(xerj: XerjStandIn) -> Iterator[tuple[Replay, openai.OpenAI, Dispatcher]]:
    with Replay(SCRIPT) as model, Dispatcher(url=xerj.url) as dispatcher, \
            openai_client(model.base_url) as client:
        yield model, client, dispatcher


Rig = tuple[Replay, openai.OpenAI, Dispatcher]


def run_sync(rig: Rig, api: str, stream: bool, consumer: Callable[[int, Any], None] = lambda i, e: None,
             patch: tuple[str, str, int] | None = None, close: bool = False,
             **options: Any) -> tuple[list[Any], bool]:
    """One run; returns the transcript and whether it finished. An interrupted generator is
    checked while still suspended, then (with `close`) once closed. `patch` is (part of the
    dispatcher, method, n): that method raises on its n-th call."""
    model, client, dispatcher = rig
    model.restart()
    messages: list[Any] = [{"role": "user", "content": "Why did checkout break?"}]
    if patch is not None:
        obj = getattr(dispatcher, patch[0])
        original, once = getattr(obj, patch[1]), Once(patch[2])
        setattr(obj, patch[1], lambda *a: (once(), original(*a))[1])
    try:
        events = stream_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api, stream=stream, **options))
        try:
            for i, event in enumerate(events):
                consumer(i, event)
                if isinstance(event, RunFinished):
                    return messages, True
        except Boom:
            pass
        assert_answered_in_order(messages)  # while the generator is still suspended
        if close:
            events.close()
            assert_answered_in_order(messages)
    finally:
        if patch is not None:
            delattr(getattr(dispatcher, patch[0]), patch[1])
    return messages, False


@pytest.mark.parametrize("stream", [False, True])
def test_sync_loop_interrupted_by_its_consumer_at_every_event(api: str, stream: bool, rig: Rig) -> None:
    finished, done = run_sync(rig, api, stream)
    assert done and tool_answers(finished) == 5
    events = len(_events(rig, api, stream))
    # the consumer raises while handling each event; the generator stays suspended, or is closed
    for at in range(events - 1):
        def stop(i: int, e: Any, at: int = at) -> None:
            if i == at:
                raise Boom

        _transcript, done = run_sync(rig, api, stream, consumer=stop, close=at % 2 == 0)
        assert not done


def test_sync_loop_interrupted_by_each_hook_call_request_and_validation(api: str, rig: Rig) -> None:
    for at in range(5):
        for hook in ("on_tool_call", "on_tool_result"):
            _, done = run_sync(rig, api, False, **{hook: Once(at)})
            assert not done
    # 5 validations; 3 requests (one call is a copy of another, one is broken); in a worker
    # thread of the turn's pool or not
    for at in range(5):
        for patch in [("_core", "prepare", at)] + ([("_transport", "send", at)] if at < 3 else []):
            _transcript, done = run_sync(rig, api, False, patch=patch)
            assert not done


def _events(rig: Rig, api: str, stream: bool) -> list[Any]:
    model, client, dispatcher = rig
    model.restart()
    messages: list[Any] = [{"role": "user", "content": "go"}]
    return list(stream_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api, stream=stream)))


def test_a_stream_abandoned_at_tool_call_started_leaves_answered_calls(rig: Rig, xerj: XerjStandIn) -> None:
    _model, client, dispatcher = rig
    messages: list[Any] = [{"role": "user", "content": "go"}]
    events = stream_agent(client, model="m", messages=messages, dispatcher=dispatcher)
    for event in events:
        if isinstance(event, ToolCallStarted):
            break  # `events` is still referenced: the generator is suspended, not closed
    assert_answered_in_order(messages)
    assert tool_answers(messages) == 4 and xerj.requests == []


def test_a_stream_closed_mid_answer_closes_the_models_response(mode: str, api: str, xerj: XerjStandIn) -> None:
    """The `openai` streams close their HTTP response only once read to the end: the loop closes
    it when it is closed (or cancelled) mid-answer, not the garbage collector some time later."""
    responses: list[Any] = []

    async def arecord(response: Any) -> None:
        responses.append(response)

    script = [Turn(text="A long answer, streamed in pieces.")]
    with ScriptedModel(script) as model:
        if mode == "sync":
            with openai_client(model.base_url, event_hooks={"response": [responses.append]}) as client, \
                    Dispatcher(url=xerj.url) as dispatcher:
                events = stream_agent(client, model="m", messages="hi", dispatcher=dispatcher, options=AgentOptions(api=api))
                assert isinstance(next(events), TextDelta)
                assert [r.is_closed for r in responses] == [False]  # the rest of the answer is due
                events.close()
                assert [r.is_closed for r in responses] == [True]
        else:
            async def go() -> None:
                async with openai_client(model.base_url, "async", event_hooks={"response": [arecord]}) as client, \
                        AsyncDispatcher(url=xerj.url) as dispatcher:
                    events = astream_agent(client, model="m", messages="hi", dispatcher=dispatcher, options=AgentOptions(api=api))
                    assert isinstance(await events.__anext__(), TextDelta)
                    assert [r.is_closed for r in responses] == [False]
                    await events.aclose()
                    assert [r.is_closed for r in responses] == [True]

            asyncio.run(go())


@pytest.mark.parametrize("stream", [False, True])
def test_async_loop_cancelled_at_every_point(api: str, stream: bool, xerj: XerjStandIn) -> None:
    async def once(cancel_after: int | None, consumer_at: int | None) -> tuple[list[Any], bool]:
        run = model.restart()  # the run's requests say so: a cancelled run's may come in late
        messages: list[Any] = [{"role": "user", "content": "go"}]
        seen = asyncio.Event()

        async def consume() -> bool:
            try:
                async for i, event in _aenumerate(astream_agent(client, model="m", messages=messages,
                                                                dispatcher=dispatcher, options=AgentOptions(api=api, stream=stream, create_options={"extra_headers": run}))):
                    if i == consumer_at:
                        seen.set()
                        await asyncio.Event().wait()  # cancelled while handling this event
                    if isinstance(event, RunFinished):
                        return True
                return False
            finally:
                seen.set()

        task = asyncio.ensure_future(consume())
        if consumer_at is not None:
            await seen.wait()
        for _ in range(cancel_after or 0):
            await asyncio.sleep(0)
        if cancel_after is not None or consumer_at is not None:
            task.cancel()
        try:
            done = await task
        except asyncio.CancelledError:
            done = False
        assert_answered_in_order(messages)
        return messages, done

    async def go() -> None:
        nonlocal client, dispatcher
        client = openai_client(model.base_url, "async")
        dispatcher = AsyncDispatcher(url=xerj.url)
        async with client, dispatcher:
            await runs()

    async def runs() -> None:
        finished, done = await once(None, None)
        assert done and tool_answers(finished) == 5
        if stream:
            for at in range(14):
                await once(None, at)
        for passes in range(0, 60, 6):
            await once(passes, None)

    client: Any = None
    dispatcher: Any = None
    with Replay(SCRIPT) as model:
        asyncio.run(go())


async def _aenumerate(events: Any) -> Any:
    i = 0
    async for event in events:
        yield i, event
        i += 1


def test_async_hooks_raising_or_cancelling_leave_a_valid_transcript(xerj: XerjStandIn) -> None:
    async def go() -> None:
        for at in range(5):
            for hook in ("on_tool_call", "on_tool_result"):
                messages: list[Any] = [{"role": "user", "content": "go"}]
                with ScriptedModel(SCRIPT) as model:
                    async with openai_client(model.base_url, "async") as client, \
                            AsyncDispatcher(url=xerj.url) as dispatcher:
                        with pytest.raises(Boom):
                            await arun_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(**{hook: Once(at)}))
                assert_answered_in_order(messages)

    asyncio.run(go())


def test_manual_dispatch_many_interrupted_anywhere(xerj: XerjStandIn) -> None:
    calls = [chat_call("xerj_search", SEARCH, "a"), chat_call("xerj_memory_recall", {"namespace": "a", "query": "x"}, "b"),
             chat_call("xerj_search", SEARCH, "c"), chat_call("xerj_search", '{"index": ', "d")]
    assistant = {"role": "assistant", "content": None,
                 "tool_calls": [{"id": c["id"], "type": "function", "function": c["function"]} for c in calls]}
    for at in range(3):
        for target in ("send", "prepare"):
            transcript: list[Any] = [assistant]
            with Dispatcher(url=xerj.url) as dispatcher:
                obj = dispatcher._transport if target == "send" else dispatcher._core
                original, once = getattr(obj, target), Once(at)
                setattr(obj, target, lambda *a, original=original, once=once: (once(), original(*a))[1])
                if target == "send" and at == 2:
                    continue  # two requests only: the copy of "a" is not sent, "d" is broken
                with pytest.raises(Boom):
                    dispatcher.dispatch_many(calls, transcript=transcript)
            assert_answered_in_order(transcript)

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            for passes in range(12):
                transcript: list[Any] = [assistant]
                task = asyncio.ensure_future(dispatcher.dispatch_many(calls, transcript=transcript))
                for _ in range(passes):
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                assert_answered_in_order(transcript)

    asyncio.run(go())


def test_a_failing_close_never_hides_what_ended_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    """Letting go of a streamed answer can fail (a connection reset); the error or cancellation
    that ended the answer still reaches the caller, and a caller's own close stays clean."""

    class Broken:
        closed = 0

        def close(self) -> None:
            Broken.closed += 1
            raise httpx2.ReadError("connection reset while closing")

    class ABroken:
        async def aclose(self) -> None:
            Broken.closed += 1
            raise httpx2.ReadError("connection reset while closing")

    caplog.set_level(logging.DEBUG, logger="xerj_tools")
    with pytest.raises(KeyboardInterrupt):
        try:
            raise KeyboardInterrupt
        finally:
            close_stream(Broken())
    close_stream(Broken())  # a clean close of an abandoned answer stays clean

    async def go() -> None:
        with pytest.raises(asyncio.CancelledError):
            try:
                raise asyncio.CancelledError
            finally:
                await aclose_stream(ABroken())
        await aclose_stream(Broken())  # `close` alone, sync

    asyncio.run(go())
    assert Broken.closed == 4
    assert caplog.text.count("closing the model's streamed answer failed") == 4
    assert "connection reset while closing" in caplog.text  # the cause, at debug level
