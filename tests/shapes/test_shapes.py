"""Wire shapes: each adapter recognises, answers, groups, defines and finds its calls; dispatch
and offline validation speak all four; an object of no known shape raises, never guessed."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest
from openai.types.chat import ChatCompletionMessageToolCall  # the function kind, old and new
from openai.types.responses import ResponseFunctionToolCall

from xerj_tools import (
    AgentOptions,
    ConfigurationError,
    Dispatcher,
    InvalidToolCallError,
    load_registry,
    parse_tool_call,
    run_agent,
    turn_messages,
)
from xerj_tools._cli._main import main
from xerj_tools._dispatch._answers import PendingAnswers
from xerj_tools._offline._validate import FoundCall, Unrecognised, find_calls, validate_calls
from xerj_tools._shapes import ANTHROPIC, CHAT, RESPONSES, SHAPES, WireShape
from xerj_tools.testing import XerjStandIn

from conftest import Runner

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}


class ToolUseBlock(pydantic.BaseModel):
    """The anthropic SDK's content block, by its fields: the SDK itself is not installed."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: Any


def tool_use(name: str, arguments: Any, call_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


# Per shape: a dict call, the same call as an SDK (or SDK-like) object, and the answer's id key.
def _chat(call_id: str, arguments: Any) -> tuple[Any, Any]:
    raw = json.dumps(arguments)
    wire = {"id": call_id, "type": "function", "function": {"name": "xerj_search", "arguments": raw}}
    return wire, ChatCompletionMessageToolCall.model_validate(wire)


def _responses(call_id: str, arguments: Any) -> tuple[Any, Any]:
    raw = json.dumps(arguments)
    wire = {"type": "function_call", "call_id": call_id, "name": "xerj_search", "arguments": raw}
    return wire, ResponseFunctionToolCall.model_validate({**wire, "id": "fc_1"})


def _anthropic(call_id: str, arguments: Any) -> tuple[Any, Any]:
    wire = tool_use("xerj_search", arguments, call_id)
    return wire, ToolUseBlock.model_validate(wire)


def _gemini(call_id: str, arguments: Any) -> tuple[Any, Any]:
    types = pytest.importorskip("google.genai.types", reason="google-genai is not installed")

    wire = {"functionCall": {"id": call_id, "name": "xerj_search", "args": arguments}}
    return wire, types.Part.model_validate(wire)


MAKERS: dict[str, Callable[[str, Any], tuple[Any, Any]]] = {
    "chat": _chat, "responses": _responses, "anthropic": _anthropic, "gemini": _gemini,
}  # fmt: skip
ID_KEY = {"chat": "tool_call_id", "responses": "call_id", "anthropic": "tool_use_id", "gemini": "id"}


def _answer_id(message: Any, shape: str) -> Any:
    return (message["functionResponse"] if shape == "gemini" else message)[ID_KEY[shape]]


def test_every_shape_has_its_cases() -> None:
    assert {shape.name for shape in SHAPES} == set(MAKERS) == set(ID_KEY)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize("form", ["dict", "object"])
def test_each_shape_recognises_its_calls_and_only_its_own(shape: WireShape, form: str) -> None:
    if shape.name == "gemini" and form == "object":
        pytest.importorskip("google.genai")
    wire, obj = MAKERS[shape.name]("c1", SEARCH)
    call = parse_tool_call(wire if form == "dict" else obj)
    assert (call.api, call.call_id, call.name) == (shape.name, "c1", "xerj_search")
    decoded = call.arguments if isinstance(call.arguments, dict) else json.loads(call.arguments)
    assert decoded == SEARCH
    assert [s.name for s in SHAPES if s.claims(wire)] == [shape.name]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize("ok", [True, False])
def test_each_shape_answers_in_its_own_form(shape: WireShape, ok: bool) -> None:
    call = parse_tool_call(MAKERS[shape.name]("c1", SEARCH)[0])
    message: Any = call.answer('{"ok": true}', ok=ok)
    assert _answer_id(message, shape.name) == "c1"
    assert [s.name for s in SHAPES if s.answered(message) is not None] == [shape.name]
    if shape is ANTHROPIC:
        assert message == {"type": "tool_result", "tool_use_id": "c1", "content": '{"ok": true}',
                           "is_error": not ok}  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_a_turns_answers_join_the_transcript_as_the_shape_wants(shape: WireShape) -> None:
    calls = [parse_tool_call(MAKERS[shape.name](f"c{i}", SEARCH)[0]) for i in range(3)]
    answers = [c.answer("{}", ok=True) for c in calls]
    entries = turn_messages(answers)
    if shape is ANTHROPIC:  # the Messages API: all of a turn's results in one user message
        assert entries == [{"role": "user", "content": answers}]
    elif shape.name == "gemini":  # Gemini: all of a turn's responses in one user content
        assert entries == [{"role": "user", "parts": answers}]
    else:
        assert entries == answers


def test_anthropic_tools_export_every_tool_with_its_parameters_schema() -> None:
    registry = load_registry()
    tools = registry.anthropic_tools()
    assert [t["name"] for t in tools] == list(registry.names)
    for tool, spec in zip(tools, registry, strict=True):
        assert set(tool) == {"name", "description", "input_schema"}
        assert tool["input_schema"] == spec.parameters and tool["description"] == spec.description
        assert tool == spec.anthropic_tool()
    tools[0]["input_schema"]["properties"].clear()  # a copy: the registry keeps its own
    assert registry.anthropic_tools()[0]["input_schema"] == registry.get(tools[0]["name"]).parameters  # type: ignore[union-attr]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_exports_every_registry_tool(shape: WireShape) -> None:
    registry = load_registry()
    definitions = shape.definitions(registry)
    assert len(definitions) == len(registry)
    names = [d.get("name") or d["function"]["name"] for d in definitions]
    assert names == list(registry.names)


# Dispatch over the stand-in, sync and async.


@pytest.mark.parametrize("form", ["dict", "object"])
def test_a_tool_use_block_is_dispatched_and_answered_as_a_tool_result(
    runner: Runner, xerj: XerjStandIn, form: str
) -> None:
    wire, obj = _anthropic("toolu_9", SEARCH)
    result = runner.run(wire if form == "dict" else obj)
    message: Any = result.message
    assert result.ok and len(xerj.requests) == 1
    assert set(message) == {"type", "tool_use_id", "content", "is_error"}
    assert (message["type"], message["tool_use_id"], message["is_error"]) == ("tool_result", "toolu_9", False)
    assert json.loads(message["content"])["ok"] is True


def test_a_failed_anthropic_call_is_marked_is_error(runner: Runner, xerj: XerjStandIn) -> None:
    unknown = runner.run(tool_use("xerj_lookup", {}))
    missing = runner.run(tool_use("xerj_search", {"index": "nope", "query": {}}, "toolu_2"))
    for result, code in ((unknown, "unknown_tool"), (missing, "index_not_found")):
        message: Any = result.message
        assert result.code == code and message["is_error"] is True
        assert json.loads(message["content"])["error"]["code"] == code


@pytest.mark.parametrize("arguments", ['{"index": "docs", "query": {}}', ["docs"], None, 3])
def test_an_input_that_is_not_an_object_is_invalid_arguments(
    runner: Runner, xerj: XerjStandIn, arguments: Any
) -> None:
    result = runner.run(tool_use("xerj_search", arguments))
    message: Any = result.message
    assert result.code == "invalid_arguments" and message["is_error"] is True
    assert "input must be a JSON object" in json.loads(message["content"])["error"]["reason"]
    assert xerj.requests == []


def test_a_turn_of_tool_use_blocks_is_answered_in_one_user_message(runner: Runner) -> None:
    calls = [tool_use("xerj_search", {**SEARCH, "size": 1}, "toolu_a"),
             tool_use("xerj_lookup", {}, "toolu_b"),
             ToolUseBlock(id="toolu_c", name="xerj_search", input=SEARCH)]  # fmt: skip
    transcript: list[Any] = [{"role": "user", "content": "checkout?"}]
    answers = [r.message for r in runner.run_many(calls, transcript=transcript)]
    assert [a["tool_use_id"] for a in answers] == ["toolu_a", "toolu_b", "toolu_c"]
    assert [a["is_error"] for a in answers] == [False, True, False]
    assert transcript[1:] == [{"role": "user", "content": answers}] == turn_messages(answers)


def test_an_interrupted_anthropic_turn_holds_cancelled_results_in_one_message() -> None:
    calls = [parse_tool_call(tool_use("xerj_search", SEARCH, f"toolu_{i}")) for i in range(3)]
    transcript: list[Any] = []
    pending = PendingAnswers(transcript, calls, before=[{"role": "assistant", "content": []}])
    (message,) = transcript[1:]
    assert [b["is_error"] for b in message["content"]] == [True, True, True]
    assert all(json.loads(b["content"])["error"]["code"] == "cancelled" for b in message["content"])
    done = calls[1].answer('{"ok": true}', ok=True)
    pending.put(1, done)
    assert message["content"][1] is done and len(transcript) == 2
    pending.by_id(turn_messages([calls[2].answer("{}", ok=True)]))
    assert pending.unanswered() == [0]


# Nothing falls through to the Chat shape.

NOT_CALLS = [
    ({"id": "x1"}, "keys id"),
    ({"type": "text", "text": "Let me search."}, "tool_use"),
    ({"role": "assistant", "tool_calls": []}, "message.tool_calls"),
    ("xerj_search", "str"),
    (None, "NoneType"),
]


@pytest.mark.parametrize(("obj", "named"), NOT_CALLS)
def test_an_object_of_no_known_shape_raises_and_says_what_it_was(obj: Any, named: str) -> None:
    with pytest.raises(InvalidToolCallError, match="not a tool call of any known shape") as caught:
        parse_tool_call(obj)
    assert named in str(caught.value)


def test_dispatch_many_refuses_a_turn_with_an_unknown_item_before_anything_happens(
    runner: Runner, xerj: XerjStandIn
) -> None:
    calls = [tool_use("xerj_search", SEARCH), {"type": "text", "text": "hm"}, {"id": "x"}]
    transcript: list[Any] = []
    with pytest.raises(InvalidToolCallError, match=r"item 2: .*item 3: "):
        runner.run_many(calls, transcript=transcript)
    assert transcript == [] and xerj.requests == []


def test_the_agent_loop_says_it_speaks_the_openai_apis_only() -> None:
    with XerjStandIn() as xerj, Dispatcher(url=xerj.url) as d, \
            pytest.raises(ConfigurationError, match="'chat' or 'responses'"):  # fmt: skip
        run_agent(object(), model="m", messages="hi", dispatcher=d, options=AgentOptions(api="anthropic"))


# Offline validation.

TRANSCRIPT = [
    {"role": "user", "content": "Why did checkout break?"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Searching."},
        tool_use("xerj_search", SEARCH, "toolu_1"),
        tool_use("xerj_search", {"index": "docs", "query": {}, "size": -1}, "toolu_2"),
    ]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "{}"}]},
]  # fmt: skip


