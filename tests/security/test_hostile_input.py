"""Hostile model input: arguments nested at any depth, non-finite numbers and arguments of the
wrong type get a tool message through every entry point (sync and async `dispatch`,
`dispatch_many`, `run_agent`, `registry.validate`); nothing raises and nothing is sent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from support import nested

from xerj_tools import (
    MAX_ARGUMENT_DEPTH,
    AgentOptions,
    AsyncDispatcher,
    Dispatcher,
    load_registry,
    run_agent,
)
from xerj_tools._agent._turns import call_key
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

from conftest import Runner, chat_call, openai_client, responses_call

REGISTRY = load_registry()


def deep_text(levels: int, where: str = "filter") -> str:
    """A search whose bool filter is nested `levels` arrays deep, as the model would send it."""
    inner = "[" * levels + "1" + "]" * levels
    if where == "query":  # the whole query, sent as a JSON string the repair would decode
        return json.dumps({"index": "docs", "query": inner})
    return '{"index": "docs", "query": {"bool": {"filter": ' + inner + "}}}"


DEEP = [
    pytest.param(deep_text(1_000), "invalid_json", id="1k-levels"),
    pytest.param(deep_text(100_000), "invalid_json", id="100k-levels"),
    pytest.param(deep_text(MAX_ARGUMENT_DEPTH), "invalid_json", id="just-past-the-limit"),
    pytest.param(deep_text(100_000, "query"), "invalid_arguments", id="inside-a-json-string"),
    pytest.param({"index": "docs", "query": {"bool": {"filter": nested(5_000)}}}, "invalid_arguments",
                 id="decoded-dict"),
]
NON_FINITE = [
    pytest.param('{"index": "docs", "query": {"range": {"price": {"gte": 1e400}}}}', "$.query.range.price.gte",
                 id="1e400"),
    pytest.param('{"index": "docs", "query": {"bool": {"filter": [{"range": {"p": {"lt": -1e999}}}]}}}',
                 "$.query.bool.filter[0].range.p.lt", id="-1e999-in-a-list"),
    pytest.param({"index": "docs", "query": {"range": {"price": {"gte": float("nan")}}}}, "$.query.range.price.gte",
                 id="nan-in-a-dict"),
    pytest.param({"index": "docs", "query": {"match_all": {}}, "aggs": {"a": {"histogram": {"interval": float("inf")}}}},
                 "$.aggs.a.histogram.interval", id="inf-in-aggs"),
]


def shallow(levels: int) -> str:
    """A search whose arguments are exactly `levels` deep (the arguments object is level 1)."""
    inner = "[" * (levels - 4) + "{}" + "]" * (levels - 4)
    return '{"index": "docs", "query": {"bool": {"filter": ' + inner + "}}}"


def error_of(result: Any) -> dict[str, Any]:
    payload = json.loads(result.content)
    assert payload["ok"] is False
    return payload["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("arguments", "code"), DEEP)
def test_deep_arguments_are_refused_with_the_limit(runner: Runner, xerj: XerjStandIn, arguments: Any,
                                                   code: str) -> None:
    if isinstance(arguments, str):
        calls = [chat_call("xerj_search", arguments), responses_call("xerj_search", arguments)]
    else:  # arguments an SDK or a caller already decoded
        calls = [{"type": "function_call", "call_id": "c1", "name": "xerj_search", "arguments": arguments},
                 {"id": "c2", "type": "function", "function": {"name": "xerj_search", "arguments": arguments}}]
    for call in calls:
        error = error_of(runner.run(call))
        assert error["code"] == code
        assert f"nested deeper than {MAX_ARGUMENT_DEPTH} levels" in json.dumps(error)
    assert xerj.requests == []


def test_arguments_at_the_depth_limit_are_served(runner: Runner, xerj: XerjStandIn) -> None:
    result = runner.run(chat_call("xerj_search", shallow(MAX_ARGUMENT_DEPTH)))
    assert result.code not in ("invalid_json", "invalid_arguments")
    assert len(xerj.requests) == 1  # sent: whatever the engine makes of it, the limit let it through
    error = error_of(runner.run(chat_call("xerj_search", shallow(MAX_ARGUMENT_DEPTH + 1))))
    assert error["code"] == "invalid_json" and str(MAX_ARGUMENT_DEPTH) in error["reason"]


def test_a_dict_that_contains_itself_is_refused(runner: Runner, xerj: XerjStandIn) -> None:
    query: dict[str, Any] = {"bool": {}}
    query["bool"]["must"] = query
    call = {"type": "function_call", "call_id": "c1", "name": "xerj_search",
            "arguments": {"index": "docs", "query": query}}
    error = error_of(runner.run(call))
    assert error["code"] == "invalid_arguments" and "nested deeper" in json.dumps(error)
    assert xerj.requests == []


@pytest.mark.parametrize(("arguments", "path"), NON_FINITE)
def test_non_finite_numbers_are_refused_with_their_path(runner: Runner, xerj: XerjStandIn, arguments: Any,
                                                        path: str) -> None:
    call = (chat_call("xerj_search", arguments) if isinstance(arguments, str)
            else {"type": "function_call", "call_id": "c1", "name": "xerj_search", "arguments": arguments})
    error = error_of(runner.run(call))
    assert error["code"] == "invalid_arguments"
    assert error["problems"] == [{"path": path, "message": error["problems"][0]["message"]}]
    assert "finite" in error["problems"][0]["message"]
    assert xerj.requests == []


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_literals_are_not_json(runner: Runner, xerj: XerjStandIn, literal: str) -> None:
    raw = '{"index": "docs", "query": {"range": {"p": {"gte": ' + literal + "}}}}"
    assert error_of(runner.run(chat_call("xerj_search", raw)))["code"] == "invalid_json"
    assert xerj.requests == []


def test_a_repaired_number_must_be_finite(runner: Runner, xerj: XerjStandIn) -> None:
    arguments = {"namespace": "agent", "text": "t", "dedup_threshold": "1e400"}
    error = error_of(runner.run(chat_call("xerj_memory_store", arguments)))
    assert error["code"] == "invalid_arguments" and "$.dedup_threshold" in json.dumps(error)
    assert xerj.requests == []


@pytest.mark.parametrize("arguments", [5, [1, 2], ["index", "docs"], 2.5, True, nested(10_000)])
def test_non_string_arguments_are_invalid_json(runner: Runner, xerj: XerjStandIn, arguments: Any) -> None:
    responses = {"type": "function_call", "call_id": "c1", "name": "xerj_search", "arguments": arguments}
    chat = {"id": "c2", "type": "function", "function": {"name": "xerj_search", "arguments": arguments}}
    for call in (responses, chat):
        error = error_of(runner.run(call))
        assert error["code"] == "invalid_json" and "JSON" in error["reason"]
    assert xerj.requests == []


def test_dispatch_many_answers_every_hostile_call(runner: Runner, xerj: XerjStandIn) -> None:
    calls = [chat_call("xerj_search", deep_text(100_000), "deep"),
             chat_call("xerj_search", NON_FINITE[0].values[0], "huge"),
             {"type": "function_call", "call_id": "five", "name": "xerj_search", "arguments": 5},
             chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}}, "fine")]
    results = runner.run_many(calls)
    assert [r.call.call_id for r in results] == ["deep", "huge", "five", "fine"]
    assert [r.code for r in results] == ["invalid_json", "invalid_arguments", "invalid_json", None]
    assert len(xerj.requests) == 1


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_registry_validate_reports_depth(levels: int) -> None:
    for arguments in (deep_text(levels), {"index": "docs", "query": {"bool": {"filter": nested(levels)}}}):
        result = REGISTRY.validate("xerj_search", arguments, repair=True)
        assert not result.ok and f"nested deeper than {MAX_ARGUMENT_DEPTH} levels" in result.summary()


def test_registry_validate_takes_non_string_arguments() -> None:
    result = REGISTRY.validate("xerj_search", 5)  # type: ignore[arg-type]
    assert not result.ok and result.decode_error and "JSON" in result.summary()


def test_the_loop_guard_key_survives_hostile_arguments() -> None:
    from xerj_tools import ToolCall

    assert call_key(ToolCall("c", "xerj_search", deep_text(100_000)))
    assert call_key(ToolCall("c", "xerj_search", {"q": nested(100_000)}))


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_run_agent_answers_hostile_calls(xerj: XerjStandIn, api: str, flavour: str) -> None:
    script = [Turn(tool_calls=[("xerj_search", deep_text(100_000)), ("xerj_search", NON_FINITE[0].values[0])]),
              Turn(text="done")]
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with ScriptedModel(script) as model:
        if flavour == "sync":
            with openai_client(model.base_url) as client, \
                    Dispatcher(url=xerj.url) as dispatcher:
                result = run_agent(client, model="scripted", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api))
        else:
            from xerj_tools import arun_agent

            async def go() -> Any:
                async with openai_client(model.base_url, "async") as client, \
                        AsyncDispatcher(url=xerj.url) as dispatcher:
                    return await arun_agent(client, model="scripted", messages=messages, dispatcher=dispatcher, options=AgentOptions(api=api))

            result = asyncio.run(go())
    assert result.completed and result.output_text == "done"
    answers = [json.loads(m.get("content") or m.get("output")) for m in messages
               if m.get("role") == "tool" or m.get("type") == "function_call_output"]
    assert [a["error"]["code"] for a in answers] == ["invalid_json", "invalid_arguments"]
    assert xerj.requests == []


def test_a_number_too_long_to_print_is_refused(runner: Runner, xerj: XerjStandIn) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "xerj_search",
            "arguments": {"index": "docs", "query": {"range": {"n": {"gte": 10**5000}}}}}
    error = error_of(runner.run(call))
    assert error["code"] == "invalid_arguments" and "$.query.range.n.gte" in json.dumps(error)
    assert xerj.requests == []


@pytest.mark.parametrize("number", ["1e400", "-1E+309", "1" * 320 + ".5", "2" * 400, "0.5e0400", "9" * 210 + "e99"])
def test_every_number_that_overflows_is_caught_in_short_text(number: str) -> None:
    from xerj_tools._bounds import may_overflow

    raw = '{"index": "docs", "query": {"range": {"n": {"gte": ' + number + "}}}}"
    assert may_overflow(raw)
    result = REGISTRY.validate("xerj_search", raw)
    assert not result.ok and result.problems[0].path == "$.query.range.n.gte"


def test_ordinary_numbers_skip_the_walk() -> None:
    from xerj_tools._bounds import may_overflow

    assert not may_overflow(json.dumps({"index": "docs", "size": 10, "x": [0.1234567890123456789, -3e-12, 1e99]}))


@pytest.mark.parametrize("bad", ["1e400", "-1e999", "1" * 400])
def test_a_long_vector_is_checked_item_by_item(bad: str) -> None:
    numbers = ["0.25"] * 1_000
    numbers[500] = bad
    raw = '{"index": "docs", "field": "v", "query_vector": [' + ", ".join(numbers) + "]}"
    result = REGISTRY.validate("xerj_vector_search", raw)
    assert not result.ok and [p.path for p in result.problems] == ["$.query_vector[500]"]


def test_a_non_json_value_in_a_long_list_is_refused() -> None:
    from decimal import Decimal

    vector: list[Any] = [0.25] * 100
    vector[50] = Decimal("0.5")
    result = REGISTRY.validate("xerj_vector_search", {"index": "docs", "field": "v", "query_vector": vector})
    assert not result.ok and "$.query_vector[50]" in result.summary() and "JSON value" in result.summary()


def test_the_repr_of_a_hostile_call_is_short() -> None:
    from xerj_tools import ToolCall

    call = ToolCall("c", "xerj_search", {"query": nested(100_000)})
    text = repr(call)
    assert text.startswith("ToolCall(call_id='c', name='xerj_search', arguments={") and len(text) < 400
    assert len(repr(ToolCall("c", "x", "a" * 10_000))) < 400
