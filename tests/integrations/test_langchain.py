"""LangChain end to end: `create_agent` and langgraph's `ToolNode` over langchain_core's own fake
chat model, with the tools of `xerj_tools` (and `XerjMiddleware`) against the XERJ stand-in.

LangChain is imported by the tests that use it, not when the module is collected."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("langchain") is None or importlib.util.find_spec("langchain.agents") is None:
    pytest.skip("LangChain is not installed: pip install 'xerj-tools[langchain]'", allow_module_level=True)

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher
from xerj_tools.testing import Fault, XerjStandIn

pytestmark = pytest.mark.usefixtures("loopback_only")  # nothing may reach a vendor's servers

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
BROKEN = '{"index": "docs", "query": {"match": '


def fake_model(turns: list[Any], seen: list[Any], bound: list[Any] | None = None) -> Any:
    """langchain_core's `GenericFakeChatModel` replaying `turns` (AI messages); `seen` gets each
    request's messages, `bound` the names of the tools bound each time."""
    bound = [] if bound is None else bound
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            bound.append([tool.name for tool in tools])  # what create_agent bound
            return self

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

        async def _agenerate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    return Scripted(messages=iter(turns))


def turn_with_every_kind() -> list[Any]:
    """A valid call, a malformed one (broken JSON: an invalid tool call), an identical pair,
    a call with invalid arguments; then the final answer."""
    from langchain_core.messages import AIMessage

    calls = [{"id": "call_1", "name": "xerj_search", "args": SEARCH, "type": "tool_call"},
             {"id": "call_3", "name": "xerj_search", "args": SEARCH, "type": "tool_call"},
             {"id": "call_4", "name": "xerj_memory_recall", "args": {"namespace": "agent"}, "type": "tool_call"}]
    invalid = [{"id": "call_2", "name": "xerj_search", "args": BROKEN, "error": "bad JSON", "type": "invalid_tool_call"}]
    return [AIMessage(content="", tool_calls=calls, invalid_tool_calls=invalid), AIMessage(content="Done.")]


def answers(messages: list[Any]) -> dict[str, Any]:
    from langchain_core.messages import ToolMessage

    return {m.tool_call_id: (m.status, json.loads(m.content)) for m in messages if isinstance(m, ToolMessage)}


def run_agent(mode: str, xerj: XerjStandIn, turns: list[Any], middleware: bool = True,
              bound: list[Any] | None = None) -> tuple[list[Any], list[Any]]:
    from langchain.agents import create_agent

    from xerj_tools.integrations.langchain import XerjMiddleware, xerj_tools

    seen: list[Any] = []
    start = {"messages": [("user", "Why did checkout break?")]}
    if mode == "sync":
        with Dispatcher(url=xerj.url) as dispatcher:
            agent = create_agent(fake_model(turns, seen, bound), tools=xerj_tools(dispatcher),
                                 middleware=[XerjMiddleware(dispatcher)] if middleware else [])
            return agent.invoke(start)["messages"], seen

    async def go() -> Any:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            agent = create_agent(fake_model(turns, seen, bound), tools=xerj_tools(dispatcher),
                                 middleware=[XerjMiddleware(dispatcher)] if middleware else [])
            return (await agent.ainvoke(start))["messages"]

    return asyncio.run(go()), seen


