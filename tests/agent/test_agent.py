"""The agent loop end to end: the real openai client, the scripted model and the XERJ stand-in,
over real sockets, for both APIs, sync and async."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time
from typing import Any

import pytest

from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    ConfigurationError,
    Dispatcher,
    MaxTurnsExceeded,
    RetryPolicy,
    RunFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
    arun_agent,
    astream_agent,
    run_agent,
    stream_agent,
)
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

from conftest import openai_client

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
RECALL = {"namespace": "agent", "query": "tea"}


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def answered(transcript: list[Any]) -> list[tuple[str, str]]:
    """(call id, answer) pairs in transcript order, from either API's shapes."""
    out = []
    for item in transcript:
        if item.get("role") == "tool":
            out.append((item["tool_call_id"], item["content"]))
        elif item.get("type") == "function_call_output":
            out.append((item["call_id"], item["output"]))
    return out


def assert_valid(transcript: list[Any]) -> None:
    """Every call the model made is answered exactly once, after it: what the APIs demand."""
    pending: list[str] = []
    seen: list[str] = []
    for item in transcript:
        if item.get("role") == "assistant":
            assert not pending, f"calls {pending} were left unanswered"
            pending += [c["id"] for c in item.get("tool_calls", [])]
        elif item.get("type") == "function_call":
            pending.append(item["call_id"])
        elif item.get("role") == "tool" or item.get("type") == "function_call_output":
            call_id = item.get("tool_call_id") or item.get("call_id")
            assert call_id in pending, f"answer to unknown call {call_id}"
            pending.remove(call_id)
            seen.append(call_id)
    assert not pending, f"calls {pending} were left unanswered"
    assert len(seen) == len(set(seen))


def codes(transcript: list[Any]) -> dict[str, str | None]:
    return {cid: json.loads(text).get("error", {}).get("code") for cid, text in answered(transcript)}


def drive(mode: str, api: str, script: list[Turn], *, xerj: XerjStandIn | None = None,
          stream: bool = False, dispatcher_options: dict[str, Any] | None = None,
          **options: Any) -> tuple[Any, ScriptedModel, list[Any], list[Any]]:
    """Run one conversation; returns (result, model, transcript, events)."""
    messages: list[Any] = [{"role": "user", "content": "Why did checkout break?"}]
    with ScriptedModel(script) as model:
        url = xerj.url if xerj else "http://127.0.0.1:9"
        if mode == "sync":
            with openai_client(model.base_url) as client, \
                    Dispatcher(url=url, **(dispatcher_options or {})) as dispatcher:
                events = list(stream_agent(client, model="scripted", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api, stream=stream, **options)))
        else:
            async def go() -> list[Any]:
                async with openai_client(model.base_url, "async") as client, \
                        AsyncDispatcher(url=url, **(dispatcher_options or {})) as dispatcher:
                    return [e async for e in astream_agent(client, model="scripted", messages=messages,
                                                           dispatcher=dispatcher, options=AgentOptions(api=api, stream=stream, **options))]

            events = asyncio.run(go())
    assert isinstance(events[-1], RunFinished)
    return events[-1].result, model, messages, events


@pytest.mark.parametrize("stream", [False, True])
def test_multi_turn_run_with_parallel_calls(mode: str, api: str, stream: bool, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_memory_store", {"namespace": "agent", "text": "likes tea"})]),
              Turn(tool_calls=[("xerj_memory_recall", RECALL)]),
              Turn(text="A bad index template broke checkout.")]
    result, model, transcript, events = drive(mode, api, script, xerj=xerj, stream=stream)
    assert result.completed and result.turns == 3 and result.output_text == "A bad index template broke checkout."
    assert result.transcript is transcript
    assert_valid(transcript)
    assert set(codes(transcript).values()) == {None}
    # the model was sent the tools, and then the whole transcript each turn
    assert len(model.requests) == 3
    first_tool = model.requests[0]["tools"][0]
    assert (first_tool["function"]["name"] if api == "chat" else first_tool["name"]) == "xerj_search"
    key = "messages" if api == "chat" else "input"
    assert model.requests[2][key] == transcript[: len(model.requests[2][key])]
    assert len(transcript) == len(model.requests[2][key]) + 1  # + the final answer
    assert {r.path for r in xerj.requests} == {"/docs/_search", "/_memory/agent", "/_memory/agent/_recall"}
    assert xerj.max_in_flight >= 1
    stats = result.tool_stats
    assert stats["xerj_search"].calls == 1 and stats["xerj_memory_recall"].calls == 1 and stats["xerj_search"].latency > 0
    kinds = [type(e) for e in events]
    assert kinds.count(ToolCallStarted) == 3 and kinds.count(ToolResultEvent) == 3 and kinds.count(TurnFinished) == 3
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == result.output_text
    if stream:
        started = [e.call for e in events if isinstance(e, ToolCallStarted)]
        assert json.loads(started[0].arguments) == SEARCH  # assembled from streamed fragments


