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
