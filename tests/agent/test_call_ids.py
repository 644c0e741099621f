"""Duplicate and missing call ids in the agent loop: every call gets its own
answer, and the transcript pairs each call with one answer under an id of its own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xerj_tools import AgentOptions, Dispatcher, run_agent
from xerj_tools.testing import XerjStandIn

DOCS = {"index": "docs", "query": {"match_all": {}}, "size": 1}
TICKETS = {"index": "tickets", "query": {"match_all": {}}, "size": 1}


class Model:
    """A scripted client: `chat.completions.create` and `responses.create` pop the next reply."""

    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)
        self.chat, self.completions, self.responses = self, self, self

    def create(self, **_: Any) -> dict[str, Any]:
        return self.replies.pop(0)


def chat_turn(*calls: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    tool_calls = []
    for call_id, arguments in calls:
        call: dict[str, Any] = {
            "type": "function",
            "function": {"name": "xerj_search", "arguments": json.dumps(arguments)},
        }
        if call_id is not ...:
            call["id"] = call_id
        tool_calls.append(call)
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


CHAT_DONE = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}
    ]
}


def index_of(content: str) -> str:
    answer = json.loads(content)
    return answer["hits"][0]["_index"] if answer.get("ok") else answer["error"]["code"]


def chat_pairs(messages: list[Any]) -> tuple[list[str], list[tuple[str, str]]]:
    """The ids of the assistant turn's calls, and (id, index answered) of each tool message."""
    asked = [c["id"] for m in messages if m.get("tool_calls") for c in m["tool_calls"]]
    told = [
        (m["tool_call_id"], index_of(m["content"])) for m in messages if m.get("role") == "tool"
    ]
    return asked, told


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["dup", "dup"], ["dup", "dup_1"]),
        ([..., ...], ["xerj_1_0", "xerj_1_1"]),
        (["", None], ["xerj_1_0", "xerj_1_1"]),
        (["a", "a", "a_1"], ["a", "a_1_", "a_1"]),
    ],
    ids=["duplicate", "missing", "empty-and-null", "renamed-into-a-taken-id"],
)
def test_chat_calls_get_their_own_answers_under_ids_of_their_own(
    xerj: XerjStandIn, ids: list[Any], expected: list[str]
) -> None:
    arguments = [DOCS, TICKETS, DOCS | {"size": 2}][: len(ids)]
    messages: list[Any] = [{"role": "user", "content": "q"}]
    with Dispatcher(url=xerj.url) as dispatcher:
        run_agent(Model(chat_turn(*zip(ids, arguments, strict=True)), CHAT_DONE), model="m", messages=messages,
                  dispatcher=dispatcher)  # fmt: skip
    asked, told = chat_pairs(messages)
    assert asked == expected
    assert told == list(zip(expected, [a["index"] for a in arguments], strict=True))


def test_a_hook_denying_the_first_of_two_calls_with_one_id_denies_that_call_only(
    xerj: XerjStandIn,
) -> None:
    messages: list[Any] = [{"role": "user", "content": "q"}]
    with Dispatcher(url=xerj.url) as dispatcher:
        run_agent(
            Model(chat_turn(("dup", TICKETS), ("dup", DOCS)), CHAT_DONE), model="m", messages=messages,
            dispatcher=dispatcher,
            options=AgentOptions(on_tool_call=lambda c: "no tickets" if "tickets" in str(c.arguments) else None))  # fmt: skip
    assert chat_pairs(messages)[1] == [("dup", "denied"), ("dup_1", "docs")]


def test_responses_calls_with_one_call_id_or_none_get_their_own_answers(xerj: XerjStandIn) -> None:
    def call(call_id: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        item = {"type": "function_call", "name": "xerj_search", "arguments": json.dumps(arguments)}
        return item if call_id is ... else item | {"call_id": call_id}

    turn = {
        "output": [call("dup", DOCS), call("dup", TICKETS), call(..., DOCS | {"size": 2})],
        "status": "completed",
    }
    done = {
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "done"}]}],
        "status": "completed",
    }
    messages: list[Any] = [{"role": "user", "content": "q"}]
    with Dispatcher(url=xerj.url) as dispatcher:
        run_agent(
            Model(turn, done), model="m", messages=messages, dispatcher=dispatcher
        , options=AgentOptions(api="responses"))
    asked = [m["call_id"] for m in messages if m.get("type") == "function_call"]
    told = [
        (m["call_id"], index_of(m["output"]))
        for m in messages
        if m.get("type") == "function_call_output"
    ]
    assert asked == ["dup", "dup_1", "xerj_1_2"]
    assert told == [("dup", "docs"), ("dup_1", "tickets"), ("xerj_1_2", "docs")]
