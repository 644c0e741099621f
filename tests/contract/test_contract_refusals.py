"""XERJ's contract, continued: what XERJ refuses, and how a top-level `knn` is read.

Same two targets as `test_contract.py` (the stand-in always, the node at ``XERJ_CONTRACT_URL`` when set),
the same fixture and the same ``contract-<uuid>`` index. Paths at commit e6e8e6a (1.0.0-rc.4).
Each of these once passed on the stand-in while XERJ answered otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from test_contract import INDEX, PREFIX, Target, error, ids, ok, targets

pytestmark = pytest.mark.live


@pytest.fixture(scope="module", params=["stand-in", "node"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from targets(request.param)


# ── Leaf clauses with more than one field ─────────────────────────────────────


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ({"match": {"title": "outage", "body": "vpn"}}, "`match` query must have exactly one field"),
        ({"match_phrase": {"title": "a", "body": "b"}}, "`match_phrase` query must have exactly one field"),
        ({"term": {"service": "checkout", "priority": 1}}, "`term` query must have exactly one field"),
        ({"term": {}}, "`term` query must have exactly one field"),
        ({"terms": {"service": ["a"], "priority": [1]}}, "`terms` query must have exactly one field"),
        ({"range": {"priority": {"gte": 1}, "vec": {"lt": 2}}}, "`range` query must have exactly one field"),
        ({"range": {"priority": 3}}, "`range` field value must be an object"),
        ({"bool": {"must": [{"match_all": {}}], "filter": [{"term": {"a": 1, "b": 2}}]}},
         "`term` query must have exactly one field"),
    ],
)  # fmt: skip
def test_a_leaf_clause_needs_exactly_one_field(
    target: Target, query: dict[str, Any], reason: str
) -> None:
    """parser.rs:362-367 (match), 432-437 (match_phrase), 692-697 (term), 763-771 (terms, where
    `boost` is no field), 871-883 (range): a parse error, whatever the documents."""
    err = error(target.search({"query": query}), 400)
    assert (err["type"], err["reason"]) == (
        "search_phase_execution_exception",
        f"parse error: {reason}",
    )
    assert err["root_cause"][0]["reason"] == f"parse error: {reason}"


def test_terms_boost_is_not_a_field(target: Target) -> None:
    """parser.rs:767: `boost` beside the field of a `terms` query is not counted as a field."""
    query = {"terms": {"service": ["checkout"], "boost": 2.0}}
    assert ids(ok(target.search({"query": query}))) == ["d1"]


# ── Top-level knn ─────────────────────────────────────────────────────────────


def test_a_top_level_knn_with_vector_is_refused(target: Target) -> None:
    """`knn_spec_to_query_json` copies `query_vector`, not `vector` (es_compat.rs:5811-5826), so
    the parser finds no vector (parser.rs:2269-2273). Only the query-DSL clause takes `vector`."""
    err = error(target.search({"knn": {"field": "vec", "vector": [1.0, 0.0, 0.0], "k": 1}}), 400)
    assert (
        err["reason"] == "parse error: `knn` requires `query_vector` (or `vector`) as a float array"
    )
    clause = {"knn": {"field": "vec", "vector": [1.0, 0.0, 0.0], "k": 1}}
    assert ids(ok(target.search({"query": clause, "size": 1}))) == ["d1"]


def test_knn_beside_query_is_a_bool_should(target: Target) -> None:
    """`knn` + `query` runs `bool.should[query, knn]` (es_compat.rs:5884-5893): the union of the
    query's matches and the k nearest, not the kNN alone; the total is not capped at k."""
    knn = {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 1}
    body = ok(target.search({"knn": knn, "query": {"match": {"title": "vpn"}}}))
    assert sorted(ids(body)) == ["d1", "d2"]
    assert body["hits"]["total"] == {"value": 2, "relation": "eq"}


def test_knn_beside_query_filters_source(target: Target) -> None:
    """The `bool.should` takes the generic path, which applies `_source` (index.rs:9930); only a
    pure kNN returns before it (index.rs:6690-6726)."""
    knn = {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 1}
    body = {"knn": knn, "query": {"match": {"title": "vpn"}}, "_source": ["title"]}
    hits = ok(target.search(body))["hits"]["hits"]
    assert all(set(hit["_source"]) == {"title"} for hit in hits)


