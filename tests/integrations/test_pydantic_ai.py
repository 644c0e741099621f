"""pydantic-ai end to end: its real `Agent.run` over its own `FunctionModel` and `TestModel`, with
`XerjToolset` running against the XERJ stand-in.

pydantic-ai is imported by the tests that use it, not when the module is collected."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("pydantic_ai") is None:
    pytest.skip("pydantic-ai is not installed: pip install 'xerj-tools[pydantic-ai]'", allow_module_level=True)

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher
from xerj_tools.testing import Fault, XerjStandIn

pytestmark = pytest.mark.usefixtures("loopback_only")  # nothing may reach a vendor's servers

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
BROKEN = '{"index": "docs", "query": {"match": '


def scripted(turns: list[list[tuple[str, Any]]], seen: list[Any]) -> Any:
    """A `FunctionModel` that sends each turn's calls ``(tool, arguments)`` in order, ids
    ``call_1``..., then says "Done."; `seen` gets each request's messages."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    ids = iter(range(1, 100))

    def respond(messages: list[Any], info: Any) -> Any:
        seen.append(list(messages))
        if len(seen) > len(turns):
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call_{next(ids)}")
                                    for name, args in turns[len(seen) - 1]])

    return FunctionModel(respond)


def returns(messages: list[Any]) -> dict[str, Any]:
    """Tool returns by call id, from the last request the model saw."""
    from pydantic_ai.messages import ModelRequest, RetryPromptPart, ToolReturnPart

    found: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    found[part.tool_call_id] = json.loads(part.content)
                elif isinstance(part, RetryPromptPart):
                    found[part.tool_call_id] = "retry"
    return found


def run(mode: str, xerj: XerjStandIn, turns: list[list[tuple[str, Any]]]) -> tuple[Any, list[Any]]:
    from pydantic_ai import Agent

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    seen: list[Any] = []

    async def go() -> Any:
        dispatcher: Any = AsyncDispatcher(url=xerj.url) if mode == "async" else Dispatcher(url=xerj.url)
        try:
            agent = Agent(scripted(turns, seen), toolsets=[XerjToolset(dispatcher)])
            return await agent.run("Why did checkout break?")
        finally:
            await dispatcher.aclose() if mode == "async" else dispatcher.close()

    return asyncio.run(go()), seen


def test_tool_definitions_are_the_registrys() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    infos: list[AgentInfo] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        asyncio.run(Agent(FunctionModel(respond), toolsets=[XerjToolset(dispatcher)]).run("hi"))
        expected = {spec.name: dict(spec.parameters) for spec in dispatcher.registry}
        with pytest.raises(ConfigurationError, match="xerj_serch"):
            XerjToolset(dispatcher, names=["xerj_serch"])
    sent = {t.name: t for t in infos[0].function_tools}
    assert {n: t.parameters_json_schema for n, t in sent.items()} == expected
    assert all(t.strict is False for t in sent.values())


def test_valid_malformed_and_identical_calls_are_each_answered_once(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=0.3, match="_search"))  # the first search is still in flight when its twin comes
    turns = [[("xerj_search", SEARCH), ("xerj_search", BROKEN), ("xerj_search", json.dumps(SEARCH)),
              ("xerj_search", {"index": "docs", "query": {"match_all": {}, "size": 1}}),
              ("xerj_memory_recall", {"namespace": "agent"})]]
    result, seen = run(mode, xerj, turns)
    assert result.output == "Done."
    got = returns(seen[-1])
    assert list(got) == ["call_1", "call_2", "call_3", "call_4", "call_5"]  # every call answered once, none retried
    assert got["call_1"]["ok"] is True and got["call_1"]["hits"]
    assert got["call_2"]["ok"] is False and got["call_2"]["error"]["code"] == "invalid_json"
    assert got["call_3"]["hits"] == got["call_1"]["hits"] and "identical to call call_1" in got["call_3"]["notes"][-1]
    assert got["call_4"]["ok"] is True and got["call_4"]["repairs"]
    assert got["call_5"]["ok"] is False and got["call_5"]["error"]["code"] == "invalid_arguments"
    assert [r.path for r in xerj.requests] == ["/docs/_search", "/docs/_search"]  # the pair sent once


def test_pydantic_ai_s_own_test_model_runs_the_toolset(xerj: XerjStandIn) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    xerj.add_documents("a", {"a": {"t": "x"}})  # TestModel writes "a" for each string
    with Dispatcher(url=xerj.url) as dispatcher:
        agent = Agent(TestModel(call_tools=["xerj_get_document"]), toolsets=[XerjToolset(dispatcher)])
        result = asyncio.run(agent.run("Fetch a document."))
    answer = json.loads(json.loads(result.output)["xerj_get_document"])
    assert "ok" in answer  # the envelope, whatever TestModel made up ("a" for each string)
    assert xerj.requests[0].path == "/a/_doc/a"


