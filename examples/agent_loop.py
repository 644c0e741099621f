"""The agent loop: a model searches XERJ in parallel, fixes its own mistake, and answers.

Run: python examples/agent_loop.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

from _services import services, show

from xerj_tools import Dispatcher, run_agent
from xerj_tools.testing import Turn

QUESTION = "Why did checkout break this year, and how many checkout tickets are still open?"

# What the scripted model says when no OPENAI_API_KEY is set: realistic calls, one broken.
SCRIPT = [
    Turn(tool_calls=[
        ("xerj_hybrid_search", {"index": "docs", "size": 3, "queries": [
            {"query": {"match": {"body": "checkout outage errors"}}},
            {"query": {"semantic": {"field": "body", "query": "why did checkout break"}}}]}),
        ("xerj_search", '{"index": "tickets", "query": {"bool": {"filter": [{"term": {"service": "checkout"}}, '
                        '{"term": {"status": "open"}}]}, "size": 0}'),
    ]),
    Turn(tool_calls=[
        ("xerj_search", {"index": "tickets", "size": 5, "source": ["title", "priority"],
                         "query": {"bool": {"filter": [{"term": {"service": "checkout"}},
                                                       {"term": {"status": "open"}}]}}}),
    ]),
    Turn(text="Checkout broke after a bad index template rolled out (pm-101); spring-sale latency came "
              "from a saturated database pool (pm-103). Two checkout tickets are still open (T-4, T-6)."),
]


def main() -> None:
    with services(SCRIPT) as (client, model, xerj_url), Dispatcher(url=xerj_url) as dispatcher:
        messages = [{"role": "user", "content": QUESTION}]
        result = run_agent(client, model=model, messages=messages, dispatcher=dispatcher)
        show(result)
        for tool, stats in result.tool_stats.items():
            print(f"  {tool}: {stats.calls} calls, {stats.errors} errors, {stats.repairs} repaired")


if __name__ == "__main__":
    main()
