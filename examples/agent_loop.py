"""The agent loop: a model orients itself (lists the indices, describes the two it needs: with XERJ
autoindex's catalog on the node, each field comes with example values), searches XERJ in
parallel on the field and the value it learned, and answers.

Run: python examples/agent_loop.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from _services import services, show

from xerj_tools import Dispatcher, run_agent
from xerj_tools.testing import Turn

QUESTION = "Why did checkout break this year, and how many checkout tickets are still open?"


def _tool_answers(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tool messages the model was sent so far (Chat Completions or Responses input)."""
    items = [*body.get("messages", []), *(body.get("input") or [])]
    texts = [i.get("content") if i.get("role") == "tool" else i.get("output") for i in items if isinstance(i, dict)]
    return [json.loads(t) for t in texts if isinstance(t, str) and t.startswith("{")]


def search_what_was_learned(body: Mapping[str, Any]) -> Sequence[tuple[str, Any]]:
    """The second turn: query the semantic_text field the description of `docs` named, and
    filter `tickets` on a status value its description showed (not a guess)."""
    described = {a["index"][0]: a for a in _tool_answers(body) if "search_with" in a}
    field = described["docs"]["search_with"]["xerj_semantic_search"][0]
    seen = described["tickets"].get("catalog", {}).get("tickets", {}).get("fields", {})
    status = next((v for v in seen.get("status", {}).get("examples", []) if v.startswith("open")), "open")
    return [
        ("xerj_hybrid_search", {"index": "docs", "size": 3, "queries": [
            {"query": {"match": {field: "checkout outage errors"}}},
            {"query": {"semantic": {"field": field, "query": "why did checkout break"}}}]}),
        ("xerj_search", '{"index": "tickets", "query": {"bool": {"filter": [{"term": {"service": "checkout"}}, '
                        f'{{"term": {{"status": "{status}"}}}}]}}, "size": 0}}'),  # one brace short
    ]


# What the scripted model says when no OPENAI_API_KEY is set: it orients itself first, then
# queries the field and the value it learned; realistic calls, one broken.
SCRIPT = [
    Turn(tool_calls=[("xerj_list_indices", {}), ("xerj_describe_index", {"index": "docs"}),
                     ("xerj_describe_index", {"index": "tickets"})]),
    Turn(tool_calls=search_what_was_learned),
    Turn(tool_calls=[
        ("xerj_search", {"index": "tickets", "size": 5, "source": ["title", "priority"],
                         "query": {"bool": {"filter": [{"term": {"service": "checkout"}},
                                                       {"term": {"status": "open"}}]}}}),
    ]),
    Turn(text="Checkout broke after a bad index template rolled out (pm-101); spring-sale latency came "
              "from a saturated database pool (pm-103). Two checkout tickets are still open (T-4, T-6)."),
]


def main() -> None:
    with services(SCRIPT, catalog=True) as (client, model, xerj_url), Dispatcher(url=xerj_url) as dispatcher:
        messages = [{"role": "user", "content": QUESTION}]
        result = run_agent(client, model=model, messages=messages, dispatcher=dispatcher)
        show(result)
        for tool, stats in result.tool_stats.items():
            print(f"  {tool}: {stats.calls} calls, {stats.errors} errors, {stats.repairs} repaired")


if __name__ == "__main__":
    main()
