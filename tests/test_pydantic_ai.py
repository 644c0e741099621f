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
    assert sent["xerj_search"].strict is None


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
