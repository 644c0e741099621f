"""Validation: schema, stated limits with their paths, wider types, and realistic model mistakes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xerj_tools import load_registry
from xerj_tools.testing import XerjStandIn

from conftest import Runner

REGISTRY = load_registry()
Q = {"match": {"body": "outage"}}


def problems(tool: str, arguments: Any) -> dict[str, str]:
    result = REGISTRY.validate(tool, arguments)
    assert not result.ok
    return {p.path: p.message for p in result.problems}


# (tool, arguments, JSON path of the problem, a word the message must contain)
LIMITS: list[tuple[str, dict[str, Any], str, str]] = [
    ("xerj_search", {"index": "docs", "query": Q, "size": -1}, "$.size", "between 0 and 10000"),
    ("xerj_search", {"index": "docs", "query": Q, "from": -5}, "$.from", "between 0"),
    ("xerj_search", {"index": "docs", "query": Q, "from": 9995, "size": 10}, "$", "from + size"),
    ("xerj_search", {"index": "docs", "query": Q, "size": 10001}, "$.size", "10000"),
    ("xerj_search", {"index": "docs", "query": Q, "track_total_hits": -3}, "$.track_total_hits", "-1"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"window": 0}}, "$.rerank.window", "between 1 and 300"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"window": 301}}, "$.rerank.window", "300"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"min_score": 1.5}}, "$.rerank.min_score", "0 to 1"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"min_score": -0.1}}, "$.rerank.min_score", "0 to 1"),
    ("xerj_search", {"index": "docs", "query": Q, "size": 20, "from": 20, "rerank": {}}, "$.rerank", "window"),
    ("xerj_search", {"index": "docs", "query": Q, "sort": ["year"], "rerank": {}}, "$.rerank", "sort"),
    ("xerj_search", {"index": "docs", "query": Q, "size": 0, "rerank": {}}, "$.rerank", "size 0"),
    ("xerj_search", {"index": "docs", "query": {"bool": {"must": [Q]}}, "rerank": {}}, "$.rerank.query", "required"),
    ("xerj_search", {"index": "docs", "query": {"term": {"kind": "x"}}, "rerank": {}}, "$.rerank.query", "required"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"treshold": 1}}, "$.rerank.treshold", "unknown"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"provider": "cohere"}}, "$.rerank.provider", "jev"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"query": "x" * 4001}}, "$.rerank.query", "4000"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"fields": []}}, "$.rerank.fields", "1 to 64"),
    ("xerj_search", {"index": "docs", "query": Q, "rerank": {"timeout_ms": 0}}, "$.rerank.timeout_ms", "60000"),
    ("xerj_search", {"index": "docs", "query": Q, "source": False, "rerank": {}}, "$.rerank", "source"),
    ("xerj_semantic_search", {"index": "d", "field": "body", "query": "q", "k": 0}, "$.k", "between 1"),
    ("xerj_semantic_search", {"index": "d", "field": "body", "query": "  "}, "$.query", "non-empty"),
    ("xerj_semantic_search", {"index": "d", "field": "", "query": "q"}, "$.field", "non-empty"),
    ("xerj_semantic_search", {"index": "d", "field": "f", "query": "q", "size": -1}, "$.size", "between 0"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": []}, "$.query_vector", "non-empty"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": [1], "k": 0}, "$.k", "between 1"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": [1], "num_candidates": 0}, "$.num_candidates", "between 1"),
    ("xerj_hybrid_search", {"index": "d", "queries": []}, "$.queries", "at least one"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "fusion": "learned"}, "$.fusion", "rrf"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "rrf_k": 0}, "$.rrf_k", "at least 1"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "fusion": "linear", "rrf_k": 10}, "$.rrf_k", "rrf"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "aggs": {}}, "$.aggs", "hybrid"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "rerank": {}}, "$.rerank.query", "required"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q}], "size": 40, "rerank": {"query": "q"}}, "$.rerank", "window"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"weight": 1}]}, "$.queries[0].query", "required"),
    ("xerj_memory_store", {"namespace": "Agent", "text": "t"}, "$.namespace", "a-z"),
    ("xerj_memory_store", {"namespace": "a..b", "text": "t"}, "$.namespace", ".."),
    ("xerj_memory_store", {"namespace": "_x", "text": "t"}, "$.namespace", "starting"),
    ("xerj_memory_store", {"namespace": "a" * 201, "text": "t"}, "$.namespace", "200"),
    ("xerj_memory_store", {"namespace": "graph-edges", "text": "t"}, "$.namespace", "-edges"),
    ("xerj_memory_store", {"namespace": "n", "text": "t", "dedup_threshold": 1.2}, "$.dedup_threshold", "0 to 1"),
    ("xerj_memory_store", {"namespace": "n", "text": ""}, "$.text", "non-empty"),
    ("xerj_memory_store", {"namespace": "n", "text": "t", "vector": []}, "$.vector", "non-empty"),
    ("xerj_memory_recall", {"namespace": "n", "semantic": True}, "$.query", "semantic recall"),
    ("xerj_memory_recall", {"namespace": "n", "query": "", "semantic": True}, "$.query", "non-empty"),
    ("xerj_memory_recall", {"namespace": "n", "query": "q", "recency_weight": 2}, "$.recency_weight", "0 to 1"),
    ("xerj_memory_recall", {"namespace": "n", "query": "q", "k": 0}, "$.k", "between 1"),
    ("xerj_memory_recall", {"namespace": "n"}, "$", "query"),
    # XERJ reads `_source: []` as "every field", embeddings included (es_compat.rs:4570-4576)
    ("xerj_search", {"index": "docs", "query": Q, "source": []}, "$.source", "at least one field"),
    # recall fetches max(4k, 50) with recency_weight, within from + size <= 10000 (memory_api.rs:486-501)
    ("xerj_memory_recall", {"namespace": "n", "query": "q", "k": 2501, "recency_weight": 0.3}, "$.k", "2500"),
    ("xerj_memory_recall", {"namespace": "n", "query": "q", "k": 10000, "recency_weight": 0}, "$.k", "recency_weight"),
    # `$` matches before a final newline; the rule is a full match (memory_api.rs:101-124)
    ("xerj_memory_store", {"namespace": "agent\n", "text": "t"}, "$.namespace", "a-z"),
    ("xerj_memory_recall", {"namespace": "agent\n", "query": "q"}, "$.namespace", "a-z"),
]


@pytest.mark.parametrize(("tool", "arguments", "path", "word"), LIMITS, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(LIMITS)])
def test_stated_limit_is_rejected_with_its_path(tool: str, arguments: dict[str, Any], path: str, word: str) -> None:
    found = problems(tool, arguments)
    assert path in found, found
    assert word in found[path]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("xerj_search", {"index": "docs", "query": Q, "source": ["title"]}),
        ("xerj_search", {"index": "docs", "query": Q, "source": "title,body"}),
        ("xerj_search", {"index": "docs", "query": Q, "source": True}),
        ("xerj_search", {"index": "docs", "query": Q, "sort": {"year": "desc"}}),
        ("xerj_search", {"index": "docs", "query": Q, "sort": "year"}),
        ("xerj_search", {"index": "docs", "query": Q, "sort": [{"year": "desc"}, "_score"]}),
        ("xerj_search", {"index": "docs", "query": Q, "track_total_hits": 500}),
        ("xerj_search", {"index": "docs", "query": Q, "track_total_hits": False}),
        ("xerj_search", {"index": "logs-*,-logs-old", "query": {}}),
        ("xerj_search", {"index": "_all", "query": {}}),
        ("xerj_search", {"index": "docs", "query": Q, "from": 9990, "size": 10}),
        ("xerj_search", {"index": "docs", "query": Q, "rerank": {"window": 300, "min_score": 0}}),
        ("xerj_memory_store", {"namespace": "tenant-7.agent_1", "text": "", "vector": [0.5]}),
        ("xerj_memory_recall", {"namespace": "n", "vector": [0.1], "semantic": True}),
        ("xerj_memory_recall", {"namespace": "n", "query": "q", "k": 2500, "recency_weight": 0.5}),
        ("xerj_memory_recall", {"namespace": "n", "query": "q", "k": 10000}),
        ("xerj_hybrid_search", {"index": "d", "queries": [{"query": Q, "weight": 0.5}], "rrf_k": 10, "fusion": "rrf"}),
    ],
)
def test_wider_and_boundary_values_are_accepted(tool: str, arguments: dict[str, Any]) -> None:
    result = REGISTRY.validate(tool, arguments)
    assert result.ok, result.problems
    assert result.arguments == arguments


def test_every_problem_is_reported_at_once() -> None:
    found = problems("xerj_search", {"index": "a b", "query": "match", "size": -1, "from": "x"})
    assert set(found) >= {"$.index", "$.query", "$.size", "$.from"}
    assert found["$.query"].startswith("expected object, got string")


def test_raw_json_string_and_dict_validate_alike() -> None:
    args = {"index": "docs", "query": Q, "size": 3}
    assert REGISTRY.validate("xerj_search", json.dumps(args)).arguments == args
    assert REGISTRY.validate("xerj_search", args).ok


@pytest.mark.parametrize("raw", ['{"index": "docs", "query": {"match_all": {}', '{"size": NaN}', "[1, 2]", '"docs"'])
def test_undecodable_arguments(raw: str) -> None:
    result = REGISTRY.validate("xerj_search", raw)
    assert not result.ok and result.arguments is None
    assert result.problems[0].path == "$"


def test_unknown_tool_is_a_problem_not_an_exception() -> None:
    result = REGISTRY.validate("xerj_delete_everything", {})
    assert not result.ok and "unknown tool" in result.problems[0].message


# Realistic model mistakes: in strict mode (no repair) each one must give an ok:false message
# naming the problem, and send nothing. test_repair.py covers what repair does with them.
MISTAKES: list[tuple[str, str, str]] = [
    ("xerj_search", '{"index": "docs", "query": {"match": {"body": "x"}}, "size": "10"}', "$.size"),
    ("xerj_search", '{"index": "docs", "query": {"match": {"body": "x"}, "size": 5}}', "$.query"),
    ("xerj_search", '{"index": "docs", "query": {"match": {"body": "x"}, "sort": [{"year": "desc"}]}}', "$.query"),
    ("xerj_search", '{"index": "docs", "query": "{\\"match\\": {\\"body\\": \\"x\\"}}"}', "$.query"),
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}}, "size": -10}', "$.size"),
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}', "$"),
    ("xerj_search", '{"index": "../_cluster", "query": {}}', "$.index"),
    ("xerj_search", '{"index": "docs/_doc/1", "query": {}}', "$.index"),
    ("xerj_search", '{"index": "docs?pretty", "query": {}}', "$.index"),
    ("xerj_search", '{"index": "", "query": {}}', "$.index"),
    ("xerj_search", '{"query": {"match_all": {}}}', "$.index"),
    ("xerj_search", '{"index": "docs"}', "$.query"),
    ("xerj_search", '{"index": ["docs"], "query": {}}', "$.index"),
    ("xerj_search", '{"index": "docs", "query": {}, "_source": ["title"]}', "$._source"),
    ("xerj_search", '{"index": "docs", "query": {}, "size": 20, "from": 9990}', "$"),
    ("xerj_search", '{"index": "docs", "query": {}, "size": 1.5}', "$.size"),
    ("xerj_search", '{"index": "docs", "query": {}, "sort": [1, 2]}', "$.sort"),
    ("xerj_search", '{"index": "docs", "query": {}, "source": [1]}', "$.source"),
    ("xerj_search", '{"index": "docs", "query": {"bool": {}}, "rerank": {"window": 30}}', "$.rerank.query"),
    ("xerj_search", '{"index": "docs", "query": {}, "rerank": true}', "$.rerank"),
    ("xerj_search", "", "$.index"),
    ("xerj_search", "null", "$"),
    ("xerj_search", '{"index": "docs", "query": {}} trailing', "$"),
    ("xerj_semantic_search", '{"index": "docs", "field": "body"}', "$.query"),
    ("xerj_semantic_search", '{"index": "docs", "field": "body", "query": "x", "k": "five"}', "$.k"),
    ("xerj_semantic_search", '{"index": "docs", "field": "body", "query": "x", "from": 10}', "$.from"),
    ("xerj_vector_search", '{"index": "docs", "field": "v", "query_vector": "0.1,0.2"}', "$.query_vector"),
    ("xerj_vector_search", '{"index": "docs", "field": "v", "query_vector": [0.1, "a"]}', "$.query_vector[1]"),
    ("xerj_vector_search", '{"index": "docs", "field": "v", "query_vector": [Infinity]}', "$"),
    ("xerj_hybrid_search", '{"index": "docs", "queries": {"query": {"match_all": {}}}}', "$.queries"),
    ("xerj_hybrid_search", '{"index": "docs", "queries": [{"match": {"body": "x"}}]}', "$.queries[0].query"),
    ("xerj_hybrid_search", '{"index": "docs", "queries": [{"query": {"match_all": {}}}], "fusion": "learned"}', "$.fusion"),
    ("xerj_memory_store", '{"namespace": "../other-tenant", "text": "x"}', "$.namespace"),
    ("xerj_memory_store", '{"namespace": "team", "text": 42}', "$.text"),
    ("xerj_memory_store", '{"namespace": "team", "text": "x", "metadata": "tag=a"}', "$.metadata"),
    ("xerj_memory_recall", '{"namespace": "team", "k": -1, "query": "x"}', "$.k"),
    ("xerj_memory_recall", '{"namespace": "team", "query": "x", "top_k": 3}', "$.top_k"),
]


@pytest.mark.parametrize(("tool", "raw", "path"), MISTAKES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MISTAKES)])
def test_model_mistake_gets_a_specific_message_and_sends_nothing(
    make_runner: Any, xerj: XerjStandIn, tool: str, raw: str, path: str
) -> None:
    payload = make_runner(url=xerj.url, repair=False).payload(tool, raw)
    assert payload["ok"] is False
    error = payload["error"]
    assert error["code"] in ("invalid_arguments", "invalid_json")
    assert error["retryable"] is False and error["hint"]
    assert path in [p["path"] for p in error["problems"]], error
    assert xerj.requests == []


def test_unknown_tool_name_is_a_message(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_searchh", {"index": "docs"})
    assert payload["error"]["code"] == "unknown_tool"
    assert "xerj_search" in payload["error"]["hint"]
    assert xerj.requests == []