def test_clean_assistant_message_is_sent_back(mode: str, xerj: XerjStandIn) -> None:
    script = [Turn(text="Let me look.", tool_calls=[("xerj_search", SEARCH)]), Turn(text="Done.")]
    _, model, _, _ = drive(mode, "chat", script, xerj=xerj)
    assistant = model.requests[1]["messages"][1]
    assert assistant == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "xerj_search", "arguments": json.dumps(SEARCH)}}]}


def test_malformed_arguments_are_corrected_next_turn(mode: str, api: str, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", '{"index": "docs", "query": {"match": ')]),
              Turn(tool_calls=[("xerj_search", SEARCH)]),
              Turn(text="Found it.")]
    result, model, transcript, _ = drive(mode, api, script, xerj=xerj)
    assert result.completed and result.turns == 3
    assert list(codes(transcript).values()) == ["invalid_json", None]
    key = "messages" if api == "chat" else "input"
    told = answered(model.requests[1][key])[0][1]
    assert '"code":"invalid_json"' in told  # the model was sent the error it then fixed
    assert len(xerj.requests) == 1 and result.tool_stats["xerj_search"].errors == 1


def test_unknown_tool_does_not_end_the_run(mode: str, api: str, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_web_search", {"q": "x"}), ("xerj_search", SEARCH)]), Turn(text="ok")]
    result, _, transcript, _ = drive(mode, api, script, xerj=xerj)
    assert result.completed
    assert list(codes(transcript).values()) == ["unknown_tool", None]


def test_denied_call_gets_a_message_and_the_run_goes_on(mode: str, api: str, xerj: XerjStandIn) -> None:
    asked: list[str] = []

    def approve(call: Any) -> Any:
        asked.append(call.name)
        return "writes to memory need approval" if call.name == "xerj_memory_store" else None

    script = [Turn(tool_calls=[("xerj_memory_store", {"namespace": "agent", "text": "x"}), ("xerj_search", SEARCH)]),
              Turn(text="I could not save that.")]
    seen: list[Any] = []
    result, _, transcript, _ = drive(mode, api, script, xerj=xerj, on_tool_call=approve, on_tool_result=seen.append)
    assert result.completed and asked == ["xerj_memory_store", "xerj_search"]
    assert list(codes(transcript).values()) == ["denied", None]
    assert [r.path for r in xerj.requests] == ["/docs/_search"]
    assert "approval" in answered(transcript)[0][1] and result.tool_stats["xerj_memory_store"].denied == 1
    assert [r.code for r in seen] == ["denied", None]


def test_async_hooks_in_the_async_loop(api: str, xerj: XerjStandIn) -> None:
    async def approve(call: Any) -> bool:
        await asyncio.sleep(0)
        return False

    _, _, transcript, _ = drive("async", api, [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(text="k")],
                                     xerj=xerj, on_tool_call=approve)
    assert list(codes(transcript).values()) == ["denied"] and xerj.requests == []


def test_an_async_hook_in_the_sync_loop_is_a_developer_error(xerj: XerjStandIn) -> None:
    async def approve(call: Any) -> bool:
        return True

    with pytest.raises(ConfigurationError):
        drive("sync", "chat", [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(text="k")], xerj=xerj,
              on_tool_call=approve)


def test_max_turns_is_a_clear_outcome(mode: str, api: str, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", {**SEARCH, "size": n})]) for n in (1, 2, 3)]
    result, model, transcript, _ = drive(mode, api, script, xerj=xerj, max_turns=2)
    assert result.outcome == "max_turns" and not result.completed and result.turns == 2
    assert len(model.requests) == 2
    assert_valid(transcript)
    with pytest.raises(MaxTurnsExceeded) as info:
        drive(mode, api, list(script), xerj=xerj, max_turns=1, on_max_turns="raise")
    assert info.value.result.turns == 1


@pytest.mark.parametrize("stream", [False, True])
def test_only_the_call_cut_off_is_answered_incomplete_and_the_whole_ones_run(
        mode: str, api: str, stream: bool, xerj: XerjStandIn) -> None:
    """max_tokens ends the output inside the last call: that call alone is incomplete_call;
    the turn's whole calls run, and the model reads all of it in the next turn."""
    cut = '{"index": "docs", "query": {"match": {"body": "chec'
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_memory_recall", RECALL), ("xerj_search", cut)],
                   finish_reason="length"),
              Turn(text="Checkout broke on a bad template.")]
    result, model, transcript, events = drive(mode, api, script, xerj=xerj, stream=stream)
    assert result.completed and result.turns == 2
    assert list(codes(transcript).values()) == [None, None, "incomplete_call"]
    assert_valid(transcript)
    assert len(xerj.requests) == 2 and "/docs/_search" in [r.path for r in xerj.requests]
    assert all('"chec"' not in json.dumps(r.body) for r in xerj.requests)  # never run with guessed text
    incomplete = json.loads(answered(transcript)[2][1])
    assert "inside this call" in incomplete["error"]["reason"] and "other calls were whole" in incomplete["error"]["reason"]
    assert len(model.requests) == 2  # the answers went back to the model
    assert [type(e).__name__ for e in events].count("ToolResultEvent") == 3


