"""What crosses the wire: embeddings in `_source`, XERJ's `_source` filter as the stand-in
plays it, memory while a large answer is decoded, and `response_too_large` hints per tool."""

from __future__ import annotations

import json
import random
import tracemalloc
from typing import Any

import httpx2
import pytest

from xerj_tools import HttpRequest, Limits
from xerj_tools._http._models import Reply
from xerj_tools.testing import XerjStandIn

from conftest import Runner, chat_call, success_payload

MATCH = {"match": {"body": "outage"}}


def raw_search(xerj: XerjStandIn, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx2.post(f"{xerj.url}/docs/_search", json=body)
    assert response.status_code == 200, response.text
    return [h["_source"] for h in response.json()["hits"]["hits"]]


# The stand-in's `_source` filter, checked against XERJ's (index.rs:15672-15832 at e6e8e6a).

def test_a_leading_wildcard_excludes_nothing(xerj: XerjStandIn) -> None:
    sources = raw_search(xerj, {"query": MATCH, "_source": {"excludes": ["*_vector", "*_vector_chunks"]}})
    assert sources and all("body_vector" in s for s in sources)


def test_exact_names_and_trailing_wildcards_are_honoured(xerj: XerjStandIn) -> None:
    assert all("body_vector" not in s and "body" in s
               for s in raw_search(xerj, {"query": MATCH, "_source": {"excludes": ["body_vector"]}}))
    assert all(set(s) == {"body", "body_vector"} for s in raw_search(xerj, {"query": MATCH, "_source": ["bod*"]}))
    assert all(set(s) == {"title", "year"} for s in raw_search(xerj, {"query": MATCH, "_source": "title, year"}))


def test_a_dotted_pattern_switches_to_path_globbing(xerj: XerjStandIn) -> None:
    # With any dotted pattern XERJ globs each path segment (`*` stops at a dot).
    sources = raw_search(xerj, {"query": MATCH, "_source": {"excludes": ["*_vector", "meta.x"]}})
    assert sources and all("body_vector" not in s and "title" in s for s in sources)
    xerj.add_documents("docs", {"n1": {"body": "outage", "meta": {"x": 1, "y": {"z": 2}}, "gone": None}})
    nested = raw_search(xerj, {"query": {"term": {"body": "outage"}}, "_source": {"excludes": ["meta.y.*", "a.b"]}})
    assert [{k: v for k, v in s.items() if k != "body_vector"} for s in nested] == [
        {"body": "outage", "meta": {"x": 1}}]  # emptied objects and null leaves go


@pytest.mark.parametrize("body", [
    {"query": {"semantic": {"field": "body", "query": "outage"}}, "_source": ["title"]},
    {"knn": {"field": "body_vector", "query_vector": [0.1] * 384, "k": 3}, "_source": {"excludes": ["body_vector"]}},
])
def test_knn_and_semantic_searches_apply_no_source_filter(xerj: XerjStandIn, body: dict[str, Any]) -> None:
    sources = raw_search(xerj, body)
    assert sources and all("body_vector" in s and "body" in s for s in sources)


def test_a_hybrid_filters_the_hits_its_text_sub_queries_found_first(xerj: XerjStandIn) -> None:
    semantic = {"semantic": {"field": "body", "query": "index snapshot restore"}}
    body = {"query": {"hybrid": {"queries": [{"query": MATCH}, {"query": semantic}]}}, "size": 10,
            "_source": {"excludes": ["body_vector"]}}
    text_ids = {h["_id"] for h in httpx2.post(f"{xerj.url}/docs/_search", json={"query": MATCH}).json()["hits"]["hits"]}
    hits = httpx2.post(f"{xerj.url}/docs/_search", json=body).json()["hits"]["hits"]
    assert {h["_id"] for h in hits} - text_ids, "the semantic arm must add hits of its own"
    for hit in hits:
        assert ("body_vector" in hit["_source"]) == (hit["_id"] not in text_ids)


# The client.

def test_embeddings_cross_the_wire_on_a_semantic_search_but_never_reach_the_model(runner: Runner,
                                                                                  xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn outage"})
    sent = xerj.requests[-1].body
    assert "_source" not in sent  # XERJ would ignore it on this path
    assert payload["ok"] and payload["hits"] and "_vector" not in json.dumps(payload)
    assert all("body_vector" in s for s in raw_search(xerj, sent))  # what the node really sends


def test_a_hybrid_asks_to_drop_the_embeddings_it_can_name(runner: Runner, xerj: XerjStandIn) -> None:
    args = {"index": "docs", "queries": [{"query": MATCH}, {"query": {"semantic": {"field": "body", "query": "x"}}}]}
    payload = runner.payload("xerj_hybrid_search", args)
    assert xerj.requests[-1].body["_source"] == {"excludes": ["body_vector", "body_vector_chunks"]}
    assert payload["ok"] and "_vector" not in json.dumps(payload)


def test_the_model_may_still_ask_for_an_embedding_by_name(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": MATCH, "source": ["title", "body_vector"]})
    assert payload["hits"] and all(len(h["_source"]["body_vector"]) == 384 for h in payload["hits"])


SEMANTIC = {"semantic": {"field": "body", "query": "vpn outage"}}
KNN = {"knn": {"field": "body_vector", "query_vector": [0.1] * 384, "k": 3}}
HYBRID = {"hybrid": {"queries": [{"query": MATCH}, {"query": SEMANTIC}]}}


@pytest.mark.parametrize("query", [SEMANTIC, KNN, HYBRID], ids=["semantic", "knn", "hybrid"])
def test_fields_named_in_source_are_what_the_model_reads_where_xerj_ignores_them(
    runner: Runner, xerj: XerjStandIn, query: dict[str, Any]
) -> None:
    # XERJ returns the whole document on these paths (index.rs:6690-6726, 6786-6787 return
    # before apply_source_filter at 9930; a hybrid's vector arm too, index.rs:5364).
    payload = runner.payload("xerj_search", {"index": "docs", "query": query, "source": ["title"], "size": 10})
    sent = xerj.requests[-1].body
    assert any("body_vector" in s for s in raw_search(xerj, sent))  # the node did send them
    assert payload["ok"] and payload["hits"]
    assert all(set(h["_source"]) == {"title"} for h in payload["hits"]), payload["hits"]


def test_an_embedding_is_kept_only_when_source_names_it_exactly(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": SEMANTIC, "source": "title, bod*"})
    assert payload["hits"] and all(set(h["_source"]) == {"title", "body"} for h in payload["hits"])
    payload = runner.payload("xerj_search", {"index": "docs", "query": KNN, "source": ["body_vector"]})
    assert payload["hits"] and all(set(h["_source"]) == {"body_vector"} for h in payload["hits"])


def test_source_false_drops_the_source_where_xerj_ignores_it(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": KNN, "source": False})
    assert payload["hits"] and all("_source" not in h for h in payload["hits"])


def _big_answer(hits: int, chunks: int) -> bytes:
    rng = random.Random(5)
    vector = lambda: [rng.uniform(-1, 1) for _ in range(384)]  # noqa: E731
    return json.dumps({"hits": {"total": {"value": hits, "relation": "eq"}, "hits": [
        {"_index": "docs", "_id": str(i), "_score": 1.0,
         "_source": {"title": f"doc {i}", "body_vector": vector(),
                     "body_vector_chunks": [vector() for _ in range(chunks)]}}
        for i in range(hits)]}}).encode()


def test_a_large_answer_is_decoded_without_holding_every_embedding() -> None:
    body = _big_answer(hits=120, chunks=4)  # ~ 4.5 MB, almost all of it embeddings
    request = HttpRequest("POST", "/docs/_search", {"query": {}}, kind="search")
    reply = Reply(200, {}, body)
    tracemalloc.start()
    try:
        payload = success_payload("xerj_semantic_search", reply, request)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(payload["hits"]) == 120 and "body_vector" not in payload["hits"][0]["_source"]
    # Decoding every float would take about three times the body (a Python float and a list
    # slot each); dropping each hit's embeddings as it is parsed keeps the peak near the
    # decoded text alone.
    assert peak < 1.5 * len(body), (peak, len(body))


@pytest.mark.parametrize(("tool", "arguments", "words"), [
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "outage", "k": 8}, ("size or k", "k 8")),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [0.1] * 384,
                            "num_candidates": 6}, ("size or k", "k 6")),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "size": 8}, ("smaller size", "e.g. 2")),
    ("xerj_search", {"index": "docs", "query": {}, "size": 20}, ("smaller size", "`source`")),
])
def test_every_response_too_large_hint_names_what_the_tool_can_change(
    make_runner: Any, xerj: XerjStandIn, tool: str, arguments: dict[str, Any], words: tuple[str, ...]
) -> None:
    runner = make_runner(url=xerj.url, limits=Limits(max_response_bytes=2000))
    result = runner.run(chat_call(tool, arguments))
    error = result.payload["error"]
    assert result.code == "response_too_large" and error["retryable"] is False
    assert all(w in error["hint"] for w in words), error["hint"]
    if tool != "xerj_search":
        assert "source" not in error["hint"]  # these tools have no such argument
