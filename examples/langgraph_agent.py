"""LangGraph: a StateGraph whose tool node is `XerjToolNode`; a malformed call gets its answer.

Needs the extra: pip install -e '.[langgraph]' (in a clone: docs/usage.md#install) langchain-openai
Run: python examples/langgraph_agent.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

from _services import services
from langchain_core.messages import AIMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph

from xerj_tools import Dispatcher
from xerj_tools.integrations.langgraph import XerjToolNode, tools_condition
from xerj_tools.testing import Turn

SCRIPT = [
    Turn(tool_calls=[
        ("xerj_search", '{"index": "tickets", "query": {"term": {"status": "open"}'),  # broken JSON
        ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "checkout latency", "k": 2}),
        ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "checkout latency", "k": 2}),
    ]),
    Turn(tool_calls=[("xerj_search", {"index": "tickets", "query": {"term": {"status": "open"}}, "size": 0})]),
    Turn(text="Four tickets are open; the spring-sale slowdown (pm-103) is the closest past incident."),
]


def main() -> None:
    with services(SCRIPT) as (client, model, xerj_url), Dispatcher(url=xerj_url) as dispatcher:
        chat = ChatOpenAI(model=model, base_url=str(client.base_url), api_key=client.api_key)
        chat_with_tools = chat.bind_tools(dispatcher.registry.chat_tools())

        builder = StateGraph(MessagesState)
        builder.add_node("agent", lambda state: {"messages": [chat_with_tools.invoke(state["messages"])]})
        builder.add_node("tools", XerjToolNode(dispatcher))  # in place of the prebuilt ToolNode
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)  # routes malformed-only turns too
        builder.add_edge("tools", "agent")
        graph = builder.compile()

        state = graph.invoke({"messages": [("user", "What is open right now, and is it related to past incidents?")]})
        for message in state["messages"]:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    print(f"  → {call['id']} {call['name']} {call['args']}")
                for call in message.invalid_tool_calls:
                    print(f"  → {call['id']} {call['name']} (malformed) {call['args']}")
            elif isinstance(message, ToolMessage):
                shared = "  (identical call: XERJ was asked once)" if "identical to call" in message.content else ""
                print(f"  ← {message.tool_call_id} [{message.status}] {message.content[:120]}{shared}")
        print(f"\n{state['messages'][-1].content}")


if __name__ == "__main__":
    main()
