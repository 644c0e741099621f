"""openai-agents end to end: its real `Runner.run` and chat-completions model, driven by the
scripted model, with the tools of `function_tools` running against the XERJ stand-in.

The SDK is imported by the tests that use it, not when the module is collected: it costs a
second or two of CPU, which every pytest-xdist worker would pay where one runs these tests."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("agents") is None:
    pytest.skip("openai-agents is not installed: pip install 'xerj-tools[openai-agents]'",
                allow_module_level=True)

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher, RetryPolicy
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

from conftest import openai_client

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}


def run(mode: str, script: list[Turn], xerj: XerjStandIn, api: str = "chat",
        **options: Any) -> tuple[Any, ScriptedModel]:
    """One `Runner.run` with a sync or async dispatcher, on the agents SDK's Chat Completions or
    Responses model; returns (run result, scripted model)."""
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner

    from xerj_tools.integrations.openai_agents import function_tools

    async def go(model: ScriptedModel) -> Any:
        client = openai_client(model.base_url, "async")
        if mode == "async":
            dispatcher: Any = AsyncDispatcher(url=xerj.url, **options)
        else:
            dispatcher = Dispatcher(url=xerj.url, **options)
        try:
            kind = OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel
            agent = Agent(name="search", instructions="Search XERJ.", tools=function_tools(dispatcher),
                          model=kind(model="scripted", openai_client=client))
            return await Runner.run(agent, "Why did checkout break?", max_turns=5,
                                    run_config=RunConfig(tracing_disabled=True))
        finally:
            await dispatcher.aclose() if mode == "async" else dispatcher.close()
            await client.close()

    with ScriptedModel(script) as model:
        return asyncio.run(go(model)), model


def answers(model: ScriptedModel, request: int = 1) -> dict[str, dict[str, Any]]:
    """Tool answers by call id, as the model was sent them in request number `request`."""
    sent = model.requests[request]
    if "input" in sent:  # the Responses API
        return {i["call_id"]: json.loads(i["output"]) for i in sent["input"] if i.get("type") == "function_call_output"}
    return {m["tool_call_id"]: json.loads(m["content"]) for m in sent["messages"] if m["role"] == "tool"}


def test_the_tools_keep_their_schemas_unstrict() -> None:
    from xerj_tools.integrations.openai_agents import function_tools

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        tools = function_tools(dispatcher)
        expected = {t["function"]["name"]: t["function"]["parameters"] for t in dispatcher.registry.chat_tools()}
    assert {t.name: t.params_json_schema for t in tools} == expected
    search = next(t for t in tools if t.name == "xerj_search")
    assert search.strict_json_schema is False
    assert search.params_json_schema["required"] == ["index", "query"]
    assert "additionalProperties" not in search.params_json_schema["properties"]["query"]


def test_names_pick_tools_and_unknown_names_raise() -> None:
    from xerj_tools.integrations.openai_agents import function_tools

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        assert [t.name for t in function_tools(dispatcher, names=["xerj_memory_recall"])] == ["xerj_memory_recall"]
        with pytest.raises(ConfigurationError, match="xerj_serch"):
            function_tools(dispatcher, names=["xerj_serch"])


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_valid_malformed_and_repaired_calls_are_answered(mode: str, api: str, xerj: XerjStandIn,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    hops: list[Any] = []
    to_thread = asyncio.to_thread

    def counted(function: Any, *args: Any) -> Any:
        hops.append(function)
        return to_thread(function, *args)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    script = [Turn(tool_calls=[("xerj_search", SEARCH),
                               ("xerj_search", '{"index": "docs", "query": {"match": '),
                               ("xerj_search", {"index": "docs", "query": {"match_all": {}, "size": 1}})]),
              Turn(text="A bad index template broke checkout.")]
    result, model = run(mode, script, xerj, api)
    ours = [f for f in hops if getattr(f, "__self__", None).__class__ is Dispatcher]
    assert len(ours) == (0 if mode == "async" else 2)  # the calls sent; an async dispatcher never hops
    assert result.final_output == "A bad index template broke checkout."
    # the tools went out as published, not rewritten to strict
    tools = model.requests[0]["tools"]
    sent = {t["function"]["name"]: t["function"] for t in tools} if api == "chat" else {t["name"]: t for t in tools}
    assert sent["xerj_search"].get("strict") is not True
    assert sent["xerj_search"]["parameters"]["required"] == ["index", "query"]
    assert "additionalProperties" not in sent["xerj_search"]["parameters"]["properties"]["query"]
    got = answers(model)
    assert list(got) == ["call_1", "call_2", "call_3"]
    assert got["call_1"]["ok"] is True and got["call_1"]["hits"]
    assert got["call_2"]["ok"] is False and got["call_2"]["error"]["code"] == "invalid_json"
    assert got["call_3"]["ok"] is True and got["call_3"]["repairs"]  # size moved out of query
    assert [r.path for r in xerj.requests] == ["/docs/_search", "/docs/_search"]


def test_identical_calls_in_flight_together_are_sent_once(mode: str, xerj: XerjStandIn) -> None:
    # The first search is held at the stand-in, so that its twin surely arrives while it is in flight.
    xerj.fail_next(Fault(delay=0.5, match="_search"))
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_search", SEARCH),
                               ("xerj_memory_recall", {"namespace": "agent", "query": "tea"})]),
              Turn(tool_calls=[("xerj_search", SEARCH)]),
              Turn(text="Done.")]
    result, model = run(mode, script, xerj)
    assert result.final_output == "Done."
    assert [r.path for r in xerj.requests].count("/docs/_search") == 2  # once per turn
    got = answers(model)
    assert got["call_1"]["ok"] is True and "notes" not in got["call_1"]
    assert got["call_2"]["hits"] == got["call_1"]["hits"]
    assert "identical to call call_1 in this turn" in got["call_2"]["notes"][-1]
    assert "notes" not in answers(model, 2)["call_4"]  # the next turn asks again


def test_an_engine_failure_reaches_the_model(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(500)
    script = [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(text="XERJ is failing.")]
    result, model = run(mode, script, xerj, retry=RetryPolicy(max_attempts=1))
    assert result.final_output == "XERJ is failing."
    error = answers(model)["call_1"]
    assert error["ok"] is False and error["error"]["code"] == "server_error" and error["error"]["status"] == 500


def test_a_call_cancelled_while_its_twin_waits_still_answers_the_twin(xerj: XerjStandIn) -> None:
    from agents.tool_context import ToolContext
    from agents.usage import Usage

    from xerj_tools.integrations.openai_agents import function_tools

    xerj.fail_next(Fault(delay=0.3, match="_search"))
    usage = Usage()  # one run's

    def context(call_id: str) -> ToolContext[Any]:
        return ToolContext(context=None, usage=usage, tool_name="xerj_search", tool_call_id=call_id,
                           tool_arguments=json.dumps(SEARCH))

    async def go() -> tuple[dict[str, Any], bool]:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            invoke = function_tools(dispatcher, names=["xerj_search"])[0].on_invoke_tool
            first = asyncio.ensure_future(invoke(context("a"), json.dumps(SEARCH)))
            await asyncio.sleep(0)
            twin = asyncio.ensure_future(invoke(context("b"), json.dumps(SEARCH)))
            await asyncio.sleep(0)
            first.cancel()
            answer = json.loads(await twin)
            return answer, first.cancelled()

    answer, cancelled = asyncio.run(go())
    assert cancelled and answer["ok"] is True and answer["hits"]
    assert len(xerj.requests) == 1


def test_each_runs_context_selects_its_policy_with_two_tenants_interleaved(mode: str, xerj: XerjStandIn) -> None:
    """One dispatcher, one tool list, two tenants' runs at once: the `context` each run is given
    names its policy (through `RunContextWrapper.context`), and neither sees the other's index."""
    from dataclasses import dataclass

    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    from xerj_tools import Policy
    from xerj_tools.integrations.openai_agents import function_tools

    @dataclass
    class Tenant:
        name: str
        policy: Policy

    tenants = {"a": ("docs", "tickets"), "b": ("tickets", "docs")}

    def script(own: str, other: str) -> list[Turn]:
        return [Turn(tool_calls=[("xerj_search", {"index": own, "query": {"match_all": {}}, "size": 1}),
                                 ("xerj_search", {"index": other, "query": {"match_all": {}}}),
                                 ("xerj_get_document", {"index": other, "id": "1"}),
                                 ("xerj_list_indices", {})]),
                Turn(text="Done.")]

    # tenant a's own search is held at XERJ, so that b's whole run happens while a's calls run
    xerj.fail_next(Fault(delay=0.3, match="/docs/_search"))
    with ScriptedModel(script(*tenants["a"])) as model_a, ScriptedModel(script(*tenants["b"])) as model_b:
        models = {"a": model_a, "b": model_b}

        async def go() -> None:
            clients = {t: openai_client(m.base_url, "async") for t, m in models.items()}
            dispatcher: Any = AsyncDispatcher(url=xerj.url) if mode == "async" else Dispatcher(url=xerj.url)
            tools = function_tools(dispatcher, policy=lambda ctx: ctx.context.policy)
            try:
                runs = [Runner.run(Agent(name="search", tools=tools,
                                         model=OpenAIChatCompletionsModel(model="scripted", openai_client=clients[t])),
                                   "Why?", context=Tenant(t, Policy(allow_indices=(own,))), max_turns=3,
                                   run_config=RunConfig(tracing_disabled=True))
                        for t, (own, _) in tenants.items()]
                await asyncio.gather(*runs)
            finally:
                await dispatcher.aclose() if mode == "async" else dispatcher.close()
                for client in clients.values():
                    await client.close()

        asyncio.run(go())
    for tenant, (own, _) in tenants.items():
        got = answers(models[tenant])
        assert got["call_1"]["ok"] is True and {h["_index"] for h in got["call_1"]["hits"]} == {own}, tenant
        assert got["call_2"]["error"]["code"] == "policy_denied", tenant
        assert got["call_3"]["error"]["code"] == "policy_denied", tenant
        assert [i["name"] for i in got["call_4"]["indices"]] == [own], tenant
    assert sorted(r.path for r in xerj.requests if r.path.endswith("_search")) == ["/docs/_search", "/tickets/_search"]