@pytest.mark.parametrize(
    "record",
    [
        TRANSCRIPT,
        {"model": "m", "max_tokens": 10, "messages": TRANSCRIPT},  # a request body
        TRANSCRIPT[1]["content"],  # a bare list of blocks
        {"type": "message", "role": "assistant", "content": TRANSCRIPT[1]["content"]},  # a response
    ],
    ids=["messages", "request", "blocks", "response"],
)
def test_the_calls_of_an_anthropic_record_are_found_and_validated(record: Any) -> None:
    found = list(find_calls(record))
    assert [(f.call_id, f.api) for f in found] == [("toolu_1", "anthropic"), ("toolu_2", "anthropic")]  # type: ignore[union-attr]
    summary = validate_calls(load_registry(), found)
    assert (summary.calls, summary.valid, summary.invalid, summary.failed) == (2, 1, 1, True)
    assert summary.reports[0].call.call_id == "toolu_2"  # type: ignore[union-attr]


def test_offline_an_anthropic_input_must_be_an_object() -> None:
    found = list(find_calls([tool_use("xerj_search", json.dumps(SEARCH))]))
    summary = validate_calls(load_registry(), found)
    assert summary.invalid == 1
    assert "input must be a JSON object" in summary.reports[0].problems[0].message


def _validate(text: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["validate", "-"], stdin=io.StringIO(text), stdout=out, stderr=io.StringIO())
    return code, out.getvalue()


