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


def _session_run(agent: Any, state: dict[str, Any] | None = None, user: str = "u") -> Any:
    """A coroutine: one ADK run of `agent` in a new session with `state`; its events."""
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    async def go() -> list[Any]:
        runner = InMemoryRunner(agent=agent, app_name="xerj")
        session = await runner.session_service.create_session(app_name="xerj", user_id=user, state=state or {})
        message = types.Content(role="user", parts=[types.Part(text=user)])
        events = [e async for e in runner.run_async(user_id=user, session_id=session.id, new_message=message)]
        await runner.close()
        return events

    return go()


def test_one_execute_tool_span_per_call_under_adk_tracing(xerj: XerjStandIn) -> None:
    """ADK makes an `execute_tool {tool}` span around each tool it runs; the call joins it, and
    the envelope's error code is what ADK's span reports for a failed call."""
    from google.adk.agents import Agent

    from xerj_tools.integrations.adk import adk_tools

    from otel_support import children, traced

    turn = [("xerj_search", SEARCH), ("xerj_search", {"index": "docs"}), ("xerj_search", SEARCH)]
    with traced() as (_, exporter):
        async def go() -> list[Any]:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                agent = Agent(name="search", model=scripted_llm([turn], []), tools=adk_tools(dispatcher))
                return await _session_run(agent)

        xerj.fail_next(Fault(delay=0.2, match="_search"))  # the twin comes while the first is in flight
        events = asyncio.run(go())
        spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool xerj_search"]
    calls, _ = calls_and_responses(events)
    assert len(spans) == 3  # one per call: ADK's, joined
    assert all(s.instrumentation_scope.name != "xerj_tools" for s in spans)
    assert not [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "xerj_tools"
                and s.name.startswith("execute_tool")]
    failed = [s for s in spans if s.status.status_code.name == "ERROR"]
    assert [s.attributes["error.type"] for s in failed] == ["invalid_arguments"]
    sent = [s for s in spans if s.attributes.get("xerj_tools.attempts") == 1]
    assert len(sent) == 1 and [c.name for c in children(exporter, sent[0])] == ["GET /_resolve/index/*", "POST /{index}/_search"]  # the listing read first (names are resolved)
    assert len([s for s in spans if "xerj_tools.copy_of" in s.attributes]) == 1
    assert len(calls) == 3


def test_each_sessions_state_selects_its_policy_with_two_tenants_interleaved(xerj: XerjStandIn) -> None:
    """One dispatcher, one tool list, two tenants' runs at once: each session's state names its
    tenant, whose policy applies; neither sees the other's index."""
    from google.adk.agents import Agent
    from google.adk.models import BaseLlm, LlmResponse
    from google.genai import types

    from xerj_tools import Policy
    from xerj_tools.integrations.adk import adk_tools

    tenants = {"a": ("docs", "tickets"), "b": ("tickets", "docs")}
    asked: dict[str, int] = {"a": 0, "b": 0}
    both = asyncio.Event()

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            tenant = llm_request.contents[0].parts[0].text
            asked[tenant] += 1
            if asked[tenant] == 1:
                if all(asked.values()):
                    both.set()
                await both.wait()  # both runs are at their first turn before either goes on
                own, other = tenants[tenant]
                calls = [("xerj_search", {"index": own, "query": {"match_all": {}}, "size": 1}),
                         ("xerj_search", {"index": other, "query": {"match_all": {}}}),
                         ("xerj_get_document", {"index": other, "id": "1"}), ("xerj_list_indices", {})]
                parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in calls]
            else:
                parts = [types.Part(text="Done.")]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    policies = {t: Policy(allow_indices=(own,)) for t, (own, _) in tenants.items()}

    async def go() -> list[list[Any]]:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            tools = adk_tools(dispatcher, policy=lambda ctx: policies[ctx.state["tenant"]])
            agent = Agent(name="search", model=Scripted(model="scripted"), tools=tools)
            return list(await asyncio.gather(*(_session_run(agent, {"tenant": t}, user=t) for t in tenants)))

    for (tenant, (own, _)), events in zip(tenants.items(), asyncio.run(go()), strict=True):
        _, responses = calls_and_responses(events)
        by_name: dict[str, list[Any]] = {}
        for r in responses:
            by_name.setdefault(r.name, []).append(r.response)
        own_search, other_search = by_name["xerj_search"]
        assert own_search["ok"] is True and {h["_index"] for h in own_search["hits"]} == {own}, tenant
        assert other_search["error"]["code"] == "policy_denied", tenant
        assert by_name["xerj_get_document"][0]["error"]["code"] == "policy_denied", tenant
        assert [i["name"] for i in by_name["xerj_list_indices"][0]["indices"]] == [own], tenant
    assert sorted(r.path for r in xerj.requests if r.path.endswith("_search")) == ["/docs/_search", "/tickets/_search"]


def test_calls_past_the_turn_bound_are_answered_not_run_and_the_next_turn_starts_afresh(xerj: XerjStandIn) -> None:
    from xerj_tools.integrations.adk import adk_tools

    searches = [("xerj_search", {**SEARCH, "size": n}) for n in (1, 2, 3)]
    with Dispatcher(url=xerj.url) as dispatcher:
        events, _ = run("async", xerj, [searches, searches[:2]], tools=adk_tools(dispatcher, max_calls_per_turn=2))
    calls, responses = calls_and_responses(events)
    assert len(calls) == 5 and sorted(r.id for r in responses) == sorted(c.id for c in calls)  # ids ADK made up
    codes = [r.response.get("error", {}).get("code") for r in responses]
    assert sorted(codes, key=str) == sorted([None] * 4 + ["too_many_calls"], key=str)
    assert len(xerj.requests) == 4
