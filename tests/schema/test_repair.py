"""Audited repair: each kind of repair, the cases that must stay unrepaired, and strict mode."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xerj_tools import load_registry
from xerj_tools.testing import XerjStandIn

from conftest import Runner, chat_call

REGISTRY = load_registry()
MATCH = {"match": {"body": "checkout"}}


@pytest.mark.parametrize(
    ("tool", "arguments", "repaired", "repairs"),
    [
        # a numeric string where an integer or number is required
        ("xerj_search", {"index": "docs", "query": MATCH, "size": "10"},
         {"index": "docs", "query": MATCH, "size": 10}, ['$.size: "10" → 10']),
        ("xerj_memory_recall", {"namespace": "n", "query": "q", "recency_weight": "0.25", "k": "3"},
         {"namespace": "n", "query": "q", "recency_weight": 0.25, "k": 3},
         ['$.recency_weight: "0.25" → 0.25', '$.k: "3" → 3']),
        ("xerj_search", {"index": "docs", "query": MATCH, "track_total_hits": "500"},
         {"index": "docs", "query": MATCH, "track_total_hits": 500}, ['$.track_total_hits: "500" → 500']),
        ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": ["0.5", 1]},
         {"index": "d", "field": "v", "query_vector": [0.5, 1]}, ['$.query_vector[0]: "0.5" → 0.5']),
        # a JSON string where an object or array is required
        ("xerj_search", {"index": "docs", "query": json.dumps(MATCH)},
         {"index": "docs", "query": MATCH}, ["$.query: JSON string → object"]),
        ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": "[0.1, 0.2]"},
         {"index": "d", "field": "v", "query_vector": [0.1, 0.2]}, ["$.query_vector: JSON string → array"]),
        ("xerj_hybrid_search", {"index": "d", "queries": json.dumps([{"query": MATCH, "weight": "2"}])},
         {"index": "d", "queries": [{"query": MATCH, "weight": 2}]},
         ["$.queries: JSON string → array", '$.queries[0].weight: "2" → 2']),
        ("xerj_memory_store", {"namespace": "n", "text": "t", "metadata": '{"kind": "pref"}'},
         {"namespace": "n", "text": "t", "metadata": {"kind": "pref"}}, ["$.metadata: JSON string → object"]),
        # size, from, sort, _source/source, aggs nested inside query
        ("xerj_search", {"index": "docs", "query": {**MATCH, "size": 5, "from": 5}},
         {"index": "docs", "query": MATCH, "size": 5, "from": 5}, ["$.query.size → $.size", "$.query.from → $.from"]),
        ("xerj_search", {"index": "docs", "query": {**MATCH, "sort": [{"year": "desc"}], "_source": ["title"]}},
         {"index": "docs", "query": MATCH, "sort": [{"year": "desc"}], "source": ["title"]},
         ["$.query.sort → $.sort", "$.query._source → $.source"]),
        ("xerj_search", {"index": "docs", "query": {**MATCH, "aggs": {"k": {"terms": {"field": "kind"}}}}},
         {"index": "docs", "query": MATCH, "aggs": {"k": {"terms": {"field": "kind"}}}}, ["$.query.aggs → $.aggs"]),
        ("xerj_search", {"index": "docs", "query": json.dumps({**MATCH, "size": "2"})},
         {"index": "docs", "query": MATCH, "size": 2},
         ["$.query: JSON string → object", "$.query.size → $.size", '$.size: "2" → 2']),
        # a single query object where `queries` needs an array of {"query": ...}
        ("xerj_hybrid_search", {"index": "d", "queries": {"query": MATCH, "weight": 2}},
         {"index": "d", "queries": [{"query": MATCH, "weight": 2}]}, ["$.queries: one sub-query object → array of one"]),
        ("xerj_hybrid_search", {"index": "d", "queries": MATCH},
         {"index": "d", "queries": [{"query": MATCH}]}, ['$.queries: one query clause → [{"query": clause}]']),
    ],
)
def test_repairs_with_one_reading(tool: str, arguments: dict[str, Any], repaired: dict[str, Any],
                                  repairs: list[str]) -> None:
    result = REGISTRY.validate(tool, arguments, repair=True)
    assert result.ok, result.problems
    assert result.arguments == repaired
    assert list(result.repairs) == repairs


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        # two readings, or none: nothing is guessed
        ("xerj_search", {"index": "docs", "query": MATCH, "size": "ten"}),
        ("xerj_search", {"index": "docs", "query": MATCH, "size": "10.5"}),  # not an integer
        ("xerj_search", {"index": "docs", "query": MATCH, "size": " 10"}),
        ("xerj_search", {"index": "docs", "query": {**MATCH, "size": 5}, "size": 3}),  # top level has size
        ("xerj_search", {"index": "docs", "query": {"size": 5, "from": 0}}),  # nothing left of the query
        ("xerj_search", {"index": "docs", "query": {**MATCH, "_source": ["a"], "source": ["b"]}}),
        ("xerj_search", {"index": "docs", "query": {**MATCH, "term": {"a": 1}}}),  # two clauses: not ours to pick
        ("xerj_search", {"index": "docs", "query": "[1, 2]"}),  # JSON, but an array where an object goes
        ("xerj_search", {"index": "docs", "query": "match body checkout"}),  # not JSON at all
        ("xerj_memory_store", {"namespace": "n", "text": "t", "metadata": "kind=pref"}),
        ("xerj_hybrid_search", {"index": "d", "queries": {"match": {"a": 1}, "weight": 2}}),  # clause or sub-query?
        ("xerj_memory_store", {"namespace": "n", "text": "t", "dedup": "true"}),  # booleans are not repaired
    ],
)
def test_no_repair_without_a_single_reading(tool: str, arguments: dict[str, Any]) -> None:
    result = REGISTRY.validate(tool, arguments, repair=True)
    assert not result.ok
    assert result.problems


def test_string_field_keeps_its_string() -> None:
    result = REGISTRY.validate("xerj_search", {"index": "123", "query": {}, "source": "10"}, repair=True)
    assert result.ok and result.arguments == {"index": "123", "query": {}, "source": "10"} and not result.repairs


def test_valid_calls_are_never_touched() -> None:
    args = {"index": "docs", "query": MATCH, "size": 3}
    result = REGISTRY.validate("xerj_search", args, repair=True)
    assert result.ok and result.repairs == () and result.arguments == args


def test_repaired_call_is_sent_and_the_model_is_told(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": {**MATCH, "size": "1"}})
    assert payload["ok"] is True and len(payload["hits"]) == 1
    assert payload["repairs"] == ["$.query.size → $.size", '$.size: "1" → 1']
    assert xerj.requests[0].body["size"] == 1 and xerj.requests[0].body["query"] == MATCH


def test_still_invalid_after_repair_lists_every_problem_and_the_repairs(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "a b", "query": MATCH, "size": "10", "from": "-5"})
    error = payload["error"]
    assert error["code"] == "invalid_arguments"
    assert {p["path"] for p in error["problems"]} == {"$.index", "$.from"}
    assert error["repairs"] == ['$.size: "10" → 10', '$.from: "-5" → -5']
    assert xerj.requests == []


def test_strict_mode_repairs_nothing(make_runner: Any, xerj: XerjStandIn) -> None:
    strict = make_runner(url=xerj.url, repair=False)
    payload = strict.payload("xerj_search", {"index": "docs", "query": MATCH, "size": "10"})
    assert payload["ok"] is False and payload["error"]["problems"][0]["path"] == "$.size"
    assert "repairs" not in payload["error"] and xerj.requests == []


def test_identical_calls_in_one_turn_are_sent_once(runner: Runner, xerj: XerjStandIn) -> None:
    same = {"index": "docs", "query": MATCH, "size": 2}
    calls = [chat_call("xerj_search", same, "a"), chat_call("xerj_search", {**same, "size": "2"}, "b"),
             chat_call("xerj_search", {**same, "size": 3}, "c"), chat_call("xerj_search", same, "d")]
    results = runner.run_many(calls)
    assert len(xerj.requests) == 2  # a, b and d are one call after repair; c differs
    assert [r.call.call_id for r in results] == ["a", "b", "c", "d"]
    assert results[0].payload["hits"] == results[1].payload["hits"] == results[3].payload["hits"]
    assert "identical to call a" in results[3].payload["notes"][0]
    assert results[3].attempts == 0 and results[0].attempts == 1


def test_identical_memory_stores_without_id_store_once(runner: Runner, xerj: XerjStandIn) -> None:
    note = {"namespace": "agent", "text": "likes tea"}
    results = runner.run_many([chat_call("xerj_memory_store", note, "a"), chat_call("xerj_memory_store", note, "b")])
    assert len(xerj.requests) == 1 and len(xerj.memories["agent"]) == 1
    assert results[0].payload["id"] == results[1].payload["id"]
