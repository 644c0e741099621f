"""pydantic-ai: an `Agent` with `XerjToolset`; a broken call gets the dispatcher's answer (no
pydantic retry spent), and an identical pair in one turn is sent to XERJ once.

Needs the extra: pip install -e '.[pydantic-ai]' (in a clone: docs/usage.md#install)
Run: python examples/pydantic_ai_agent.py   (a scripted model and the XERJ stand-in unless
     OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import asyncio
import json
import os
from contextlib import ExitStack
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from xerj_tools import AsyncDispatcher
from xerj_tools.integrations.pydantic_ai import XerjToolset
from xerj_tools.testing import XerjStandIn

TICKETS = {"index": "tickets", "query": {"term": {"status": "open"}}, "size": 3}
SCRIPT = [
    [ToolCallPart("xerj_search", json.dumps(TICKETS), tool_call_id="call_1"),
     ToolCallPart("xerj_search", json.dumps(TICKETS), tool_call_id="call_2"),  # the same, again
     ToolCallPart("xerj_semantic_search", '{"index": "docs", "field": "body", "query": "checkout', tool_call_id="call_3")],
    [ToolCallPart("xerj_semantic_search", {"index": "docs", "field": "body", "query": "checkout outage", "k": 2},
                  tool_call_id="call_4")],
    [TextPart("A bad index template broke checkout (pm-101); open tickets: T-1, T-4, T-6.")],
]


def scripted(messages: list[Any], info: AgentInfo) -> ModelResponse:
    """Plays the model when no OPENAI_API_KEY is set (a test double, not a model)."""
    return ModelResponse(parts=SCRIPT.pop(0))


async def main() -> None:
    with ExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL") or stack.enter_context(XerjStandIn()).url
        model: Any = "openai:gpt-4.1-mini" if os.environ.get("OPENAI_API_KEY") else FunctionModel(scripted)
        async with AsyncDispatcher(url=xerj_url) as dispatcher:
            agent = Agent(model, instructions="Answer from XERJ; cite document ids.",
                          toolsets=[XerjToolset(dispatcher)])
            result = await agent.run("Why did checkout break, and what is still open?")
        for message in result.all_messages():
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    print(f"  → {part.tool_call_id} {part.tool_name} {part.args_as_json_str()[:90]}")
                elif isinstance(part, ToolReturnPart):
                    print(f"  ← {part.tool_call_id} {str(part.content)[:150]}")
                    if "XERJ was asked once" in str(part.content):
                        print("    (identical to call_1 in this turn: XERJ was asked once)")
        print(f"\n{result.output}")


if __name__ == "__main__":
    asyncio.run(main())