def test_create_agent_answers_every_call_once_and_sends_the_pair_once(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=0.3, match="_search"))  # the first search is in flight when its twin comes
    bound: list[Any] = []
    messages, seen = run_agent(mode, xerj, turn_with_every_kind(), bound=bound)
    assert messages[-1].content == "Done."
    got = answers(messages)
    assert sorted(got) == ["call_1", "call_2", "call_3", "call_4"]
    assert len([m for m in messages if getattr(m, "tool_call_id", None)]) == 4  # once each
    assert got["call_1"][0] == "success" and got["call_1"][1]["hits"]
    assert got["call_2"] == ("error", got["call_2"][1]) and got["call_2"][1]["error"]["code"] == "invalid_json"
    assert got["call_3"][1]["hits"] == got["call_1"][1]["hits"]
    # the pair: one sent, the other answered from it (which went first is the scheduler's choice)
    notes = {i: got[i][1].get("notes", [""])[-1] for i in ("call_1", "call_3")}
    assert sorted(notes.values())[0] == "" and "XERJ was asked once" in sorted(notes.values())[1]
    assert got["call_4"][0] == "error" and got["call_4"][1]["error"]["code"] == "invalid_arguments"
    assert [r.path for r in xerj.requests] == ["/docs/_search"]
    # the model's second request carried the envelope, not create_agent's fixed text
    assert bound[0] == ["xerj_search", "xerj_semantic_search", "xerj_vector_search", "xerj_hybrid_search",
                       "xerj_memory_store", "xerj_memory_recall", "xerj_get_document", "xerj_list_indices",
                       "xerj_describe_index"]
    assert "could not be executed" not in json.dumps([m.content for m in seen[1]])


def test_a_turn_of_only_malformed_calls_goes_back_to_the_model(xerj: XerjStandIn) -> None:
    from langchain_core.messages import AIMessage

    broken = AIMessage(content="", invalid_tool_calls=[
        {"id": "call_1", "name": "xerj_search", "args": BROKEN, "error": "bad JSON", "type": "invalid_tool_call"}])
    fixed = AIMessage(content="", tool_calls=[{"id": "call_2", "name": "xerj_search", "args": SEARCH, "type": "tool_call"}])
    messages, _ = run_agent("sync", xerj, [broken, fixed, AIMessage(content="Done.")])
    assert messages[-1].content == "Done."
    assert answers(messages)["call_1"][1]["error"]["code"] == "invalid_json"
    assert answers(messages)["call_2"][1]["ok"] is True


def test_without_the_middleware_create_agent_ends_the_run_on_a_malformed_turn(xerj: XerjStandIn) -> None:
    """What LangChain does by itself (verified here, described in docs/integrations.md)."""
    from langchain_core.messages import AIMessage

    broken = AIMessage(content="", invalid_tool_calls=[
        {"id": "call_1", "name": "xerj_search", "args": BROKEN, "error": "bad JSON", "type": "invalid_tool_call"}])
    messages, seen = run_agent("sync", xerj, [broken, AIMessage(content="never asked")], middleware=False)
    assert messages[-1] is not None and messages[-1].invalid_tool_calls and len(seen) == 1
    assert answers(messages) == {}


def test_tool_node_runs_the_tools_and_answers_invalid_arguments_with_the_envelope(xerj: XerjStandIn) -> None:
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from xerj_tools.integrations.langchain import xerj_tools

    message = AIMessage(content="", tool_calls=[
        {"id": "a", "name": "xerj_search", "args": SEARCH, "type": "tool_call"},
        {"id": "b", "name": "xerj_search", "args": {"index": "docs", "query": {"match_all": {}, "size": 1}}, "type": "tool_call"},
        {"id": "c", "name": "xerj_get_document", "args": {"index": "docs"}, "type": "tool_call"}])
    with Dispatcher(url=xerj.url) as dispatcher:
        graph = StateGraph(MessagesState)
        graph.add_node("tools", ToolNode(xerj_tools(dispatcher)))
        graph.add_edge(START, "tools")
        out = graph.compile().invoke({"messages": [message]})
    got = answers(out["messages"])
    assert got["a"][0] == "success" and got["b"][1]["repairs"]
    assert got["c"][0] == "error" and got["c"][1]["error"]["code"] == "invalid_arguments"


def test_tools_carry_the_registry_schemas_and_refuse_unknown_names() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from xerj_tools.integrations.langchain import xerj_tools

    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        tools = xerj_tools(dispatcher)
        assert [convert_to_openai_tool(t) for t in tools] == dispatcher.registry.chat_tools()
        with pytest.raises(ConfigurationError, match="xerj_serch"):
            xerj_tools(dispatcher, names=["xerj_serch"])


