"""openai-agents: an `Agent` searches XERJ through `function_tools`, and fixes its broken call.

Needs the extra: pip install -e '.[openai-agents]' (in a clone: docs/usage.md#install)
Run: python examples/openai_agents.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import asyncio
import os

from _services import services
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

from xerj_tools import AsyncDispatcher
from xerj_tools.integrations.openai_agents import function_tools
from xerj_tools.testing import Turn

SCRIPT = [
    Turn(tool_calls=[
        ("xerj_search", {"index": "tickets", "size": 5, "source": ["title"],
                         "query": {"bool": {"filter": [{"term": {"service": "checkout"}}, {"term": {"status": "open"}}]}}}),
        ("xerj_semantic_search", '{"index": "docs", "field": "body", "query": "why did checkout break"'),  # cut short
    ]),
    Turn(tool_calls=[("xerj_semantic_search", {"index": "docs", "field": "body", "query": "why did checkout break", "k": 2})]),
    Turn(text="A bad index template broke checkout (pm-101); two checkout tickets are still open (T-4, T-6)."),
]


async def main() -> None:
    with services(SCRIPT, asynchronous=True) as (client, model, xerj_url):
        async with AsyncDispatcher(url=xerj_url) as dispatcher:
            agent = Agent(
                name="XERJ search",
                instructions="Answer from the XERJ indices docs and tickets; cite document ids.",
                tools=function_tools(dispatcher),  # strict_json_schema=False: schemas as published
                model=OpenAIChatCompletionsModel(model=model, openai_client=client),
            )
            # The agents SDK uploads traces to OpenAI; not while a stand-in plays the model.
            config = RunConfig(tracing_disabled=not os.environ.get("OPENAI_API_KEY"))
            result = await Runner.run(agent, "Why did checkout break, and what is still open?", run_config=config)
            for item in result.to_input_list():
                if item.get("type") == "function_call":
                    print(f"  → {item['name']} {item['arguments'][:100]}")
                elif item.get("type") == "function_call_output":
                    print(f"  ← {str(item['output'])[:160]}")
            print(f"\n{result.final_output}")
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
