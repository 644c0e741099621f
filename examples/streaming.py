"""Streaming: show text as it arrives and tool calls as they start and finish (async).

Run: python examples/streaming.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import asyncio

from _services import services

from xerj_tools import (
    AsyncDispatcher,
    RunFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
    astream_agent,
)
from xerj_tools.testing import Turn

SCRIPT = [
    Turn(tool_calls=[("xerj_search", {"index": "tickets", "query": {"term": {"status": "open"}}, "size": 0,
                                      "aggs": {"by_service": {"terms": {"field": "service"}}}}),
                     ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "checkout latency", "k": 2})]),
    Turn(text="Four tickets are open, two of them on checkout; the spring-sale slowdown (pm-103) is the closest match."),
]


async def main() -> None:
    with services(SCRIPT, asynchronous=True) as (client, model, xerj_url):
        async with AsyncDispatcher(url=xerj_url) as dispatcher:
            messages = [{"role": "user", "content": "What is open right now, and is it related to past incidents?"}]
            async for event in astream_agent(client, model=model, messages=messages, dispatcher=dispatcher):
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
                elif isinstance(event, ToolCallStarted):
                    print(f"[calling {event.call.name} {event.call.arguments}]")
                elif isinstance(event, ToolResultEvent):
                    print(f"[{event.result.call.name}: {'ok' if event.result.ok else event.result.code}]")
                elif isinstance(event, TurnFinished):
                    print(f"\n[turn {event.turn} finished: {event.finish_reason}]")
                elif isinstance(event, RunFinished):
                    print(f"[{event.result.outcome} after {event.result.turns} turns]")
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
