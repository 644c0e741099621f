"""Token usage: read from either API's `usage` (SDK objects and dicts), summed over a run."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from xerj_tools import (
    TokenUsage,
)
from xerj_tools._shapes import ChatAssembler, ResponsesAssembler, chat_step, responses_step
from xerj_tools._shapes._usage import read_usage
from xerj_tools.testing import Turn, XerjStandIn

from conftest import run_scripted

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
CHAT = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                  "prompt_tokens_details": {"cached_tokens": 64},
                  "completion_tokens_details": {"reasoning_tokens": 12}}}
RESPONSES = {"status": "completed", "output": [],
             "usage": {"input_tokens": 200, "output_tokens": 40, "total_tokens": 240,
                       "input_tokens_details": {"cached_tokens": 128, "cache_write_tokens": 0},
                       "output_tokens_details": {"reasoning_tokens": 8}}}


def test_chat_and_responses_shapes_give_the_same_figures() -> None:
    assert read_usage(CHAT) == TokenUsage(120, 30, 150, 64, 12, 1)
    assert read_usage(RESPONSES) == TokenUsage(200, 40, 240, 128, 8, 1)
    assert chat_step(CHAT).usage == read_usage(CHAT)
    assert responses_step(RESPONSES).usage == read_usage(RESPONSES)


def test_sdk_objects_are_read_like_dicts() -> None:
    completion = ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x"}}],
        "usage": CHAT["usage"]})
    response = Response.model_validate({
        "id": "r", "object": "response", "created_at": 0, "model": "m", "output": [],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": RESPONSES["usage"]})
    assert read_usage(completion) == TokenUsage(120, 30, 150, 64, 12, 1)
    assert read_usage(response) == TokenUsage(200, 40, 240, 128, 8, 1)


@pytest.mark.parametrize("usage", [
    None, "lots", 7, {}, {"prompt_tokens": None, "completion_tokens": None},
    {"prompt_tokens": "12"}, {"prompt_tokens": True}, {"prompt_tokens": -5},
])
def test_missing_null_or_junk_usage_is_no_usage(usage: Any) -> None:
    assert read_usage({"usage": usage}) is None
    assert read_usage({}) is None and read_usage(None) is None


def test_partial_usage_counts_what_is_there() -> None:
    # null details, a missing total (summed), a junk detail ignored
    usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": None,
             "prompt_tokens_details": None, "completion_tokens_details": {"reasoning_tokens": "many"}}
    assert read_usage({"usage": usage}) == TokenUsage(5, 7, 12, 0, 0, 1)
    assert TokenUsage(1, 2, 3, 4, 5, 1) + TokenUsage(10, 20, 30, 40, 50, 2) == TokenUsage(11, 22, 33, 44, 55, 3)


def test_streamed_chat_usage_comes_in_the_last_chunk() -> None:
    assembler = ChatAssembler()
    base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    assembler.feed(ChatCompletionChunk.model_validate(
        {**base, "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}))
    assert assembler.step().usage is None
    assembler.feed(ChatCompletionChunk.model_validate({**base, "choices": [], "usage": CHAT["usage"]}))
    assert assembler.step().usage == TokenUsage(120, 30, 150, 64, 12, 1)


def test_streamed_responses_usage_comes_with_the_final_response() -> None:
    assembler = ResponsesAssembler()
    assembler.feed({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "function_call", "id": "fc", "call_id": "c1", "name": "xerj_search"}})
    assembler.feed({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{}"})
    assert assembler.step().usage is None  # no final event: nothing reported
    assembler.feed({"type": "response.completed", "response": {"status": "completed", "usage": RESPONSES["usage"]}})
    step = assembler.step()  # the final response lacks its output: the streamed calls are kept
    assert [c.call_id for c in step.calls] == ["c1"] and step.usage == TokenUsage(200, 40, 240, 128, 8, 1)


SCRIPT = [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(tool_calls=[("xerj_search", {**SEARCH, "size": 1})]),
          Turn(text="Done.")]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_run_sums_the_usage_of_every_turn(mode: str, api: str, stream: bool, xerj: XerjStandIn) -> None:
    # The scripted model reports 10 in + 10 out per response, in every shape OpenAI uses; a
    # streamed Chat Completion reports it only when asked (stream_options.include_usage).
    options: dict[str, Any] = {"api": api, "stream": stream}
    if stream and api == "chat":
        options["create_options"] = {"stream_options": {"include_usage": True}}
    result = run_scripted(mode, SCRIPT, xerj, **options)
    assert result.turns == 3 and result.tool_stats["xerj_search"].calls == 2
    assert result.usage == TokenUsage(30, 30, 60, 0, 0, 3)


def test_a_stream_without_usage_reports_none_of_it(xerj: XerjStandIn) -> None:
    result = run_scripted("sync", SCRIPT, xerj, api="chat", stream=True)
    assert result.completed and result.usage == TokenUsage()  # responses=0: nothing was reported


