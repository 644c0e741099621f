"""Google ADK end to end: ADK's own `InMemoryRunner` over a scripted model (a `BaseLlm` of our
own, as ADK allows), with the tools of `adk_tools` running against the XERJ stand-in.

ADK is imported by the tests that use it, not when the module is collected; it installs with
google-genai 2.x (google-adk 2.13 requires google-genai<3), so CI tests it in a venv of its own."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

if importlib.util.find_spec("google") is None or importlib.util.find_spec("google.adk") is None:
    pytest.skip("Google ADK is not installed: pip install 'xerj-tools[adk]'", allow_module_level=True)

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher
from xerj_tools.testing import Fault, XerjStandIn

pytestmark = pytest.mark.usefixtures("loopback_only")  # nothing may reach a vendor's servers

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}


def scripted_llm(turns: list[list[tuple[str, Any]]], requests: list[Any]) -> Any:
    """A `BaseLlm` that answers each request with the next turn's function calls (no ids, as
    Gemini sends them), then with "Done."."""
    from google.adk.models import BaseLlm, LlmResponse
    from google.genai import types

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            requests.append(llm_request)
            at = len(requests) - 1
            if at < len(turns):
                parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in turns[at]]
            else:
                parts = [types.Part(text="Done.")]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    return Scripted(model="scripted")


def run(mode: str, xerj: XerjStandIn, turns: list[list[tuple[str, Any]]], tools: Any = None) -> tuple[list[Any], list[Any]]:
    from google.adk.agents import Agent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from xerj_tools.integrations.adk import adk_tools

    requests: list[Any] = []

    async def go() -> list[Any]:
        dispatcher: Any = AsyncDispatcher(url=xerj.url) if mode == "async" else Dispatcher(url=xerj.url)
        try:
            agent = Agent(name="search", model=scripted_llm(turns, requests), instruction="Search XERJ.",
                          tools=tools if tools is not None else adk_tools(dispatcher))
            runner = InMemoryRunner(agent=agent, app_name="xerj")
            session = await runner.session_service.create_session(app_name="xerj", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="Why did checkout break?")])
            events = [e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)]
            await runner.close()
            return events
        finally:
            await dispatcher.aclose() if mode == "async" else dispatcher.close()

    return asyncio.run(go()), requests


def calls_and_responses(events: list[Any]) -> tuple[list[Any], list[Any]]:
    calls = [p.function_call for e in events for p in (e.content.parts if e.content else []) if p.function_call]
    responses = [p.function_response for e in events for p in (e.content.parts if e.content else []) if p.function_response]
    return calls, responses


def test_a_scripted_run_answers_every_call_once(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=0.3, match="_search"))  # the first search is in flight when its twin comes
    turn = [("xerj_search", SEARCH), ("xerj_search", {"index": "docs"}), ("xerj_search", SEARCH),
            ("xerj_search", {"index": "docs", "query": {"match_all": {}, "size": 1}})]
    events, requests = run(mode, xerj, [turn])
    assert events[-1].content.parts[0].text == "Done."
    calls, responses = calls_and_responses(events)
    assert len(calls) == 4 and sorted(r.id for r in responses) == sorted(c.id for c in calls)  # once each
    by_id = {r.id: r.response for r in responses}
    valid, invalid, twin, repaired = (by_id[c.id] for c in calls)
    assert valid["ok"] is True and valid["hits"]
    assert invalid["ok"] is False and invalid["error"]["code"] == "invalid_arguments"
    assert twin["hits"] == valid["hits"] and "XERJ was asked once" in twin["notes"][-1]
    assert repaired["ok"] is True and repaired["repairs"]
    assert [r.path for r in xerj.requests] == ["/docs/_search", "/docs/_search"]  # the pair sent once
    # the declarations the model got are the registry's, whole
    from google.genai import types

    declarations = {d.name: d for t in requests[0].config.tools for d in t.function_declarations}
    assert declarations["xerj_search"].parameters_json_schema["required"] == ["index", "query"]
    types.Tool(function_declarations=list(declarations.values()))  # google-genai's own types accept them


def test_an_engine_failure_is_an_answer_not_an_exception(xerj: XerjStandIn) -> None:
    from xerj_tools import RetryPolicy  # noqa: F401  (the default policy retries a 503)

    xerj.fail_next(400)
    events, _ = run("async", xerj, [[("xerj_search", SEARCH)]])
    _, responses = calls_and_responses(events)
    assert responses[0].response["ok"] is False and responses[0].response["error"]["status"] == 400
    assert events[-1].content.parts[0].text == "Done."


def test_names_pick_tools_and_unknown_names_raise() -> None:
    from xerj_tools.integrations.adk import adk_tools

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        assert [t.name for t in adk_tools(dispatcher, names=["xerj_get_document"])] == ["xerj_get_document"]
        with pytest.raises(ConfigurationError, match="xerj_serch"):
            adk_tools(dispatcher, names=["xerj_serch"])


def test_adk_itself_answers_a_hand_written_tool_s_missing_argument_with_its_own_text(xerj: XerjStandIn) -> None:
    """What ADK does by itself with XERJ's hand-written function (docs/integrations.md)."""
    def search_documents(query: str, index: str = "docs") -> dict[str, Any]:
        """Search the documents."""
        return {"results": []}

    events, _ = run("async", xerj, [[("search_documents", {"index": "docs"})]], tools=[search_documents])
    _, responses = calls_and_responses(events)
    assert "mandatory input parameters are not present" in responses[0].response["error"]