def test_several_knn_clauses_beside_query_are_refused(target: Target) -> None:
    """es_compat.rs:5865-5883: an `illegal_argument_exception` naming the combination."""
    knn = [{"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 1}] * 2
    err = error(target.search({"knn": knn, "query": {"match_all": {}}}), 400)
    assert err["type"] == "illegal_argument_exception"
    assert err["reason"].startswith(
        "multiple [knn] clauses combined with a [query] are not supported"
    )


def test_several_knn_clauses_sum_their_own_top_k(target: Target) -> None:
    """`run_multi_knn_brute_force` (index.rs:4868-4921): each clause's top k, summed scores, the
    union; hits and total capped at min(Σk, size) (es_compat.rs:5836-5848)."""
    knn = [
        {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 1},
        {"field": "vec", "query_vector": [0.0, 1.0, 0.0], "k": 1},
    ]
    body = ok(target.search({"knn": knn}))
    assert sorted(ids(body)) == ["d1", "d2"]
    assert body["hits"]["total"] == {"value": 2, "relation": "eq"}


# ── The bucket cap ────────────────────────────────────────────────────────────


def test_too_many_buckets_is_a_400_with_the_cause_in_caused_by(target: Target) -> None:
    """A histogram whose gaps would pass `search.max_buckets` (65 536) marks its slot
    (aggs.rs:5681-5708), and the search becomes a 400 with an empty `reason`, an empty
    `root_cause` and the cause in `caused_by` (es_compat.rs:10527-10580)."""
    aggs = {"h": {"histogram": {"field": "priority", "interval": 0.00001}}}
    err = error(target.search({"size": 0, "aggs": aggs}), 400)
    assert (err["type"], err["reason"], err["root_cause"]) == (
        "search_phase_execution_exception",
        "",
        [],
    )
    assert (err["phase"], err["grouped"], err["failed_shards"]) == ("fetch", True, [])
    cause = err["caused_by"]
    assert (cause["type"], cause["max_buckets"]) == ("too_many_buckets_exception", 65536)
    assert cause["reason"].startswith(
        "Trying to create too many buckets. Must be less than or equal to: [65536]"
    )


def test_a_histogram_under_the_cap_is_answered(target: Target) -> None:
    """Keys 4 to 20 at interval 0.25: under the cap, every gap filled (aggs.rs:5681-5720)."""
    aggs = {"h": {"histogram": {"field": "priority", "interval": 0.25}}}
    buckets = ok(target.search({"size": 0, "aggs": aggs}))["aggregations"]["h"]["buckets"]
    assert (len(buckets), buckets[0]["key"], buckets[-1]["key"]) == (17, 1, 5)


# ── Index globbing ────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        (f"{INDEX[:-3]}*", True),  # prefix*
        (f"*{INDEX[8:]}", True),  # *suffix
        (f"{PREFIX}*docs", False),  # a `*` in the middle is compared literally
        (f"*{INDEX[8:-2]}*", False),  # and so is `*` at both ends
    ],
    ids=["prefix*", "*suffix", "middle", "both-ends"],
)
def test_index_globbing_is_glob_match_simple(target: Target, pattern: str, found: bool) -> None:
    """`glob_match_simple` (es_compat.rs:16552-16563): `*`, `prefix*`, `*suffix`, else literal;
    the selector has a wildcard, so a name that matches nothing is skipped, a 200
    (es_compat.rs:7366-7387)."""
    answer = target.search({"query": {"ids": {"values": ["d1"]}}}, index=pattern)
    assert ids(ok(answer)) == (["d1"] if found else [])


# ── A closed index ────────────────────────────────────────────────────────────


@contextmanager
def closed(target: Target) -> Iterator[None]:
    """The contract index closed for the block (`POST /{index}/_close` on a node)."""
    if target.stand_in is not None:
        target.stand_in.close_index(INDEX)
    else:
        assert target.client.post(f"/{INDEX}/_close").is_success
    try:
        yield
    finally:
        if target.stand_in is not None:
            target.stand_in.open_index(INDEX)
        else:
            assert target.client.post(f"/{INDEX}/_open").is_success


