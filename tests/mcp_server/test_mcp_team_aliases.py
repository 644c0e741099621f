"""Two tenants over `xerj-tools mcp --http` with per-caller policies, and aliases and a data
stream that cross from one tenant's names into the other's indices: with the listing cache cold
(each probe on a fresh server), warm, and with an alias made between two calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from xerj_tools.testing import XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from mcp_team_support import Running, connect, text_of

from xerj_tools.integrations.mcp._callers import hash_token

TOKEN_A, TOKEN_B = "xt_alias-tenant-a-1", "xt_alias-tenant-b-2"
B_SECRET = "B-SALARY-SECRET-42"


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn() as node:
        node.add_documents("a-docs", {"a1": {"title": "a doc"}})
        node.add_documents("b-docs", {"b1": {"title": "b private", "b_salary": B_SECRET}})
        node.add_alias("a-view", "b-docs")  # named inside tenant A's pattern, over B's index
        node.add_alias("a-mix", "a-docs", "b-docs")
        node.add_alias("a-both", "a-docs")
        backing = node.create_data_stream("a-events")  # A's stream
        node.add_documents(backing, {"e1": {"title": "a event"}})
        b_stream = node.create_data_stream("b-events")  # B's stream, aliased into A's names
        node.add_documents(b_stream, {"e2": {"title": "b event", "b_salary": B_SECRET}})
        node.add_alias("a-stream-view", b_stream)
        httpx2.post(f"{node.url}/_memory/tenant-b", json={"text": B_SECRET}).raise_for_status()
        yield node


@pytest.fixture
def callers(tmp_path: Path) -> Path:
    (tmp_path / "a.toml").write_text('allow_indices = ["a-*"]\nnamespace = "tenant-a"\n')
    (tmp_path / "b.toml").write_text('allow_indices = ["b-*"]\nnamespace = "tenant-b"\n')
    path = tmp_path / "callers.toml"
    path.write_text(
        f"""
[[caller]]
name = "tenant-a"
token_sha256 = "{hash_token(TOKEN_A)}"
policy = "a.toml"

[[caller]]
name = "tenant-b"
token_sha256 = "{hash_token(TOKEN_B)}"
policy = "b.toml"
"""
    )
    return path


def _leaks(payload: Any) -> bool:
    text = json.dumps(payload)
    return any(s in text for s in (B_SECRET, "b_salary", "b private", "b event", "b-docs"))


AGGS = {"size": 0, "aggs": {"v": {"terms": {"field": "b_salary"}}}}
PROBES: list[tuple[str, dict[str, Any]]] = [
    ("xerj_describe_index", {"index": "a-view"}),
    ("xerj_search", {"index": "a-view", "query": {"match": {"nosuchfield": "zzz"}}}),
    ("xerj_search", {"index": "a-view", "query": {"match_all": {}}, **AGGS}),
    ("xerj_search", {"index": "a-view", "query": {"match_all": {}}}),
    ("xerj_get_document", {"index": "a-view", "id": "b1"}),
    ("xerj_search", {"index": "a-mix", "query": {"match_all": {}}}),
    ("xerj_search", {"index": "a-stream-view", "query": {"match_all": {}}}),
    ("xerj_describe_index", {"index": "a-stream-view"}),
    ("xerj_search", {"index": "a-docs", "query": {"terms": {"title": {
        "index": "a-view", "id": "b1", "path": "b_salary"}}}}),
]  # fmt: skip


async def _call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with connect(url, token) as session:
        return text_of(await session.call_tool(tool, arguments))


@pytest.mark.parametrize(("tool", "arguments"), PROBES)
def test_an_alias_into_the_other_tenant_is_refused_on_a_cold_server(
    xerj: XerjStandIn, callers: Path, tool: str, arguments: dict[str, Any]
) -> None:
    with Running(url=xerj.url, callers_path=str(callers)) as server:
        payload = asyncio.run(_call(server.url, TOKEN_A, tool, arguments))
    assert payload["ok"] is False and payload["error"]["code"] == "policy_denied", payload
    assert not _leaks(payload)


def test_aliases_and_streams_hold_warm_and_when_made_between_two_calls(
    xerj: XerjStandIn, callers: Path
) -> None:
    async def scenario(url: str) -> None:
        async with connect(url, TOKEN_A) as a, connect(url, TOKEN_B) as b:
            own = text_of(await a.call_tool("xerj_search", {"index": "a-both", "query": {}}))
            assert [h["_index"] for h in own["hits"]] == ["a-docs"]  # the listing is now warm
            for tool, arguments in PROBES:
                payload = text_of(await a.call_tool(tool, arguments))
                assert payload["error"]["code"] == "policy_denied", (tool, payload)
                assert not _leaks(payload)
            stream = text_of(await a.call_tool("xerj_search", {"index": "a-events", "query": {}}))
            assert [h["_id"] for h in stream["hits"]] == ["e1"]
            listed = text_of(await a.call_tool("xerj_list_indices", {}))
            names = [r["name"] for r in listed["indices"]]
            assert names == ["a-docs", "a-events"] and not _leaks(listed)
            assert listed["indices"][0]["aliases"] == ["a-both"]
            # an alias made now, while tenant A's listing is cached
            xerj.add_alias("a-late", "b-docs")
            for tool, arguments in [
                ("xerj_search", {"index": "a-late", "query": {"match_all": {}}, **AGGS}),
                ("xerj_describe_index", {"index": "a-late"}),
                ("xerj_get_document", {"index": "a-late", "id": "b1"}),
            ]:
                payload = text_of(await a.call_tool(tool, arguments))
                assert payload["error"]["code"] == "policy_denied", (tool, payload)
                assert not _leaks(payload)
            # tenant B reads its own data, its stream included
            mine = text_of(await b.call_tool("xerj_search", {"index": "b-events", "query": {}}))
            assert [h["_id"] for h in mine["hits"]] == ["e2"]

    try:
        with Running(url=xerj.url, callers_path=str(callers)) as server:
            asyncio.run(scenario(server.url))
    finally:
        xerj.remove_alias("a-late", "b-docs")