def test_a_policy_function_that_gives_no_policy_refuses_the_call(xerj: XerjStandIn) -> None:
    from xerj_tools.integrations.openai_agents import function_tools

    script = [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(text="Done.")]
    with Dispatcher(url=xerj.url) as dispatcher:
        tools = function_tools(dispatcher, policy=lambda ctx: ctx.context["missing"])  # raises KeyError
        _, model = run_tools(script, tools)
    assert answers(model)["call_1"]["error"]["code"] == "policy_denied"
    assert xerj.requests == []


def run_tools(script: list[Turn], tools: list[Any], **run: Any) -> tuple[Any, ScriptedModel]:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    async def go(model: ScriptedModel) -> Any:
        client = openai_client(model.base_url, "async")
        try:
            agent = Agent(name="search", tools=tools,
                          model=OpenAIChatCompletionsModel(model="scripted", openai_client=client))
            return await Runner.run(agent, "Why?", context={}, max_turns=5,
                                    run_config=run.pop("run_config", RunConfig(tracing_disabled=True)))
        finally:
            await client.close()

    with ScriptedModel(script) as model:
        return asyncio.run(go(model)), model


def test_calls_past_the_turn_bound_are_answered_not_run_and_the_next_turn_starts_afresh(xerj: XerjStandIn) -> None:
    from xerj_tools.integrations.openai_agents import function_tools

    searches = [("xerj_search", {**SEARCH, "size": n}) for n in (1, 2, 3)]
    script = [Turn(tool_calls=searches), Turn(tool_calls=searches[:2]), Turn(text="Done.")]
    with Dispatcher(url=xerj.url) as dispatcher:
        result, model = run_tools(script, function_tools(dispatcher, max_calls_per_turn=2))
    assert result.final_output == "Done."
    first, second = answers(model, 1), answers(model, 2)
    assert [first[f"call_{i}"]["ok"] for i in (1, 2)] == [True, True]
    assert first["call_3"]["error"]["code"] == "too_many_calls"
    assert [second[f"call_{i}"]["ok"] for i in (4, 5)] == [True, True]
    assert len(xerj.requests) == 4


