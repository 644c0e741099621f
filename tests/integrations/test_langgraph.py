"""LangGraph end to end: a real StateGraph whose chat model (langchain-openai's `ChatOpenAI`) is
driven by the scripted model, and whose tool node is `XerjToolNode` over the XERJ stand-in.

LangGraph and LangChain are imported by the tests that use them, not when the module is
collected: they cost a second or two of CPU, which every pytest-xdist worker would pay where one
runs these tests."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import TYPE_CHECKING, Any

import pytest

if importlib.util.find_spec("langgraph") is None:
    pytest.skip("LangGraph is not installed: pip install 'xerj-tools[langgraph]'", allow_module_level=True)
if importlib.util.find_spec("langchain_openai") is None:
    pytest.skip("the LangGraph tests drive langchain-openai: pip install langchain-openai", allow_module_level=True)

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher, Policy, RetryPolicy
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, ToolMessage

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
BROKEN = '{"index": "docs", "query": {"match": '


def graph(model: ScriptedModel, dispatcher: Any, streaming: bool = False, **node: Any) -> Any:
    from langchain_core.runnables import RunnableLambda
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph

    from xerj_tools.integrations.langgraph import XerjToolNode, tools_condition

    chat = ChatOpenAI(model="scripted", base_url=model.base_url, api_key="scripted",  # type: ignore[arg-type]
                      max_retries=0, streaming=streaming).bind_tools(dispatcher.registry.chat_tools())

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", XerjToolNode(dispatcher, **node))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def run(mode: str, script: list[Turn], xerj: XerjStandIn, streaming: bool = False, node: Any = None,
        **options: Any) -> tuple[list[Any], ScriptedModel]:
    """Run the graph (invoke with a Dispatcher, ainvoke with an AsyncDispatcher); returns
    (the final messages, the scripted model)."""
    from langchain_core.messages import HumanMessage

    start = {"messages": [HumanMessage("Why did checkout break?")]}
    with ScriptedModel(script) as model:
        if mode == "sync":
            with Dispatcher(url=xerj.url, **options) as dispatcher:
                state = graph(model, dispatcher, streaming, **(node or {})).invoke(start)
        else:
            async def go() -> Any:
                async with AsyncDispatcher(url=xerj.url, **options) as dispatcher:
                    return await graph(model, dispatcher, streaming, **(node or {})).ainvoke(start)

            state = asyncio.run(go())
    return state["messages"], model


def tool_messages(messages: list[Any]) -> dict[str, ToolMessage]:
    from langchain_core.messages import ToolMessage

    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def test_every_call_is_answered_and_identical_calls_are_sent_once(mode: str, xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_search", BROKEN), ("xerj_search", SEARCH),
                               ("xerj_memory_recall", {"namespace": "agent", "query": "tea"})]),
              Turn(text="A bad index template broke checkout.")]
    messages, model = run(mode, script, xerj)
    assert messages[-1].content == "A bad index template broke checkout."
    asked = messages[1]
    assert [c["id"] for c in asked.tool_calls] == ["call_1", "call_3", "call_4"]
    assert [c["id"] for c in asked.invalid_tool_calls] == ["call_2"]  # LangChain could not parse it
    answers = tool_messages(messages)
    assert sorted(answers) == ["call_1", "call_2", "call_3", "call_4"]
    payload = {cid: json.loads(m.content) for cid, m in answers.items()}
    assert payload["call_1"]["ok"] and payload["call_1"]["hits"] and answers["call_1"].status == "success"
    assert payload["call_2"]["error"]["code"] == "invalid_json" and answers["call_2"].status == "error"
    assert "identical to call call_1 in this turn" in payload["call_3"]["notes"][-1]
    assert answers["call_1"].name == "xerj_search"
    assert [r.path for r in xerj.requests].count("/docs/_search") == 1
    # and the model's next request answered every call id it had made
    sent = model.requests[1]["messages"]
    assert sorted(m["tool_call_id"] for m in sent if m["role"] == "tool") == ["call_1", "call_2", "call_3", "call_4"]


def test_a_turn_of_only_malformed_calls_is_answered(mode: str, xerj: XerjStandIn) -> None:
    from langgraph.prebuilt import tools_condition as prebuilt_condition

    from xerj_tools.integrations.langgraph import tools_condition

    script = [Turn(tool_calls=[("xerj_search", BROKEN)]),
              Turn(tool_calls=[("xerj_search", SEARCH)]),
              Turn(text="Done.")]
    messages, model = run(mode, script, xerj)
    assert messages[-1].content == "Done." and len(model.requests) == 3
    assert json.loads(tool_messages(messages)["call_1"].content)["error"]["code"] == "invalid_json"
    # the prebuilt router would have ended the run here, with call_1 unanswered
    assert prebuilt_condition({"messages": messages[:2]}) == "__end__"
    assert tools_condition({"messages": messages[:2]}) == "tools"


def test_an_engine_failure_is_an_error_tool_message(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(500)
    script = [Turn(tool_calls=[("xerj_search", SEARCH)]), Turn(text="XERJ is failing.")]
    messages, _ = run(mode, script, xerj, retry=RetryPolicy(max_attempts=1))
    answer = tool_messages(messages)["call_1"]
    assert answer.status == "error"
    assert json.loads(answer.content)["error"] == {**json.loads(answer.content)["error"], "code": "server_error",
                                                   "status": 500}
    assert messages[-1].content == "XERJ is failing."


def ai_message(without_id: bool = False) -> AIMessage:
    """A turn of one valid call and one without a name (and, `without_id`, one without an id)."""
    from langchain_core.messages import AIMessage

    invalid = [{"id": "b", "name": None, "args": None, "error": "no name", "type": "invalid_tool_call"}]
    if without_id:
        invalid.append({"id": None, "name": "xerj_search", "args": "{", "error": "x", "type": "invalid_tool_call"})
    return AIMessage("", tool_calls=[{"id": "a", "name": "xerj_search", "args": SEARCH}], invalid_tool_calls=invalid)


def test_list_input_and_calls_answered_already(xerj: XerjStandIn) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    from xerj_tools.integrations.langgraph import XerjToolNode

    AI = ai_message()
    with Dispatcher(url=xerj.url) as dispatcher:
        node = XerjToolNode(dispatcher)
        answers = node.invoke([HumanMessage("q"), AI])
        assert [(m.tool_call_id, m.status) for m in answers] == [("a", "success"), ("b", "error")]
        assert json.loads(answers[1].content)["error"]["code"] == "unknown_tool"
        # a call answered already (say, by a human in the loop) is not run again
        again = node.invoke({"messages": [AI, ToolMessage("done", tool_call_id="a")]})
        assert [m.tool_call_id for m in again["messages"]] == ["b"]
        assert asyncio.run(node.ainvoke([AI]))[0].tool_call_id == "a"  # ainvoke over a sync dispatcher
        with pytest.raises(ValueError, match="no AIMessage"):
            node.invoke([HumanMessage("q")])
        # a call without an id cannot be paired with an answer in a bare list: refused aloud
        with pytest.raises(ValueError, match="without an id"):
            node.invoke([HumanMessage("q"), ai_message(without_id=True)])
    assert [r.path for r in xerj.requests] == ["/docs/_search", "/docs/_search"]


def test_a_call_without_an_id_gets_one_and_its_answer_in_the_graph_state(xerj: XerjStandIn) -> None:
    """Every call of the turn is answered; the id-less one under an id written into the AI
    message, which replaces the old one in the state (add_messages merges by id)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from xerj_tools.integrations.langgraph import XerjToolNode

    turn = AIMessage("", id="turn-1", tool_calls=[
        {"id": "a", "name": "xerj_search", "args": SEARCH},
        {"id": None, "name": "xerj_search", "args": {**SEARCH, "size": 1}},
        {"id": "a", "name": "xerj_list_indices", "args": {}}])  # an id the turn used already
    with Dispatcher(url=xerj.url) as dispatcher:
        builder = StateGraph(MessagesState)
        builder.add_node("tools", XerjToolNode(dispatcher))
        builder.add_edge(START, "tools")
        out = builder.compile().invoke({"messages": [HumanMessage("q"), turn]})["messages"]
    ai = [m for m in out if isinstance(m, AIMessage)]
    assert len(ai) == 1 and ai[0].id == "turn-1"  # replaced, not appended
    ids = [c["id"] for c in ai[0].tool_calls]
    assert ids == ["a", "xerj_1", "a_2"]
    answers = [m for m in out if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ids  # one answer per call, in call order
    assert all(m.status == "success" for m in answers)


def test_an_async_dispatcher_needs_ainvoke() -> None:
    from xerj_tools.integrations.langgraph import XerjToolNode

    AI = ai_message()

    async def go() -> None:
        async with AsyncDispatcher(url="http://127.0.0.1:9") as dispatcher:
            with pytest.raises(ConfigurationError, match="ainvoke"):
                XerjToolNode(dispatcher).invoke([AI])

    asyncio.run(go())


def test_the_prebuilt_tool_node_leaves_malformed_calls_unanswered() -> None:
    # Why this node exists: the prebuilt one answers `tool_calls` only.
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    AI = ai_message()

    def xerj_search(index: str) -> str:
        """Search."""
        return "ok"

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([xerj_search]))
    builder.add_edge(START, "tools")
    ai = AI.model_copy(update={"tool_calls": [{"id": "a", "name": "xerj_search", "args": {"index": "docs"},
                                                "type": "tool_call"}]})
    messages = builder.compile().invoke({"messages": [ai]})["messages"]
    assert list(tool_messages(messages)) == ["a"]  # "b" is left unanswered