def test_cli_validates_an_anthropic_transcript() -> None:
    """Before the adapters: "0 calls", exit 0."""
    code, out = _validate(json.dumps(TRANSCRIPT))
    assert code == 1
    assert "id toolu_2 xerj_search: invalid" in out and out.splitlines()[-1].startswith("2 calls: 1 valid")


def test_cli_a_valid_anthropic_transcript_exits_zero() -> None:
    turn = {"role": "assistant", "content": [tool_use("xerj_search", SEARCH)]}
    code, out = _validate(json.dumps([TRANSCRIPT[0], turn]))
    assert code == 0 and out.startswith("1 call: 1 valid")


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        ([{"type": "web_search_call", "id": "ws_1", "status": "completed"}], "web_search_call"),
        ([{"role": "assistant", "function_call": {"name": "xerj_search", "arguments": "{}"}}], "function_call"),
    ],
    ids=["hosted", "legacy-functions"],
)
def test_an_input_whose_call_like_items_no_shape_reads_does_not_pass(record: Any, kind: str) -> None:
    code, out = _validate(json.dumps(record))
    assert code == 1 and f"no tool call could be read: call-like items of no known shape: {kind}" in out
    summary = validate_calls(load_registry(), find_calls(record))
    assert summary.unrecognised == {kind: 1} and summary.failed