def test_one_otel_execute_tool_span_per_call_beside_the_agents_own_tracing(xerj: XerjStandIn) -> None:
    """openai-agents traces with its own processors, not OpenTelemetry: each call has one
    function span there and one `execute_tool` span in OpenTelemetry (xerj-tools')."""
    from agents import RunConfig, set_trace_processors, set_tracing_disabled
    from agents.tracing import TracingProcessor

    from xerj_tools.integrations.openai_agents import function_tools

    from otel_support import tool_spans, traced

    class Collect(TracingProcessor):  # type: ignore[misc]
        def __init__(self) -> None:
            self.spans: list[Any] = []

        def on_trace_start(self, trace: Any) -> None: ...
        def on_trace_end(self, trace: Any) -> None: ...
        def on_span_start(self, span: Any) -> None: ...
        def on_span_end(self, span: Any) -> None:
            self.spans.append(span.span_data)
        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    collect = Collect()
    set_trace_processors([collect])  # the agents' own tracing on, uploading nothing
    set_tracing_disabled(False)  # whatever OPENAI_AGENTS_DISABLE_TRACING said when agents read it
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_search", '{"index": "docs", "query": {"match": ')]),
              Turn(text="Done.")]
    try:
        with traced() as (_, exporter), Dispatcher(url=xerj.url) as dispatcher:
            run_tools(script, function_tools(dispatcher), run_config=RunConfig(tracing_disabled=False))
            spans = tool_spans(exporter)
    finally:
        set_trace_processors([])
        set_tracing_disabled(True)
    functions = [s for s in collect.spans if type(s).__name__ == "FunctionSpanData"]
    assert sorted(f.name for f in functions) == ["xerj_search", "xerj_search"]
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in spans) == ["call_1", "call_2"]
    broken = next(s for s in spans if s.attributes["gen_ai.tool.call.id"] == "call_2")
    assert broken.attributes["error.type"] == "invalid_json"


def test_openai_agents_refuses_a_call_without_an_id_before_any_tool_runs(xerj: XerjStandIn) -> None:
    """What openai-agents does by itself with a call whose id is empty: the run ends with
    `ModelBehaviorError` before any tool runs, so no call is left half-answered and nothing is
    sent (docs/integrations.md)."""
    from agents.exceptions import ModelBehaviorError

    from xerj_tools.integrations.openai_agents import function_tools

    class WithoutIds(Turn):
        def raw_calls(self, ids: Any) -> list[tuple[str, str, str]]:
            return [("", name, raw) for _, name, raw in super().raw_calls(ids)]

    script = [WithoutIds(tool_calls=[("xerj_search", SEARCH), ("xerj_search", SEARCH)]), Turn(text="Done.")]
    with Dispatcher(url=xerj.url) as dispatcher, pytest.raises(ModelBehaviorError, match="call ID"):
        run_tools(script, function_tools(dispatcher))
    assert xerj.requests == []
