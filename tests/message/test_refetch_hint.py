"""How to read a cut field whole is the tool's to say, naming only tools the dispatcher serves."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping
from typing import Any

import httpx2
import pytest
from canned import canned as canned_answer
from test_budget import doc_hit, search_response

from xerj_tools import (
    XERJ_TOOLS,
    Advice,
    Dispatcher,
    HttpRequest,
    Limits,
    Tool,
    ToolRegistry,
    ToolResult,
    load_registry,
)

from conftest import chat_call

SEARCH = {"index": "docs", "query": {"match": {"body": "outage"}}, "size": 10}
NAMES = re.compile(r"\bxerj_[a-z_]+\b")


def without(*names: str) -> ToolRegistry:
    full = load_registry()
    return ToolRegistry([full[n] for n in full.names if n not in names])


def canned(tool: str, arguments: Any, body: Any, status: int = 200, **options: Any) -> ToolResult:
    transport = httpx2.MockTransport(canned_answer(body, status))
    with httpx2.Client(transport=transport) as client, \
            Dispatcher(url="http://xerj.test", client=client, **options) as dispatcher:  # fmt: skip
        return dispatcher.run(chat_call(tool, arguments))


def large_hits() -> dict[str, Any]:
    rng = random.Random(7)
    return search_response([doc_hit(rng, i, 450) for i in range(10)], total=87)


def named_tools(text: str) -> set[str]:
    return {n for n in NAMES.findall(text) if n in XERJ_TOOLS}


def test_the_full_registry_keeps_the_xerj_search_advice() -> None:
    hint = canned("xerj_search", SEARCH, large_hits()).payload["truncated"]["hint"]
    assert "fetch that hit alone with xerj_search" in hint


@pytest.mark.parametrize("absent", [("xerj_search",), ("xerj_search", "xerj_get_document")])
def test_a_registry_without_xerj_search_never_hears_of_it(absent: tuple[str, ...]) -> None:
    registry = without(*absent)
    arguments = {"index": "docs", "field": "body", "query": "outage"}
    result = canned("xerj_semantic_search", arguments, large_hits(), registry=registry)
    truncated = result.payload["truncated"]
    assert truncated["fields_cut"] == 10  # a field was cut, so the hint says how to read it
    assert named_tools(result.content) <= set(registry.names)
    assert not named_tools(truncated["hint"]) & set(absent)
    if "xerj_get_document" in registry.names:
        assert "xerj_get_document" in truncated["hint"]
    else:
        assert "to read a cut field whole, ask for fewer hits" in truncated["hint"]


def read_hits(received: Any) -> dict[str, Any]:
    hits = received.reply.data["hits"]["hits"]
    return {"ok": True, "total": len(hits), "hits": hits}


def finder(refetch: Any) -> Tool:
    return Tool(
        name="find_notes", build=lambda a: HttpRequest("POST", "/notes/_search", body={"query": {}}),
        read=read_hits, fit="hits", description="Find notes.", advice=Advice(refetch=refetch),
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )  # fmt: skip


def test_a_custom_tool_gives_its_own_hint() -> None:
    tool = finder("call read_note with the hit's _id to read it whole")
    result = canned("find_notes", {"q": "x"}, large_hits(), tools=[tool])
    hint = result.payload["truncated"]["hint"]
    assert "call read_note with the hit's _id to read it whole" in hint
    assert "xerj_search" not in hint


def test_a_custom_tool_hint_may_depend_on_what_is_served() -> None:
    seen: list[frozenset[str]] = []

    def refetch(served: Any) -> str:
        seen.append(frozenset(served))
        return "search again" + (" with xerj_search" if "xerj_search" in served else "")

    result = canned(
        "find_notes",
        {"q": "x"},
        large_hits(),
        tools=[finder(refetch)],
        registry=without("xerj_search"),
    )
    assert result.payload["truncated"]["hint"].endswith("search again")
    assert "find_notes" in seen[0] and "xerj_search" not in seen[0]


def test_a_custom_tool_without_a_hint_is_told_nothing_about_other_tools() -> None:
    result = canned("find_notes", {"q": "x"}, large_hits(), tools=[finder(None)])
    assert not named_tools(result.payload["truncated"]["hint"])


def test_refetch_hint_takes_a_sentence_a_function_or_nothing() -> None:
    served = ("a", "b")
    assert finder("s").advice.refetch_hint(served) == "s"
    assert finder(lambda names: ",".join(names)).advice.refetch_hint(served) == "a,b"
    assert finder(None).advice.refetch_hint(served) is None
    search = XERJ_TOOLS["xerj_search"]
    assert "xerj_search" in (search.advice.refetch_hint({"xerj_search"}) or "")
    assert "xerj_get_document" in (search.advice.refetch_hint({"xerj_get_document"}) or "")
    assert search.advice.refetch_hint(()) is None


def test_the_document_tool_names_xerj_search_only_where_it_is_served() -> None:
    body = {"_index": "docs", "_id": "d1", "found": True, "_source": {"body": "x" * 4000}}
    arguments = {"index": "docs", "id": "d1"}
    served = canned("xerj_get_document", arguments, body, limits=Limits(max_response_bytes=1000))
    assert served.code == "response_too_large"
    assert "xerj_search" in served.payload["error"]["hint"]
    alone = canned(
        "xerj_get_document",
        arguments,
        body,
        limits=Limits(max_response_bytes=1000),
        registry=without("xerj_search"),
    )
    assert alone.code == "response_too_large"
    assert "xerj_search" not in alone.content


def test_served_advice_drops_only_advice_that_names_an_absent_library_tool() -> None:
    from xerj_tools.tools._table import served_advice

    request = HttpRequest("GET", "/docs/_doc/d1")
    document = XERJ_TOOLS["xerj_get_document"]
    with_search = served_advice(document, {"xerj_get_document", "xerj_search"})
    assert with_search is not None and "xerj_search" in (with_search(request) or "")
    alone = served_advice(document, {"xerj_get_document"})
    assert alone is not None and alone(request) is None
    custom = Tool(
        name="t", build=lambda a: request, advice=Advice(too_large=lambda r: "ask for less (xerj_logs is an index)")
    )
    advice = served_advice(custom, {"t"})
    assert advice is not None and advice(request) == "ask for less (xerj_logs is an index)"
    assert served_advice(Tool(name="t", build=lambda a: request), {"t"}) is None


def test_every_library_hint_names_only_served_tools() -> None:
    """Every library tool's cut-field advice, for every registry of one tool more or less."""
    for name, tool in XERJ_TOOLS.items():
        for absent in XERJ_TOOLS:
            served: Mapping[str, Any] = {n: 1 for n in XERJ_TOOLS if n != absent}
            hint = tool.advice.refetch_hint(served) or ""
            assert absent not in named_tools(hint), (name, absent)