def test_a_closed_index_is_index_closed_exception(target: Target) -> None:
    """Named outright, a closed index is a 400 `index_closed_exception`, reason `closed`, for a
    search (es_compat.rs:5700-5730) and for a document (1977-1981); a wildcard drops it
    silently. The body: es_compat.rs:27460-27477."""
    with closed(target):
        for answer in (
            target.search({}),
            target.client.get(f"/{INDEX}/_doc/d1"),
            target.search({}, index=f"{INDEX},{PREFIX}-missing"),  # before the missing name's 404
        ):
            err = error(answer, 400)
            assert (err["type"], err["reason"], err["index"]) == (
                "index_closed_exception",
                "closed",
                INDEX,
            )
            assert err["root_cause"] == [{"type": "index_closed_exception", "reason": "closed"}]
        assert ids(ok(target.search({}, index=f"{INDEX[:-3]}*"))) == []
    assert target.client.get(f"/{INDEX}/_doc/d1").status_code == 200


# ── Aggregation options the stand-in once ignored (found by XERJ's YAML suite) ────────────


def test_metric_aggregations_count_missing_and_echo_meta(target: Target) -> None:
    """`missing` stands in for a document without the field (`get_missing_value`,
    aggs.rs:4738-4740; value_count counts such a document once, 4715-4736), and `meta` is
    echoed into the result (aggs.rs:180-184)."""
    aggs = {
        "a": {"avg": {"field": "absent", "missing": 2}, "meta": {"k": "v"}},
        "s": {"sum": {"field": "absent", "missing": 1.5}},
        "c": {"value_count": {"field": "absent", "missing": 0}},
        "t": {"stats": {"field": "priority", "missing": 0}},
    }
    out = ok(target.search({"size": 0, "aggs": aggs}))["aggregations"]
    assert (out["a"]["value"], out["a"]["meta"]) == (2.0, {"k": "v"})
    assert (out["s"]["value"], out["c"]["value"], out["t"]["count"]) == (6.0, 4, 4)


def test_exists_on_metadata_fields(target: Target) -> None:
    """`exists` on `_id`, `_index`, `_seq_no`, `_version`, `_primary_term` matches every
    document; on `_routing` only a routed one (index.rs:18992-18996)."""
    for field in ("_id", "_index", "_seq_no", "_version", "_primary_term"):
        total = ok(target.search({"query": {"exists": {"field": field}}}))["hits"]["total"]
        assert total["value"] == 4, field
    answer = target.search({"query": {"exists": {"field": "_routing"}}})
    assert answer.json()["hits"]["total"]["value"] == 0


def test_histogram_bounds_and_missing(target: Target) -> None:
    """`run_histogram`: `extended_bounds` widens the filled keys (aggs.rs:5681-5716),
    `hard_bounds` clips them (5719-5723), `missing` counts a document without the field at that
    value (5621-5640)."""

    def keys(spec: dict[str, Any]) -> list[tuple[Any, int]]:
        aggs = {"h": {"histogram": {"field": "priority", "interval": 2, **spec}}}
        buckets = ok(target.search({"size": 0, "aggs": aggs}))["aggregations"]["h"]["buckets"]
        return [(b["key"], b["doc_count"]) for b in buckets]

    assert keys({"extended_bounds": {"min": 0, "max": 8}}) == [
        (0, 1),
        (2, 2),
        (4, 1),
        (6, 0),
        (8, 0),
    ]
    assert keys({"hard_bounds": {"min": 2, "max": 3}}) == [(2, 2)]
    missing = {"h": {"histogram": {"field": "absent", "interval": 2, "missing": 3}}}
    answer = target.search({"size": 0, "aggs": missing})
    assert answer.json()["aggregations"]["h"]["buckets"] == [{"key": 2, "doc_count": 4}]


def test_constant_score_scores_its_boost(target: Target) -> None:
    """parser.rs:2153-2177: every hit of the filter scores exactly `boost`; no `filter` is a
    parse error."""
    body = {"query": {"constant_score": {"filter": {"term": {"service": "network"}}, "boost": 2.5}}}
    hits = ok(target.search(body))["hits"]["hits"]
    assert [(h["_id"], h["_score"]) for h in hits] == [("d2", 2.5)]
    err = error(target.search({"query": {"constant_score": {"boost": 2}}}), 400)
    assert err["reason"] == "parse error: `constant_score` requires a `filter` clause"