CUT = '{"index": "docs", "query": {"match": {"body": "chec'  # max_tokens ended the output here
UNCLOSED = '{"index": "docs", "query": {"match": {"body": "refund"}}'  # the last } missing


def sent_bodies(xerj: XerjStandIn) -> str:
    return json.dumps([r.body for r in xerj.requests])


@pytest.mark.parametrize("streaming", [False, True])
def test_a_streamed_turn_is_judged_by_the_text_the_model_sent(mode: str, streaming: bool, xerj: XerjStandIn) -> None:
    """ChatOpenAI(streaming=True) completes partial JSON (LangChain's parse_partial_json): the
    node still answers a call cut by max_tokens incomplete_call and broken JSON invalid_json,
    as the agent loop and the unstreamed model do, and runs neither with a guess."""
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_search", CUT)], finish_reason="length"),
              Turn(tool_calls=[("xerj_search", UNCLOSED), ("xerj_list_indices", {})]),
              Turn(text="Done.")]
    messages, model = run(mode, script, xerj, streaming=streaming)
    assert messages[-1].content == "Done."
    got = {i: (m.status, json.loads(m.content)) for i, m in tool_messages(messages).items()}
    assert got["call_1"][0] == "success" and got["call_1"][1]["hits"]
    assert got["call_2"][1]["error"]["code"] == "incomplete_call"
    assert "inside this call" in got["call_2"][1]["error"]["reason"]
    assert got["call_3"][0] == "error" and got["call_3"][1]["error"]["code"] == "invalid_json"
    assert got["call_4"][0] == "success"
    assert '"chec"' not in sent_bodies(xerj) and "refund" not in sent_bodies(xerj)
    assert [r.path for r in xerj.requests if r.path.endswith("_search")] == ["/docs/_search"]  # the whole one only
    # every call id was answered in the requests the model got
    sent = model.requests[2]["messages"]
    asked = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert sorted(asked) == sorted(m["tool_call_id"] for m in sent if m["role"] == "tool")