def test_call_like_items_beside_readable_calls_are_counted_not_failed() -> None:
    record = [{"type": "web_search_call", "id": "ws_1"}, tool_use("xerj_search", SEARCH)]
    found = list(find_calls(record))
    assert isinstance(found[0], Unrecognised) and isinstance(found[1], FoundCall)
    summary = validate_calls(load_registry(), found)
    assert (summary.calls, summary.failed, summary.as_dict()["unrecognised"]) == (1, False, {"web_search_call": 1})


def test_tool_definitions_in_a_request_body_are_not_calls() -> None:
    body = {"model": "m", "tools": load_registry().anthropic_tools() + load_registry().chat_tools(),
            "messages": TRANSCRIPT[:1]}  # fmt: skip
    assert list(find_calls(body)) == []
    code, out = _validate(json.dumps(body))
    # an input without a call never passes
    assert code == 1 and out.startswith("0 calls") and "no tool call recognised; formats tried" in out


@pytest.mark.parametrize("shape", [CHAT, RESPONSES], ids=lambda s: s.name)
def test_the_loop_shapes_read_a_model_turn(shape: WireShape) -> None:
    response = (
        {"choices": [{"message": {"role": "assistant", "content": None,
                                  "tool_calls": [_chat("c1", SEARCH)[0]]}, "finish_reason": "tool_calls"}]}
        if shape is CHAT
        else {"status": "completed", "output": [_responses("c1", SEARCH)[0]]}
    )  # fmt: skip
    step = shape.step(response)
    assert [(c.call_id, c.api) for c in step.calls] == [("c1", shape.name)] and step.finish_reason == "tool_calls"


# The docs page's Anthropic loop, run against the stand-in with a scripted client.

DOCS = Path(__file__).resolve().parents[2] / "docs" / "wire-shapes.md"


class TextBlock(pydantic.BaseModel):
    type: Literal["text"] = "text"
    text: str


class ScriptedMessages:
    """`client.messages` of the anthropic SDK, answering from a script."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    def create(self, **request: Any) -> Any:
        self.requests.append({**request, "messages": list(request["messages"])})
        return type("Message", (), {"content": self.script.pop(0)})()


def test_the_docs_anthropic_loop_runs(xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    monkeypatch.setenv("XERJ_URL", xerj.url)
    monkeypatch.delenv("XERJ_API_KEY", raising=False)
    namespace: dict[str, Any] = {}
    exec(compile(block, str(DOCS), "exec"), namespace)
    messages = ScriptedMessages([
        [TextBlock(text="Searching."), ToolUseBlock(id="toolu_1", name="xerj_search", input=SEARCH),
         ToolUseBlock(id="toolu_2", name="xerj_search", input="not an object")],
        [TextBlock(text="A saturated pool slowed checkout.")],
    ])  # fmt: skip
    client = type("Client", (), {"messages": messages})()
    assert namespace["ask"](client, "a-model", "checkout?") == "A saturated pool slowed checkout."
    assert [r.path for r in xerj.requests] == ["/docs/_search"]
    second = messages.requests[1]
    assert second["tools"] == load_registry().anthropic_tools()
    answer = second["messages"][-1]
    assert answer["role"] == "user"
    assert [(b["tool_use_id"], b["is_error"]) for b in answer["content"]] == [("toolu_1", False), ("toolu_2", True)]