CUT = '{"index": "docs", "query": {"match": {"body": "chec'  # max_tokens ended the output here
UNCLOSED = '{"index": "docs", "query": {"match": {"body": "refund"}}'  # the last } missing


def chat_openai_agent(mode: str, xerj: XerjStandIn, script: list[Any], streaming: bool,
                      **options: Any) -> tuple[list[Any], Any]:
    """create_agent over langchain-openai's real ChatOpenAI, against the scripted model on
    127.0.0.1 (SSE when `streaming`), with xerj_tools and XerjMiddleware."""
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from xerj_tools.integrations.langchain import XerjMiddleware, xerj_tools
    from xerj_tools.testing import ScriptedModel

    start = {"messages": [("user", "Why did checkout break?")]}
    with ScriptedModel(script) as model:
        chat = ChatOpenAI(model="scripted", base_url=model.base_url, api_key="scripted",  # type: ignore[arg-type]
                          max_retries=0, streaming=streaming)
        if mode == "sync":
            with Dispatcher(url=xerj.url) as dispatcher:
                agent = create_agent(chat, tools=xerj_tools(dispatcher, **options),
                                     middleware=[XerjMiddleware(dispatcher, **options)])
                return agent.invoke(start)["messages"], model

        async def go() -> Any:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                agent = create_agent(chat, tools=xerj_tools(dispatcher, **options),
                                     middleware=[XerjMiddleware(dispatcher, **options)])
                try:
                    return (await agent.ainvoke(start))["messages"]
                finally:
                    await chat.root_async_client.close()  # its connections, before the loop ends

        return asyncio.run(go()), model


@pytest.mark.parametrize("streaming", [False, True])
def test_a_streamed_turn_is_judged_by_the_text_the_model_sent(mode: str, streaming: bool, xerj: XerjStandIn) -> None:
    """ChatOpenAI(streaming=True) completes partial JSON: the middleware still answers the call
    a max_tokens cut ended inside incomplete_call and broken JSON invalid_json, before the
    tools run, so neither is run with LangChain's guess."""
    from xerj_tools.testing import Turn

    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_search", CUT)], finish_reason="length"),
              Turn(tool_calls=[("xerj_search", UNCLOSED)]),  # a turn of only a broken call
              Turn(text="Done.")]
    messages, model = chat_openai_agent(mode, xerj, script, streaming)
    assert messages[-1].content == "Done."
    got = answers(messages)
    assert got["call_1"][0] == "success" and got["call_1"][1]["hits"]
    assert got["call_2"] == ("error", got["call_2"][1]) and got["call_2"][1]["error"]["code"] == "incomplete_call"
    assert got["call_3"][0] == "error" and got["call_3"][1]["error"]["code"] == "invalid_json"
    assert len([m for m in messages if getattr(m, "tool_call_id", None)]) == 3  # one answer each
    bodies = json.dumps([r.body for r in xerj.requests])
    assert '"chec"' not in bodies and "refund" not in bodies
    assert [r.path for r in xerj.requests] == ["/docs/_search"]
    assert len(model.requests) == 3  # the turn of only a broken call went back to the model


def test_a_turn_of_many_calls_runs_the_first_max_calls_per_turn(xerj: XerjStandIn) -> None:
    from xerj_tools.testing import Turn

    calls = [("xerj_search", {**SEARCH, "size": n}) for n in range(1, 21)]
    messages, _ = chat_openai_agent("sync", xerj, [Turn(tool_calls=calls), Turn(text="Done.")], False)
    got = answers(messages)
    assert len(got) == 20 and messages[-1].content == "Done."
    assert [got[f"call_{n}"][1].get("ok", False) for n in range(1, 21)] == [True] * 16 + [False] * 4
    assert {got[f"call_{n}"][1]["error"]["code"] for n in range(17, 21)} == {"too_many_calls"}
    assert len(xerj.requests) == 16


