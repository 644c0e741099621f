"""Each documented argument of each tool produces the exact XERJ request, checked on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from xerj_tools.testing import XerjStandIn

from conftest import Runner

# Embedding fields are excluded by exact name, and only those a query names: XERJ's `_source`
# filter takes `*` as a trailing wildcard only (index.rs:15826-15832), so `*_vector` would match
# nothing, and kNN/semantic searches apply no `_source` filter at all (index.rs:6690-6787).
SEMANTIC_BODY = {"excludes": ["body_vector", "body_vector_chunks"]}
MATCH = {"match": {"body": "checkout outage"}}

# (tool, arguments, method, raw path, body the node must receive)
CASES: list[tuple[str, dict[str, Any], str, str, dict[str, Any]]] = [
    # xerj_search
    ("xerj_search", {"index": "docs", "query": MATCH}, "POST", "/docs/_search",
     {"query": MATCH}),
    ("xerj_search", {"index": "docs", "query": MATCH, "size": 3}, "POST", "/docs/_search",
     {"query": MATCH, "size": 3}),
    ("xerj_search", {"index": "docs", "query": MATCH, "from": 2}, "POST", "/docs/_search",
     {"query": MATCH, "from": 2}),
    ("xerj_search", {"index": "tickets", "query": {"match_all": {}}, "sort": [{"opened": "desc"}]},
     "POST", "/tickets/_search",
     {"query": {"match_all": {}}, "sort": [{"opened": "desc"}]}),
    ("xerj_search", {"index": "tickets", "query": {}, "sort": "opened"}, "POST", "/tickets/_search",
     {"query": {}, "sort": "opened"}),
    ("xerj_search", {"index": "tickets", "query": {}, "sort": {"priority": "asc"}}, "POST",
     "/tickets/_search", {"query": {}, "sort": {"priority": "asc"}}),
    ("xerj_search", {"index": "docs", "query": MATCH, "source": True}, "POST", "/docs/_search",
     {"query": MATCH}),
    ("xerj_search", {"index": "docs", "query": MATCH, "source": False}, "POST", "/docs/_search",
     {"query": MATCH, "_source": False}),
    ("xerj_search", {"index": "docs", "query": MATCH, "source": ["title", "year"]}, "POST",
     "/docs/_search", {"query": MATCH, "_source": ["title", "year"]}),
    ("xerj_search", {"index": "docs", "query": MATCH, "source": "title,year"}, "POST",
     "/docs/_search", {"query": MATCH, "_source": "title,year"}),
    ("xerj_search", {"index": "tickets", "query": {}, "size": 0,
                     "aggs": {"by_service": {"terms": {"field": "service"}}}}, "POST",
     "/tickets/_search", {"query": {}, "size": 0,
                          "aggs": {"by_service": {"terms": {"field": "service"}}}}),
    ("xerj_search", {"index": "docs", "query": MATCH, "track_total_hits": True}, "POST",
     "/docs/_search", {"query": MATCH, "track_total_hits": True}),
    ("xerj_search", {"index": "docs", "query": MATCH, "track_total_hits": 100}, "POST",
     "/docs/_search", {"query": MATCH, "track_total_hits": 100}),
    ("xerj_search", {"index": "docs", "query": MATCH, "rerank": {}}, "POST", "/docs/_search",
     {"query": MATCH, "rerank": {}}),
    ("xerj_search", {"index": "docs", "query": {"bool": {"filter": [{"term": {"kind": "runbook"}}]}},
                     "rerank": {"query": "how do I restore an index", "window": 20, "min_score": 0.2}},
     "POST", "/docs/_search",
     {"query": {"bool": {"filter": [{"term": {"kind": "runbook"}}]}},
      "rerank": {"query": "how do I restore an index", "window": 20, "min_score": 0.2}}),
    ("xerj_search", {"index": "docs,tickets", "query": {}}, "POST", "/docs,tickets/_search",
     {"query": {}}),
    ("xerj_search", {"index": "do*", "query": {}}, "POST", "/do*/_search",
     {"query": {}}),
    ("xerj_search", {"index": "docs", "query": {"semantic": {"field": "body", "query": "q"}}}, "POST",
     "/docs/_search", {"query": {"semantic": {"field": "body", "query": "q"}}}),
    ("xerj_search", {"index": "docs", "query": {"semantic": {"field": "body", "query": "q"}}, "source": ["title"]},
     "POST", "/docs/_search", {"query": {"semantic": {"field": "body", "query": "q"}}, "_source": ["title"]}),
    ("xerj_search", {"index": "docs", "query": MATCH, "size": 5.0}, "POST", "/docs/_search",
     {"query": MATCH, "size": 5}),
    # xerj_semantic_search
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn trouble"}, "POST",
     "/docs/_search", {"query": {"semantic": {"field": "body", "query": "vpn trouble"}}}),
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn", "k": 3}, "POST",
     "/docs/_search", {"query": {"semantic": {"field": "body", "query": "vpn", "k": 3}}}),
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn",
                              "filter": {"term": {"kind": "postmortem"}}}, "POST", "/docs/_search",
     {"query": {"semantic": {"field": "body", "query": "vpn", "filter": {"term": {"kind": "postmortem"}}}}}),
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn", "size": 2}, "POST",
     "/docs/_search", {"query": {"semantic": {"field": "body", "query": "vpn"}}, "size": 2}),
    # xerj_vector_search
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [0.5, -0.25]},
     "POST", "/docs/_search",
     {"knn": {"field": "body_vector", "query_vector": [0.5, -0.25]}}),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [1, 0], "k": 4},
     "POST", "/docs/_search", {"knn": {"field": "body_vector", "query_vector": [1, 0], "k": 4}}),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [1, 0],
                            "num_candidates": 900}, "POST", "/docs/_search",
     {"knn": {"field": "body_vector", "query_vector": [1, 0], "num_candidates": 900}}),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [1, 0],
                            "filter": {"term": {"kind": "runbook"}}}, "POST", "/docs/_search",
     {"knn": {"field": "body_vector", "query_vector": [1, 0], "filter": {"term": {"kind": "runbook"}}}}),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [1, 0], "size": 1},
     "POST", "/docs/_search",
     {"knn": {"field": "body_vector", "query_vector": [1, 0]}, "size": 1}),
    # xerj_hybrid_search
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}, {"query": {"semantic": {
        "field": "body", "query": "checkout outage"}}, "weight": 2}]}, "POST", "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}, {"query": {"semantic": {
         "field": "body", "query": "checkout outage"}}, "weight": 2}]}}, "_source": SEMANTIC_BODY}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}, {"query": {"knn": {
        "field": "body_vector", "query_vector": [1, 0], "k": 5}}}]}, "POST", "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}, {"query": {"knn": {
         "field": "body_vector", "query_vector": [1, 0], "k": 5}}}]}}, "_source": SEMANTIC_BODY}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "fusion": "linear"},
     "POST", "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}], "fusion": "linear"}}}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "fusion": "rrf"},
     "POST", "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}], "fusion": "rrf"}}}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "rrf_k": 20}, "POST",
     "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}], "fusion": {"type": "rrf", "k": 20}}}}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "size": 4}, "POST",
     "/docs/_search", {"query": {"hybrid": {"queries": [{"query": MATCH}]}}, "size": 4}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": MATCH}], "rerank": {"query": "outage"}},
     "POST", "/docs/_search",
     {"query": {"hybrid": {"queries": [{"query": MATCH}]}}, "rerank": {"query": "outage"}}),
    # xerj_memory_store
    ("xerj_memory_store", {"namespace": "agent-1", "text": "prefers metric units", "id": "m1"},
     "POST", "/_memory/agent-1", {"text": "prefers metric units", "id": "m1"}),
    ("xerj_memory_store", {"namespace": "agent-1", "text": "t", "id": "m2", "metadata": {"kind": "pref"}},
     "POST", "/_memory/agent-1", {"text": "t", "id": "m2", "metadata": {"kind": "pref"}}),
    ("xerj_memory_store", {"namespace": "agent-1", "text": "", "id": "m3", "vector": [0.1, 0.2]},
     "POST", "/_memory/agent-1", {"text": "", "id": "m3", "vector": [0.1, 0.2]}),
    ("xerj_memory_store", {"namespace": "agent-1", "text": "t", "id": "m4", "dedup": True},
     "POST", "/_memory/agent-1", {"text": "t", "id": "m4", "dedup": True}),
    ("xerj_memory_store", {"namespace": "agent-1", "text": "t", "id": "m5", "dedup": True,
                           "dedup_threshold": 0.9}, "POST", "/_memory/agent-1",
     {"text": "t", "id": "m5", "dedup": True, "dedup_threshold": 0.9}),
    # xerj_memory_recall
    ("xerj_memory_recall", {"namespace": "agent-1", "query": "units"}, "POST",
     "/_memory/agent-1/_recall", {"query": "units"}),
    ("xerj_memory_recall", {"namespace": "agent-1", "query": "units", "semantic": True}, "POST",
     "/_memory/agent-1/_recall", {"query": "units", "semantic": True}),
    ("xerj_memory_recall", {"namespace": "agent-1", "vector": [0.1, 0.2]}, "POST",
     "/_memory/agent-1/_recall", {"vector": [0.1, 0.2]}),
    ("xerj_memory_recall", {"namespace": "agent-1", "vector": [0.1], "query": "x", "semantic": True},
     "POST", "/_memory/agent-1/_recall", {"vector": [0.1]}),
    ("xerj_memory_recall", {"namespace": "agent-1", "query": "units", "k": 3}, "POST",
     "/_memory/agent-1/_recall", {"query": "units", "k": 3}),
    ("xerj_memory_recall", {"namespace": "agent-1", "query": "units",
                            "filter": {"term": {"metadata.kind": "pref"}}}, "POST",
     "/_memory/agent-1/_recall", {"query": "units", "filter": {"term": {"metadata.kind": "pref"}}}),
    ("xerj_memory_recall", {"namespace": "agent-1", "query": "units", "recency_weight": 0.3}, "POST",
     "/_memory/agent-1/_recall", {"query": "units", "recency_weight": 0.3}),
]


@pytest.mark.parametrize(("tool", "arguments", "method", "path", "body"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_exact_request_on_the_wire(runner: Runner, xerj: XerjStandIn, tool: str, arguments: dict[str, Any],
                                   method: str, path: str, body: dict[str, Any]) -> None:
    payload = runner.payload(tool, arguments)
    # The cluster's listing is read first to resolve the names (`xerj.listings`); an empty kNN
    # answer is followed by a read of the mapping, for a field hint (`_after`); nothing else.
    own = [r for r in xerj.requests
           if not (tool != "xerj_describe_index" and r.path.endswith("/_mapping"))]
    assert len(own) == 1
    sent = own[0]
    assert (sent.method, sent.path, sent.body) == (method, path, body)
    assert sent.headers["content-type"] == "application/json"
    assert payload["ok"] is True, payload


def test_memory_store_without_id_chooses_one_and_reports_it(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_memory_store", {"namespace": "agent-1", "text": "likes tea"})
    sent = xerj.requests[0].body
    assert set(sent) == {"text", "id"} and len(sent["id"]) == 36
    assert payload["id"] == sent["id"] and payload["created"] is True


def test_absent_arguments_are_omitted_never_null(runner: Runner, xerj: XerjStandIn) -> None:
    runner.payload("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn"})
    body = xerj.requests[0].body
    assert "null" not in repr(body) and None not in body.values()
    assert set(body["query"]["semantic"]) == {"field", "query"}


def test_recall_with_vector_and_query_tells_the_model(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_memory_recall", {"namespace": "n", "vector": [1.0], "query": "q"})
    assert payload["ok"] is True
    assert "query/semantic were not used" in payload["notes"][0]


@pytest.mark.parametrize("index", ["my index", "docs#frag", "a?b", "../_cluster", "docs/_doc", "%2e%2e"])
def test_index_never_leaves_its_path_segment(runner: Runner, xerj: XerjStandIn, index: str) -> None:
    payload = runner.payload("xerj_search", {"index": index, "query": {}})
    assert payload["ok"] is False and payload["error"]["code"] == "invalid_arguments"
    assert xerj.requests == []


def test_unusual_but_valid_index_is_percent_encoded(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.add_documents("café-logs", {"1": {"msg": "hello"}})
    payload = runner.payload("xerj_search", {"index": "café-logs", "query": {}})
    assert payload["ok"] is True and payload["total"] == 1
    assert xerj.requests[0].path == "/caf%C3%A9-logs/_search"
    assert xerj.requests[0].segments == ["café-logs", "_search"]


def test_embedding_fields_are_excluded_by_name_where_the_general_path_filters() -> None:
    from xerj_tools import HANDLERS

    semantic = {"semantic": {"field": "body", "query": "q"}}
    inside_bool = HANDLERS["xerj_search"]({"index": "docs", "query": {"bool": {"should": [MATCH, semantic]}}})
    assert inside_bool.body is not None and inside_bool.body["_source"] == SEMANTIC_BODY
    knn_sub = {"knn": {"field": "title_vector", "query_vector": [1.0]}}
    hybrid = HANDLERS["xerj_hybrid_search"]({"index": "d", "queries": [{"query": semantic}, {"query": knn_sub}]})
    assert hybrid.body is not None and hybrid.body["_source"] == {
        "excludes": ["body_vector", "body_vector_chunks", "title_vector", "title_vector_chunks"]}
    for tool, args in (("xerj_search", {"index": "d", "query": MATCH}),
                       ("xerj_search", {"index": "d", "query": semantic}),
                       ("xerj_semantic_search", {"index": "d", "field": "body", "query": "q"}),
                       ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": [1.0]}),
                       ("xerj_hybrid_search", {"index": "d", "queries": [{"query": MATCH}]})):
        body = HANDLERS[tool](args).body
        assert body is not None and "_source" not in body, (tool, args)  # nothing XERJ would ignore
