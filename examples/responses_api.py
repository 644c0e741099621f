"""The same loop on the Responses API: flat tool definitions, function_call items in and out.

Run: python examples/responses_api.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

from _services import services, show

from xerj_tools import AgentOptions, Dispatcher, run_agent
from xerj_tools.testing import Turn

SCRIPT = [
    Turn(tool_calls=[("xerj_search", {"index": "docs", "size": 3, "query": {"match": {"body": "restore index"}},
                                      "rerank": {"query": "how do I restore a search index?"}})]),
    Turn(text="Restore the latest snapshot into a new index, swap the alias, reopen writes (rb-202)."),
]


def main() -> None:
    with services(SCRIPT) as (client, model, xerj_url), Dispatcher(url=xerj_url) as dispatcher:
        result = run_agent(client, model=model, messages="How do I restore a search index?",
                           dispatcher=dispatcher, options=AgentOptions(api="responses"))
        show(result)


if __name__ == "__main__":
    main()