def test_the_tools_alone_bound_a_turn_as_its_calls_start(xerj: XerjStandIn) -> None:
    """Without the middleware (langgraph's prebuilt ToolNode), the calls of one step past the
    bound are refused as they start."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from xerj_tools.integrations.langchain import xerj_tools

    message = AIMessage(content="", tool_calls=[
        {"id": f"c{n}", "name": "xerj_search", "args": {**SEARCH, "size": n}, "type": "tool_call"} for n in range(1, 6)])
    with Dispatcher(url=xerj.url) as dispatcher:
        graph = StateGraph(MessagesState)
        graph.add_node("tools", ToolNode(xerj_tools(dispatcher, max_calls_per_turn=3)))
        graph.add_edge(START, "tools")
        out = graph.compile().invoke({"messages": [message]})
    codes = sorted(a[1].get("error", {}).get("code", "ok") for a in answers(out["messages"]).values())
    assert codes == ["ok", "ok", "ok", "too_many_calls", "too_many_calls"]
    assert len(xerj.requests) == 3


def test_a_call_without_an_id_gets_one(xerj: XerjStandIn) -> None:
    from langchain_core.messages import AIMessage

    turn = AIMessage(content="", tool_calls=[{"id": None, "name": "xerj_search", "args": SEARCH, "type": "tool_call"}])
    messages, _ = run_agent("sync", xerj, [turn, AIMessage(content="Done.")])
    assert messages[-1].content == "Done."
    ai = next(m for m in messages if isinstance(m, AIMessage))
    assert [c["id"] for c in ai.tool_calls] == ["xerj_0"]
    assert answers(messages)["xerj_0"][0] == "success"


def test_two_tenants_in_one_process_each_under_its_own_policy(xerj: XerjStandIn) -> None:
    """One create_agent, one dispatcher, one set of tools; two runs at once, each with the
    policy its LangGraph context selects: neither reaches nor is shown the other's index, and
    the middleware's answers go by the same choice."""
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from langgraph.runtime import get_runtime

    from xerj_tools import Policy
    from xerj_tools.integrations.langchain import XerjMiddleware, xerj_tools
    from xerj_tools.testing import ScriptedModel, Turn

    tenants = {"acme": Policy(allow_indices=("docs",)), "globex": Policy(allow_indices=("tickets",))}

    def policy(config: Any) -> Policy:
        return tenants[get_runtime().context["tenant"]]

    both = [("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1}),
            ("xerj_search", {"index": "tickets", "query": {"match_all": {}}, "size": 1}),
            ("xerj_list_indices", {})]
    xerj.fail_next(Fault(delay=0.3, match="_search"))  # the first search is held while the other run goes on
    def turn(body: Any) -> Any:  # the two runs share the model: each asks, then ends
        return () if any(m.get("role") == "tool" for m in body["messages"]) else both

    with ScriptedModel([Turn(text="Done.", tool_calls=turn) for _ in range(4)]) as model:
        chat = ChatOpenAI(model="scripted", base_url=model.base_url, api_key="scripted",  # type: ignore[arg-type]
                          max_retries=0, streaming=True)

        async def go() -> list[Any]:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                agent = create_agent(chat, tools=xerj_tools(dispatcher, policy=policy),
                                     middleware=[XerjMiddleware(dispatcher, policy=policy)], context_schema=dict)
                start = {"messages": [("user", "What is there?")]}
                try:
                    return list(await asyncio.gather(agent.ainvoke(start, context={"tenant": "acme"}),
                                                     agent.ainvoke(start, context={"tenant": "globex"})))
                finally:
                    await chat.root_async_client.close()

        states = asyncio.run(go())
    for state, (mine, theirs) in zip(states, [("docs", "tickets"), ("tickets", "docs")], strict=True):
        got = [a[1] for a in answers(state["messages"]).values()]
        by_index = {"docs": got[0], "tickets": got[1]}
        assert by_index[mine]["ok"] is True and by_index[mine]["hits"]
        assert by_index[theirs]["error"]["code"] == "policy_denied"
        assert [i["name"] for i in got[2]["indices"]] == [mine]
    searched = sorted(r.path for r in xerj.requests if r.path.endswith("_search"))
    assert searched == ["/docs/_search", "/tickets/_search"]  # one each, never the other's