def test_a_turn_of_many_calls_runs_the_first_max_calls_per_turn(mode: str, xerj: XerjStandIn) -> None:
    calls = [("xerj_search", {**SEARCH, "size": n}) for n in range(1, 21)]
    messages, _ = run(mode, [Turn(tool_calls=calls), Turn(text="Done.")], xerj)
    got = [json.loads(m.content) for m in tool_messages(messages).values()]
    assert len(got) == 20
    assert [g.get("ok") for g in got[:16]] == [True] * 16
    assert [g["error"]["code"] for g in got[16:]] == ["too_many_calls"] * 4
    assert len(xerj.requests) == 16
    messages, _ = run(mode, [Turn(tool_calls=calls[:5]), Turn(text="Done.")], xerj, node={"max_calls_per_turn": 2})
    assert [json.loads(m.content).get("ok", False) for m in tool_messages(messages).values()] == [True, True] + [False] * 3


TENANTS = {"acme": Policy(allow_indices=("docs",)), "globex": Policy(allow_indices=("tickets",))}


def tenant_turns() -> list[Turn]:
    both = [("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1}),
            ("xerj_search", {"index": "tickets", "query": {"match_all": {}}, "size": 1}),
            ("xerj_list_indices", {})]
    return [Turn(tool_calls=both), Turn(text="Done.")]


@pytest.mark.parametrize("via", ["configurable", "context"])
def test_two_tenants_in_one_process_each_under_its_own_policy(via: str, xerj: XerjStandIn) -> None:
    """One node and one dispatcher; two runs at once, each with the policy its run selects
    (RunnableConfig configurable, or LangGraph's context=): neither reaches nor is shown the
    index the other may use."""
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.runtime import get_runtime

    from xerj_tools.integrations.langgraph import XerjToolNode, tools_condition

    def policy(config: Any) -> Policy:
        tenant = config["configurable"]["tenant"] if via == "configurable" else get_runtime().context["tenant"]
        return TENANTS[tenant]

    def tenant_of(config: Any) -> str:
        return str(config["configurable"]["tenant"] if via == "configurable" else get_runtime().context["tenant"])

    xerj.fail_next(Fault(delay=0.3, match="_search"))  # the first search is held while the other run goes on
    with ScriptedModel(tenant_turns()) as acme, ScriptedModel(tenant_turns()) as globex:
        async def go() -> list[Any]:
            async with AsyncDispatcher(url=xerj.url) as dispatcher:
                chats = {name: ChatOpenAI(model="scripted", base_url=m.base_url, api_key="scripted",  # type: ignore[arg-type]
                                          max_retries=0, streaming=True).bind_tools(dispatcher.registry.chat_tools())
                         for name, m in (("acme", acme), ("globex", globex))}

                async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
                    return {"messages": [await chats[tenant_of(config)].ainvoke(state["messages"])]}

                builder = StateGraph(MessagesState, context_schema=dict)
                builder.add_node("agent", agent)
                builder.add_node("tools", XerjToolNode(dispatcher, policy=policy))
                builder.add_edge(START, "agent")
                builder.add_conditional_edges("agent", tools_condition)
                builder.add_edge("tools", "agent")
                graph = builder.compile()

                def run(tenant: str) -> Any:
                    start = {"messages": [HumanMessage("What is there?")]}
                    if via == "configurable":
                        return graph.ainvoke(start, {"configurable": {"tenant": tenant}})
                    return graph.ainvoke(start, context={"tenant": tenant})

                return list(await asyncio.gather(run("acme"), run("globex")))

        states = asyncio.run(go())
    for state, (mine, theirs) in zip(states, [("docs", "tickets"), ("tickets", "docs")], strict=True):
        docs, tickets, listing = (json.loads(m.content) for m in tool_messages(state["messages"]).values())
        by_index = {"docs": docs, "tickets": tickets}
        assert by_index[mine]["ok"] is True and by_index[mine]["hits"]
        assert by_index[theirs]["error"]["code"] == "policy_denied"
        assert [i["name"] for i in listing["indices"]] == [mine]
    searched = [r.path for r in xerj.requests if r.path.endswith("_search")]
    assert sorted(searched) == ["/docs/_search", "/tickets/_search"]  # one each, never the other's


def test_a_policy_function_that_fails_refuses_the_calls(xerj: XerjStandIn) -> None:
    def policy(config: Any) -> Policy:
        return TENANTS[config["configurable"]["tenant"]]  # KeyError: this run names no tenant

    messages, _ = run("sync", tenant_turns(), xerj, node={"policy": policy})
    codes = {json.loads(m.content)["error"]["code"] for m in tool_messages(messages).values()}
    assert codes == {"policy_denied"} and xerj.requests == []