def _bare_objects_closed(sent: Any, original: Any, path: str = "") -> list[str]:
    """Where `sent` differs from `original` beyond ``"properties": {}`` added to an object that
    had none (the one change pydantic-ai's OpenAI transformer makes to a non-strict schema)."""
    if isinstance(sent, dict) and isinstance(original, dict):
        found = []
        for key in sorted(set(sent) | set(original)):
            if key == "properties" and key not in original and sent[key] == {}:
                continue
            if key not in sent or key not in original:
                found.append(f"{path}/{key}: {original.get(key, '-')!r:.40} -> {sent.get(key, '-')!r:.40}")
            else:
                found += _bare_objects_closed(sent[key], original[key], f"{path}/{key}")
        return found
    if isinstance(sent, list) and isinstance(original, list) and len(sent) == len(original):
        return [d for i, (a, b) in enumerate(zip(sent, original, strict=True)) for d in _bare_objects_closed(a, b, f"{path}/{i}")]
    return [] if sent == original else [f"{path}: {original!r:.40} -> {sent!r:.40}"]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_models_send_the_registrys_schemas_open_and_not_strict(api: str) -> None:
    """What pydantic-ai's real OpenAI models put on the wire, read by a model server on 127.0.0.1:
    no object closed (`query`, `aggs`, `filter`… stay open) and no tool sent strict."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from xerj_tools.integrations.pydantic_ai import XerjToolset
    from xerj_tools.testing import ScriptedModel, Turn

    from conftest import openai_client

    async def go(model: ScriptedModel) -> None:
        client = openai_client(model.base_url, "async")
        kind = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
        with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
            agent = Agent(kind("scripted", provider=OpenAIProvider(openai_client=client)),
                          toolsets=[XerjToolset(dispatcher)])
            await agent.run("hi")
        await client.close()

    with ScriptedModel([Turn(text="Done.")]) as model:
        asyncio.run(go(model))
    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        registry = {spec.name: dict(spec.parameters) for spec in dispatcher.registry}
    tools = model.requests[0]["tools"]
    sent = {t["function"]["name"]: t["function"] for t in tools} if api == "chat" else {t["name"]: t for t in tools}
    assert set(sent) == set(registry)
    assert {name: t.get("strict") for name, t in sent.items() if t.get("strict")} == {}
    assert {name: _bare_objects_closed(t["parameters"], registry[name]) for name, t in sent.items()} == {
        name: [] for name in registry}
    assert "additionalProperties" not in sent["xerj_search"]["parameters"]["properties"]["query"]


def test_one_execute_tool_span_per_call_under_pydantic_ai_instrumentation(xerj: XerjStandIn) -> None:
    """pydantic-ai's instrumentation makes an `execute_tool` span around each tool call; the
    call joins it (one span per call, whose status says what the model was answered)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    from otel_support import children, tool_spans, traced

    seen: list[Any] = []
    turns = [[("xerj_search", SEARCH), ("xerj_search", BROKEN), ("xerj_search", json.dumps(SEARCH))]]
    with traced() as (provider, exporter):
        async def go() -> Any:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                agent = Agent(scripted(turns, seen), toolsets=[XerjToolset(dispatcher)])
                agent.instrument = InstrumentationSettings(tracer_provider=provider)
                return await agent.run("Why did checkout break?")

        xerj.fail_next(Fault(delay=0.2, match="_search"))  # the twin comes while the first is in flight
        asyncio.run(go())
        spans = tool_spans(exporter)
    by_call = {s.attributes["gen_ai.tool.call.id"]: s for s in spans}
    assert len(spans) == 3 and set(by_call) == {"call_1", "call_2", "call_3"}  # one span per call
    assert all(s.instrumentation_scope.name != "xerj_tools" for s in spans)  # pydantic-ai's own
    broken = by_call["call_2"]
    assert broken.status.status_code.name == "ERROR" and broken.attributes["error.type"] == "invalid_json"
    assert by_call["call_1"].status.status_code.name != "ERROR"
    assert by_call["call_1"].attributes["xerj_tools.attempts"] == 1
    assert [c.name for c in children(exporter, by_call["call_1"])] == ["GET /_resolve/index/*", "POST /{index}/_search"]  # the listing read first (names are resolved)
    assert by_call["call_3"].attributes["xerj_tools.copy_of"] == "call_1"


TENANTS = {"a": {"own": "docs", "other": "tickets"}, "b": {"own": "tickets", "other": "docs"}}


