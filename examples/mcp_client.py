"""xerj-tools as an MCP server: start it over stdio and use it from the MCP SDK's own client.

Runs against $XERJ_URL (key: $XERJ_API_KEY) or the built-in XERJ stand-in on 127.0.0.1.
Needs the `mcp` extra: pip install -e '.[mcp]' (in a clone: docs/usage.md#install).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import ExitStack

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from xerj_tools.testing import XerjStandIn


async def use(env: dict[str, str]) -> None:
    # What Claude Desktop, Cursor or openai-agents' MCPServerStdio do: start the command, speak
    # MCP over its stdin and stdout.
    params = StdioServerParameters(command=sys.executable, args=["-m", "xerj_tools", "mcp"], env=env)
    async with Client(stdio_client(params)) as client:
        for tool in (await client.list_tools()).tools:
            hints = tool.annotations
            print(f"{tool.name}: {tool.title} (read-only: {hints.read_only_hint if hints else None})")

        calls = [
            ("a search", "xerj_search", {"index": "docs", "query": {"match": {"body": "outage"}}, "size": 2}),
            ("a repaired call", "xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": "1"}),
            ("a refused call", "xerj_search", {"index": ".xerj-memory-team", "query": {"match_all": {}}}),
        ]
        for label, name, arguments in calls:
            result = await client.call_tool(name, arguments)
            message = json.loads(result.content[0].text)
            print(f"\n{label}: isError={result.is_error}")
            if message["ok"]:
                ids = [hit["_id"] for hit in message["hits"]]
                print(f"  total {message['total']}, hits {ids}, repairs {message.get('repairs', [])}")
            else:
                print(f"  {message['error']['code']}: {message['error']['reason']}")


def main() -> None:
    with ExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL") or stack.enter_context(XerjStandIn()).url
        env = {**os.environ, "XERJ_URL": xerj_url}
        asyncio.run(use(env))


if __name__ == "__main__":
    main()