@pytest.mark.parametrize(
    "registry", [None, without("xerj_search")], ids=["full", "without_xerj_search"]
)
def test_an_argument_hint_names_xerj_search_only_where_it_is_served(
    registry: ToolRegistry | None,
) -> None:
    queries = [{"type": "match", "query": {"match": {"body": "outage"}}}]
    arguments = {"index": "docs", "queries": queries, "aggs": {"by": {"terms": {"field": "tag"}}}}
    result = canned("xerj_hybrid_search", arguments, {}, registry=registry)
    assert result.code == "invalid_arguments"
    [problem] = [p for p in result.payload["error"]["problems"] if p["path"] == "$.aggs"]
    assert problem["path"] == "$.aggs" and problem["message"].startswith("unknown argument")
    served = registry.names if registry is not None else tuple(XERJ_TOOLS)
    assert ("xerj_search" in problem["message"]) == ("xerj_search" in served)
    assert named_tools(result.content) <= set(served)


def test_checks_of_your_own_for_a_library_tool_are_kept() -> None:
    def no_aggs(arguments: Mapping[str, Any]) -> Any:
        return iter(())

    full = load_registry(checks={"xerj_hybrid_search": [no_aggs]})
    registry = ToolRegistry([full[n] for n in full.names if n != "xerj_search"])
    with Dispatcher(url="http://xerj.test", registry=registry) as dispatcher:
        assert dispatcher.registry["xerj_hybrid_search"].checks == (no_aggs,)


def test_a_tool_names_its_result_fields_and_mcp_publishes_them() -> None:
    """What a tool's answer holds is the tool's to say (`result_fields`), custom tools included."""
    pytest.importorskip("mcp")
    from xerj_tools.integrations.mcp._server import list_tools

    notes = dataclasses.replace(finder(None), result_fields={"total": {"type": "integer"}})
    with Dispatcher(url="http://xerj.test", tools=[notes]) as dispatcher:
        listed = {
            t.name: t.output_schema or {}
            for t in list_tools(dispatcher.registry, tools=dispatcher.tools)
        }
    assert listed["find_notes"]["properties"]["total"] == {"type": "integer"}
    search = listed["xerj_search"]["properties"]
    assert {"ok", "error", "truncated", "total", "hits", "aggregations", "ranked_by"} <= set(search)
    assert (
        listed["xerj_memory_recall"]["properties"]["hits"]["description"]
        == "each with id, text, score"
    )
    assert {"found", "_source"} <= set(listed["xerj_get_document"]["properties"])
    assert {"created", "deduplicated"} <= set(listed["xerj_memory_store"]["properties"])
    assert "hits" not in listed["xerj_list_indices"]["properties"]  # names no fields: the envelope


MAPPING = {"docs": {"mappings": {"properties": {
    "body": {"type": "text"}, "body_semantic": {"type": "semantic_text"},
    "v": {"type": "dense_vector", "dims": 3}}}}}  # fmt: skip


@pytest.mark.parametrize(
    "absent",
    [
        (),
        ("xerj_vector_search",),
        ("xerj_semantic_search", "xerj_vector_search", "xerj_hybrid_search"),
    ],
    ids=["full", "no_vector", "no_semantic_nor_vector"],
)
def test_describe_index_points_only_to_served_search_tools(absent: tuple[str, ...]) -> None:
    registry = without(*absent)
    result = canned("xerj_describe_index", {"index": "docs"}, MAPPING, registry=registry)
    assert result.ok
    assert named_tools(result.content) <= set(registry.names)
    search_with = result.payload["search_with"]
    assert set(search_with) == {"xerj_semantic_search", "xerj_vector_search"} - set(absent)
    if "xerj_vector_search" in search_with:
        assert search_with["xerj_vector_search"] == {"v": 3}
    if not absent:
        assert (
            "semantic_text: xerj_semantic_search, and semantic sub-queries" in result.payload["how"]
        )


def test_a_missing_field_note_sends_to_describe_index_only_where_it_is_served() -> None:
    from xerj_tools.tools._mappings import field_hint

    per_index = {"docs": {f"f{i:02}": {"type": "keyword"} for i in range(50)}}
    body = {"query": {"term": {"nope": "x"}}}
    served = field_hint(body, per_index, served={"xerj_search", "xerj_describe_index"})
    alone = field_hint(body, per_index, served={"xerj_search"})
    assert served is not None and "and 10 more (xerj_describe_index lists them)" in served
    assert alone is not None and "and 10 more." in alone and "xerj_describe_index" not in alone
    assert "xerj_describe_index" in (field_hint(body, per_index) or "")  # not known: as before