def test_each_runs_deps_select_its_policy_with_two_tenants_interleaved(xerj: XerjStandIn) -> None:
    """One dispatcher, one toolset, two tenants whose runs overlap: each run's `deps` names its
    policy, and neither sees the other's index (searched, read or listed)."""
    from dataclasses import dataclass

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from xerj_tools import Policy
    from xerj_tools.integrations.pydantic_ai import XerjToolset

    @dataclass
    class Deps:
        tenant: str
        policy: Policy

    seen: dict[str, list[Any]] = {"a": [], "b": []}
    both_asked = asyncio.Event()

    async def respond(messages: list[Any], info: Any) -> ModelResponse:
        tenant = messages[0].parts[-1].content  # the prompt is the tenant's name
        seen[tenant].append(list(messages))
        if len(seen[tenant]) == 1:
            if seen["a"] and seen["b"]:
                both_asked.set()
            await both_asked.wait()  # both runs are at their first turn before either goes on
            own, other = TENANTS[tenant]["own"], TENANTS[tenant]["other"]
            return ModelResponse(parts=[
                ToolCallPart("xerj_search", {"index": own, "query": {"match_all": {}}, "size": 1}, tool_call_id="own"),
                ToolCallPart("xerj_search", {"index": other, "query": {"match_all": {}}}, tool_call_id="other"),
                ToolCallPart("xerj_search", {"index": "*", "query": {"match_all": {}}}, tool_call_id="star"),
                ToolCallPart("xerj_get_document", {"index": other, "id": "1"}, tool_call_id="get"),
                ToolCallPart("xerj_list_indices", {}, tool_call_id="list")])
        return ModelResponse(parts=[TextPart("Done.")])

    policies = {t: Policy(allow_indices=(v["own"],)) for t, v in TENANTS.items()}

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            agent = Agent(FunctionModel(respond), deps_type=Deps,
                          toolsets=[XerjToolset(dispatcher, policy=lambda ctx: ctx.deps.policy)])
            await asyncio.gather(*(agent.run(t, deps=Deps(t, policies[t])) for t in TENANTS))

    asyncio.run(go())
    for tenant, indices in TENANTS.items():
        got = returns(seen[tenant][-1])
        assert got["own"]["ok"] is True and {h["_index"] for h in got["own"]["hits"]} == {indices["own"]}
        for denied in ("other", "star", "get"):
            assert got[denied]["error"]["code"] == "policy_denied", (tenant, denied)
        assert [i["name"] for i in got["list"]["indices"]] == [indices["own"]]
    searched = sorted(r.path for r in xerj.requests if r.path.endswith("_search"))
    assert searched == ["/docs/_search", "/tickets/_search"]  # each tenant's own, nothing else


@pytest.mark.parametrize("choice", [lambda ctx: None, lambda ctx: {"allow_indices": ["docs"]}, lambda ctx: 1 / 0])
def test_a_policy_function_that_gives_no_policy_refuses_the_call(choice: Any, xerj: XerjStandIn) -> None:
    from pydantic_ai import Agent

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    seen: list[Any] = []

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            agent = Agent(scripted([[("xerj_search", SEARCH)]], seen), toolsets=[XerjToolset(dispatcher, policy=choice)])
            await agent.run("hi")

    asyncio.run(go())
    assert returns(seen[-1])["call_1"]["error"]["code"] == "policy_denied"
    assert xerj.requests == []  # nothing sent under the dispatcher's own (wider) policy


def test_a_policy_that_is_no_policy_nor_function_raises_at_once() -> None:
    from xerj_tools.integrations.pydantic_ai import XerjToolset

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher, pytest.raises(ConfigurationError, match="policy="):
        XerjToolset(dispatcher, policy="docs")  # type: ignore[arg-type]


def test_calls_past_the_turn_bound_are_answered_not_run_and_the_next_turn_starts_afresh(xerj: XerjStandIn) -> None:
    from pydantic_ai import Agent

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    searches = [("xerj_search", {**SEARCH, "size": n}) for n in (1, 2, 3)]
    seen: list[Any] = []

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            agent = Agent(scripted([searches, searches[:2]], seen),
                          toolsets=[XerjToolset(dispatcher, max_calls_per_turn=2)])
            await agent.run("hi")

    asyncio.run(go())
    got = returns(seen[-1])
    assert [got[f"call_{i}"]["ok"] for i in (1, 2, 4, 5)] == [True] * 4
    assert got["call_3"]["error"]["code"] == "too_many_calls"
    assert len(xerj.requests) == 4  # the third call of the first turn was never sent


def test_a_call_without_an_id_is_answered(xerj: XerjStandIn) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from xerj_tools.integrations.pydantic_ai import XerjToolset

    seen: list[Any] = []

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:  # no tool_call_id: pydantic-ai makes one up
            return ModelResponse(parts=[ToolCallPart("xerj_search", SEARCH), ToolCallPart("xerj_search", BROKEN)])
        return ModelResponse(parts=[TextPart("Done.")])

    async def go() -> Any:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            return await Agent(FunctionModel(respond), toolsets=[XerjToolset(dispatcher)]).run("hi")

    assert asyncio.run(go()).output == "Done."
    got = list(returns(seen[-1]).values())
    assert [g["ok"] for g in got] == [True, False] and got[1]["error"]["code"] == "invalid_json"