def test_a_turn_cut_off_after_its_last_call_runs_every_call(mode: str, api: str, xerj: XerjStandIn) -> None:
    """finish_reason length with every call's arguments whole: nothing was cut inside a call."""
    script = [Turn(tool_calls=[("xerj_search", SEARCH)], finish_reason="length"), Turn(text="Done.")]
    result, _, transcript, _ = drive(mode, api, script, xerj=xerj)
    assert result.completed and list(codes(transcript).values()) == [None]
    assert len(xerj.requests) == 1


def test_text_cut_off_ends_the_run_length(mode: str, api: str, xerj: XerjStandIn) -> None:
    result, _, transcript, _ = drive(mode, api, [Turn(text="Checkout broke bec", finish_reason="length")], xerj=xerj)
    assert result.outcome == "length" and result.output_text == "Checkout broke bec"
    assert_valid(transcript) and xerj.requests == []


def test_the_loop_guard_stops_a_repeated_call(mode: str, api: str, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", SEARCH)]) for _ in range(3)] + [Turn(text="ok")]
    result, _, transcript, _ = drive(mode, api, script, xerj=xerj, max_repeats=2)
    assert result.completed
    assert list(codes(transcript).values()) == [None, None, "repeated_call"]
    assert len(xerj.requests) == 2


def distinct_searches(count: int) -> list[tuple[str, dict[str, Any]]]:
    return [("xerj_search", {"index": "docs", "query": {"match": {"body": f"word{i}"}}}) for i in range(count)]


def searches(xerj: XerjStandIn) -> list[Any]:
    # The calls' own requests; an empty answer may be followed by a read of the mapping (a field
    # hint, `_after`), which is not a call.
    return [r for r in xerj.requests if r.path.endswith("/_search")]


def test_calls_past_the_turn_bound_are_answered_not_run(mode: str, api: str, xerj: XerjStandIn) -> None:
    # The first `max_calls_per_turn` calls of a turn run; each past them is answered
    # `too_many_calls` without reaching XERJ, and every call still gets one answer, in call order.
    result, _, transcript, _ = drive(mode, api, [Turn(tool_calls=distinct_searches(20)), Turn(text="done")], xerj=xerj)
    assert result.completed
    got = [json.loads(text) for _, text in answered(transcript)]
    assert len(got) == 20  # one answer per call
    assert all(a["ok"] for a in got[:16])
    assert [a["error"]["code"] for a in got[16:]] == ["too_many_calls"] * 4
    assert got[16]["error"]["retryable"] is True and "first 16" in got[16]["error"]["reason"]
    assert len(searches(xerj)) == 16  # the four past the bound never reached XERJ


def test_the_turn_bound_is_an_option(xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=distinct_searches(5)), Turn(text="done")]
    result, _, transcript, _ = drive("sync", "chat", script, xerj=xerj, max_calls_per_turn=2)
    assert list(codes(transcript).values()) == [None, None, *["too_many_calls"] * 3]
    assert len(searches(xerj)) == 2 and result.tool_stats["xerj_search"].calls == 5


def test_a_turn_within_the_bound_runs_every_call(xerj: XerjStandIn) -> None:
    _, _, transcript, _ = drive("sync", "chat", [Turn(tool_calls=distinct_searches(16)), Turn(text="done")], xerj=xerj)
    assert set(codes(transcript).values()) == {None} and len(searches(xerj)) == 16


def test_per_tool_figures_count_retries_and_repairs(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(503)
    script = [Turn(tool_calls=[("xerj_search", {**SEARCH, "size": "2"})]), Turn(text="k")]
    result, _, _, _ = drive(mode, "chat", script, xerj=xerj,
                            dispatcher_options={"sleep": (lambda s: None) if mode == "sync" else _nosleep})
    stats = result.tool_stats["xerj_search"]
    assert (stats.calls, stats.errors, stats.retries, stats.repairs) == (1, 0, 1, 1)


async def _nosleep(seconds: float) -> None:
    return None


def test_async_cancellation_mid_turn_answers_every_call(api: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=5.0, match="_search"))
    messages: list[Any] = [{"role": "user", "content": "go"}]
    script = [Turn(tool_calls=[("xerj_memory_recall", RECALL), ("xerj_search", SEARCH)]), Turn(text="resumed")]

    async def go() -> None:
        async with openai_client(model.base_url, "async") as client, \
                AsyncDispatcher(url=xerj.url) as dispatcher:
            task = asyncio.ensure_future(arun_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api)))
            while len(xerj.requests) < 2:  # both calls are on the wire; the search is held up
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []  # nothing left running
            assert_valid(messages)
            assert list(codes(messages).values()) == [None, "cancelled"]
            # the transcript is valid for the next request
            result = await arun_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api))
            assert result.completed and result.output_text == "resumed"

    with ScriptedModel(script) as model:
        asyncio.run(go())
        key = "messages" if api == "chat" else "input"
        assert len(answered(model.requests[1][key])) == 2


