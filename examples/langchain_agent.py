"""LangChain: `create_agent` with xerj-tools' `BaseTool`s and `XerjMiddleware`; a call with broken
JSON and one with invalid arguments both get the dispatcher's envelope, an identical pair is sent
to XERJ once.

Needs the extra: pip install -e '.[langchain]' (in a clone: docs/usage.md#install) (and langchain-openai for a real model)
Run: python examples/langchain_agent.py   (a scripted model and the XERJ stand-in unless
     OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage

from xerj_tools import Dispatcher
from xerj_tools.integrations.langchain import XerjMiddleware, xerj_tools
from xerj_tools.testing import XerjStandIn

LATENCY = {"index": "docs", "field": "body", "query": "checkout latency", "k": 2}
SCRIPT = [
    AIMessage(content="", tool_calls=[
        {"id": "call_1", "name": "xerj_semantic_search", "args": LATENCY, "type": "tool_call"},
        {"id": "call_2", "name": "xerj_semantic_search", "args": LATENCY, "type": "tool_call"},  # the same
        {"id": "call_3", "name": "xerj_search", "args": {"index": "tickets"}, "type": "tool_call"}],  # no query
        invalid_tool_calls=[{"id": "call_4", "name": "xerj_search", "type": "invalid_tool_call", "error": None,
                             "args": '{"index": "tickets", "query": {"term": {"status": "open"}'}]),  # broken JSON
    AIMessage(content="", tool_calls=[
        {"id": "call_5", "name": "xerj_search", "args": {"index": "tickets", "query": {"term": {"status": "open"}}},
         "type": "tool_call"}]),
    AIMessage(content="Four tickets are open; the spring-sale slowdown (pm-103) is the closest past incident."),
]


class ScriptedModel(GenericFakeChatModel):
    """Plays the model when no OPENAI_API_KEY is set (langchain_core's fake chat model)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def main() -> None:
    with ExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL") or stack.enter_context(XerjStandIn()).url
        if os.environ.get("OPENAI_API_KEY"):
            from langchain_openai import ChatOpenAI

            model: Any = ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
        else:
            model = ScriptedModel(messages=iter(SCRIPT))
        dispatcher = stack.enter_context(Dispatcher(url=xerj_url))
        agent = create_agent(model, tools=xerj_tools(dispatcher), middleware=[XerjMiddleware(dispatcher)],
                             system_prompt="Answer from XERJ; cite document ids.")
        state = agent.invoke({"messages": [("user", "What is open right now, and is it related to past incidents?")]})
        for message in state["messages"]:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    print(f"  → {call['id']} {call['name']} {call['args']}")
                for call in message.invalid_tool_calls:
                    print(f"  → {call['id']} {call['name']} (malformed) {call['args']}")
            elif isinstance(message, ToolMessage):
                shared = "  (identical call: XERJ was asked once)" if "XERJ was asked once" in message.content else ""
                print(f"  ← {message.tool_call_id} [{message.status}] {message.content[:110]}{shared}")
        print(f"\n{state['messages'][-1].content}")


if __name__ == "__main__":
    main()