def test_sync_interrupt_mid_turn_answers_every_call(api: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=503, headers={"Retry-After": "20"}, match="_search"))
    messages: list[Any] = [{"role": "user", "content": "go"}]
    script = [Turn(tool_calls=[("xerj_memory_recall", RECALL), ("xerj_search", SEARCH)]), Turn(text="resumed")]
    slow_backoff = RetryPolicy(max_retry_after=60, max_time=120)

    def interrupt_after_the_503() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("_search" in r.path for r in xerj.requests):
            time.sleep(0.01)
        time.sleep(0.1)  # the search now sits in its backoff
        _thread.interrupt_main()

    with ScriptedModel(script) as model, Dispatcher(url=xerj.url, retry=slow_backoff) as dispatcher, \
            openai_client(model.base_url) as client:
        threading.Thread(target=interrupt_after_the_503, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api))
        assert_valid(messages)
        assert list(codes(messages).values()) == [None, "cancelled"]
        searches = sum("_search" in r.path for r in xerj.requests)
        assert searches == 1  # the backoff was cut short and no retry was sent
        result = run_agent(client, model="m", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api))
        assert result.completed
    assert sum("_search" in r.path for r in xerj.requests) == searches


def test_dispatch_many_alone_answers_every_call_when_cancelled(xerj: XerjStandIn) -> None:
    from conftest import chat_call

    xerj.fail_next(Fault(delay=5.0, match="_search"))
    transcript: list[Any] = []

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            calls = [chat_call("xerj_memory_recall", RECALL, "a"), chat_call("xerj_search", SEARCH, "b")]
            task = asyncio.ensure_future(dispatcher.dispatch_many(calls, transcript=transcript))
            while len(xerj.requests) < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []  # nothing left running

    asyncio.run(go())
    assert [m["tool_call_id"] for m in transcript] == ["a", "b"]
    assert [json.loads(m["content"]).get("error", {}).get("code") for m in transcript] == [None, "cancelled"]
    assert xerj.max_in_flight >= 1


def test_a_plain_string_starts_a_responses_run(xerj: XerjStandIn) -> None:
    with ScriptedModel([Turn(text="hello")]) as model, Dispatcher(url=xerj.url) as dispatcher, \
            openai_client(model.base_url) as client:
        result = run_agent(client, model="m", messages="hi", dispatcher=dispatcher, options=AgentOptions(api="responses", create_options={"temperature": 0.2}))
    assert result.completed and result.output_text == "hello"
    assert model.requests[0]["input"] == [{"role": "user", "content": "hi"}]
    assert model.requests[0]["temperature"] == 0.2


def test_responses_stream_assembly_from_argument_deltas() -> None:
    from xerj_tools._shapes import ResponsesAssembler

    events: list[dict[str, Any]] = [{"type": "response.created", "response": {}}]
    for index, (call_id, name, pieces) in enumerate([("c1", "xerj_search", ['{"index": ', '"docs"}']),
                                                     ("c2", "xerj_memory_recall", ['{"namespace"', ': "a"}'])]):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {"type": "function_call", "id": f"fc_{index}", "call_id": call_id, "name": name,
                                "arguments": ""}})
        events += [{"type": "response.function_call_arguments.delta", "output_index": index, "item_id": f"fc_{index}",
                    "delta": p} for p in pieces]
    assembler = ResponsesAssembler()
    for event in events:
        assembler.feed(event)
    cut = assembler.step()  # no final event: the calls that arrived, and a cut-off turn
    assert [(c.call_id, c.name, c.arguments) for c in cut.calls] == [
        ("c1", "xerj_search", '{"index": "docs"}'), ("c2", "xerj_memory_recall", '{"namespace": "a"}')]
    assert cut.finish_reason == "length"
    assembler.feed({"type": "response.completed", "response": {"status": "completed", "output": []}})
    done = assembler.step()  # a final event without output: the assembled calls stand
    assert [c.call_id for c in done.calls] == ["c1", "c2"] and done.finish_reason == "tool_calls"
