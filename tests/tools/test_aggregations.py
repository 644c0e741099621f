"""The aggregations models send, from the stand-in to the tool message: each answer shape XERJ
gives (engine/crates/xerj-engine/src/aggs.rs at e6e8e6a) reaches the model with what it needs.

Every test runs a real `xerj_search` call over a socket against the stand-in, sync and async."""

from __future__ import annotations

from typing import Any

from xerj_tools.testing import XerjStandIn

from conftest import Runner


def _aggs(runner: Runner, aggs: dict[str, Any], index: str = "tickets", **extra: Any) -> dict[str, Any]:
    payload = runner.payload("xerj_search", {"index": index, "query": {}, "size": 0, "aggs": aggs, **extra})
    assert payload["ok"] is True, payload
    assert "warnings" not in payload, payload["warnings"]
    return payload["aggregations"]  # type: ignore[no-any-return]


def test_date_histogram_buckets_carry_their_date_as_a_string(runner: Runner) -> None:
    out = _aggs(runner, {"per_month": {"date_histogram": {"field": "opened", "calendar_interval": "month"},
                                       "aggs": {"urgency": {"avg": {"field": "priority"}}}}})
    buckets = out["per_month"]["buckets"]
    assert [b["key_as_string"] for b in buckets] == [
        "2026-09-01T00:00:00.000Z", "2026-10-01T00:00:00.000Z", "2026-11-01T00:00:00.000Z"]
    assert [b["doc_count"] for b in buckets] == [1, 1, 4]
    assert buckets[0]["key"] == 1788220800000  # epoch milliseconds, as XERJ sends it
    assert buckets[2]["urgency"] == {"value": 1.5}


def test_date_histogram_fills_gaps_and_formats_keys(runner: Runner) -> None:
    out = _aggs(runner, {"weeks": {"date_histogram": {"field": "opened", "fixed_interval": "7d",
                                                      "format": "yyyy-MM-dd", "min_doc_count": 0}}})
    buckets = out["weeks"]["buckets"]
    assert all(len(b["key_as_string"]) == 10 for b in buckets)
    assert sum(b["doc_count"] for b in buckets) == 6 and 0 in [b["doc_count"] for b in buckets]
    assert [b["key"] for b in buckets] == sorted(b["key"] for b in buckets)


def test_an_unknown_interval_is_reported_as_that_aggregation_failing(runner: Runner) -> None:
    payload = runner.payload("xerj_search", {"index": "tickets", "query": {}, "size": 0, "aggs": {
        "x": {"date_histogram": {"field": "opened", "calendar_interval": "fortnight"}}}})
    assert payload["warnings"][0] == "aggregation 'x' failed: unknown interval 'fortnight'"


def test_cardinality_counts_distinct_values(runner: Runner) -> None:
    assert _aggs(runner, {"services": {"cardinality": {"field": "service"}}}) == {"services": {"value": 4}}


def test_range_buckets_are_keyed_from_to(runner: Runner) -> None:
    out = _aggs(runner, {"p": {"range": {"field": "priority", "ranges": [{"to": 2}, {"from": 2, "to": 3},
                                                                         {"from": 3, "key": "low"}]}}})
    assert out["p"]["buckets"] == [
        {"key": "*-2.0", "doc_count": 2, "to": 2.0},
        {"key": "2.0-3.0", "doc_count": 2, "from": 2.0, "to": 3.0},
        {"key": "low", "doc_count": 2, "from": 3.0},
    ]


def test_a_date_range_prints_its_bounds(runner: Runner) -> None:
    out = _aggs(runner, {"r": {"range": {"field": "opened", "ranges": [{"from": "2026-11-01"}]}}})
    (bucket,) = out["r"]["buckets"]
    assert bucket["key"] == "2026-11-01T00:00:00.000Z-*" and bucket["doc_count"] == 4
    assert bucket["from_as_string"] == "2026-11-01T00:00:00.000Z"


def test_percentiles_values_are_keyed_by_percent(runner: Runner) -> None:
    out = _aggs(runner, {"p": {"percentiles": {"field": "priority", "percents": [50, 95]}},
                         "q": {"percentiles": {"field": "priority", "keyed": False, "percents": [50]}}})
    assert out["p"] == {"values": {"50.0": 2.0, "95.0": 3.0}}
    assert out["q"] == {"values": [{"key": 50.0, "value": 2.0}]}


def test_percentiles_default_to_seven_points(runner: Runner) -> None:
    values = _aggs(runner, {"p": {"percentiles": {"field": "priority"}}})["p"]["values"]
    assert list(values) == ["1.0", "5.0", "25.0", "50.0", "75.0", "95.0", "99.0"]
    assert values["1.0"] == 1.0 and values["99.0"] == 3.0


def test_stats_and_extended_stats(runner: Runner) -> None:
    out = _aggs(runner, {"s": {"stats": {"field": "priority"}}, "e": {"extended_stats": {"field": "priority"}}})
    assert out["s"] == {"count": 6, "min": 1.0, "max": 3.0, "avg": 2.0, "sum": 12.0}
    assert out["e"]["sum_of_squares"] == 28.0 and abs(out["e"]["variance"] - 2 / 3) < 1e-12
    assert set(out["e"]["std_deviation_bounds"]) >= {"upper", "lower"}


def test_filters_answer_keyed_buckets_and_filter_one_bucket(runner: Runner) -> None:
    out = _aggs(runner, {
        "by_state": {"filters": {"filters": {"open": {"term": {"status": "open"}},
                                             "closed": {"term": {"status": "closed"}}}},
                     "aggs": {"urgent": {"min": {"field": "priority"}}}},
        "checkout": {"filter": {"term": {"service": "checkout"}}},
    })
    assert out["by_state"]["buckets"] == {"open": {"doc_count": 4, "urgent": {"value": 1.0}},
                                          "closed": {"doc_count": 2, "urgent": {"value": 3.0}}}
    assert out["checkout"] == {"doc_count": 2}


def test_histogram_and_terms_with_sub_aggregations(runner: Runner) -> None:
    out = _aggs(runner, {"h": {"histogram": {"field": "priority", "interval": 1}},
                         "t": {"terms": {"field": "service", "size": 2},
                               "aggs": {"states": {"terms": {"field": "status"}}}}})
    assert [(b["key"], b["doc_count"]) for b in out["h"]["buckets"]] == [(1, 2), (2, 2), (3, 2)]
    first = out["t"]["buckets"][0]
    assert first["key"] == "checkout" and first["states"]["buckets"] == [{"key": "open", "doc_count": 2}]
    assert out["t"]["sum_other_doc_count"] == 2


def test_terms_keys_are_typed_as_xerj_types_them(runner: Runner) -> None:
    out = _aggs(runner, {"p": {"terms": {"field": "priority"}}, "d": {"terms": {"field": "opened", "size": 1}}})
    assert [b["key"] for b in out["p"]["buckets"]] == [1, 2, 3]  # numbers, not "1"
    (day,) = out["d"]["buckets"]
    assert day == {"key": 1790726400000, "doc_count": 1,
                   "key_as_string": "2026-09-30T00:00:00.000Z"}


def test_missing_and_global(runner: Runner) -> None:
    out = _aggs(runner, {"no_owner": {"missing": {"field": "owner"}},
                         "everything": {"global": {}, "aggs": {"n": {"value_count": {"field": "status"}}}}},
                query={"term": {"status": "closed"}})
    assert out == {"no_owner": {"doc_count": 2}, "everything": {"doc_count": 6, "n": {"value": 6}}}


def _composite(runner: Runner, after: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"size": 10, "sources": [{"service": {"terms": {"field": "service"}}},
                                                    {"status": {"terms": {"field": "status"}}}]}
    if after is not None:
        body["after"] = after
    return _aggs(runner, {"pairs": {"composite": body}})["pairs"]  # type: ignore[no-any-return]


def test_composite_pages_with_after_key(runner: Runner) -> None:
    first = _composite(runner)
    keys = [b["key"] for b in first["buckets"]]
    assert keys[0] == {"service": "accounts", "status": "open"} and len(keys) == 5
    assert first["after_key"] == keys[-1]
    assert _composite(runner, after=keys[1])["buckets"][0]["key"] == keys[2]


def test_a_capped_composite_pages_from_the_last_bucket_shown(make_runner: Any, xerj: XerjStandIn) -> None:
    # The client keeps `max_buckets` buckets; XERJ's after_key names the last one it sent, which
    # would skip the buckets the model never saw.
    runner = make_runner(url=xerj.url, max_buckets=2)
    page = _composite(runner)
    assert len(page["buckets"]) == 2 and page["buckets_omitted"] == 3
    assert page["after_key"] == page["buckets"][-1]["key"] == {"service": "checkout", "status": "open"}
    following = _composite(runner, after=page["after_key"])
    assert following["buckets"][0]["key"] == {"service": "payments", "status": "closed"}


def test_keyed_buckets_are_capped_and_counted(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, max_buckets=2)
    out = _aggs(runner, {"f": {"filters": {"filters": {s: {"term": {"service": s}} for s in
                                                       ("payments", "accounts", "search", "checkout")}}}})
    assert list(out["f"]["buckets"]) == ["payments", "accounts"] and out["f"]["buckets_omitted"] == 2


def test_top_hits_per_bucket(runner: Runner) -> None:
    out = _aggs(runner, {"by_state": {"terms": {"field": "status"}, "aggs": {
        "most_urgent": {"top_hits": {"size": 1, "sort": [{"priority": "asc"}], "_source": ["title"]}}}}})
    first = out["by_state"]["buckets"][0]["most_urgent"]["hits"]
    assert first["total"] == {"value": 4, "relation": "eq"}
    assert first["hits"] == [{"_id": "T-2", "_index": "tickets", "_score": None, "sort": [1.0],
                              "_source": {"title": "Cannot log in after password reset"}}]


def test_top_hits_never_hand_the_model_an_embedding(runner: Runner) -> None:
    out = _aggs(runner, {"k": {"terms": {"field": "kind", "size": 1}, "aggs": {"top": {"top_hits": {"size": 1}}}}},
                index="docs")
    source = out["k"]["buckets"][0]["top"]["hits"]["hits"][0]["_source"]
    assert "body_vector" not in source and "title" in source and "body" in source


def test_top_hits_keep_their_own_source_beside_the_searchs(runner: Runner) -> None:
    # `source` narrows the search's hits; a top_hits block asked for its own fields.
    payload = runner.payload("xerj_search", {"index": "tickets", "query": {}, "size": 1, "source": ["status"],
                                             "aggs": {"t": {"top_hits": {"size": 1, "_source": ["title"]}}}})
    assert payload["hits"][0]["_source"] == {"status": "open"}
    assert payload["aggregations"]["t"]["hits"]["hits"][0]["_source"] == {"title": "Refund not received"}


def test_date_strings_survive_a_tight_budget(make_runner: Any, xerj: XerjStandIn) -> None:
    xerj.add_documents("events", {f"e{i}": {"at": f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}", "n": i}
                                  for i in range(300)})
    runner = make_runner(url=xerj.url, budget=1500)
    payload = runner.payload("xerj_search", {"index": "events", "query": {}, "size": 0, "aggs": {
        "days": {"date_histogram": {"field": "at", "calendar_interval": "day"}}}})
    buckets = payload["aggregations"]["days"]["buckets"]
    assert 0 < len(buckets) < 25 and payload["aggregations"]["days"]["buckets_omitted"] > 250
    assert all(set(b) == {"key", "key_as_string", "doc_count"} for b in buckets)
    assert buckets[0]["key_as_string"] == "2026-01-01T00:00:00.000Z"


def test_range_keys_print_large_bounds_as_java_does(runner: Runner) -> None:
    out = _aggs(runner, {"r": {"range": {"field": "priority", "ranges": [{"from": -9.223372036854776e18, "to": 1e7}]}}})
    assert out["r"]["buckets"][0]["key"] == "-9.223372036854776E18-1.0E7"


def test_top_hits_version_sequence_numbers_and_docvalue_fields(runner: Runner) -> None:
    out = _aggs(runner, {"t": {"top_hits": {"size": 1, "version": True, "seq_no_primary_term": True,
                                            "docvalue_fields": ["priority"], "_source": False}}})
    (hit,) = out["t"]["hits"]["hits"]
    assert hit["_version"] == 1 and hit["_seq_no"] == 0 and hit["_primary_term"] == 1
    assert hit["fields"] == {"priority": [2]} and "_source" not in hit


def test_composite_missing_bucket_sorts_last_when_asked(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.add_documents("tickets", {"T-9": {"title": "No service given", "status": "open", "priority": 3}})
    body = {"sources": [{"svc": {"terms": {"field": "service", "missing_bucket": True, "missing_order": "last"}}}]}
    keys = [b["key"]["svc"] for b in _aggs(runner, {"c": {"composite": body}})["c"]["buckets"]]
    assert keys[-1] is None and keys[0] == "accounts"
    body["sources"][0]["svc"]["terms"]["missing_order"] = "first"
    assert _aggs(runner, {"c": {"composite": body}})["c"]["buckets"][0]["key"] == {"svc": None}


def test_sibling_pipelines_answer_which_bucket(runner: Runner) -> None:
    out = _aggs(runner, {
        "per_month": {"date_histogram": {"field": "opened", "calendar_interval": "month"},
                      "aggs": {"urgency": {"sum": {"field": "priority"}}}},
        "busiest": {"max_bucket": {"buckets_path": "per_month>urgency"}},
        "quietest": {"min_bucket": {"buckets_path": "per_month>urgency"}},
        "mean": {"avg_bucket": {"buckets_path": "per_month>urgency"}},
        "all": {"stats_bucket": {"buckets_path": "per_month>urgency"}},
        "docs": {"sum_bucket": {"buckets_path": "per_month"}},
    })
    assert out["busiest"] == {"value": 6.0, "keys": ["2026-11-01T00:00:00.000Z"]}
    assert out["quietest"] == {"value": 3.0, "keys": ["2026-09-01T00:00:00.000Z", "2026-10-01T00:00:00.000Z"]}
    assert out["mean"] == {"value": 4.0} and out["docs"] == {"value": 6.0}
    assert out["all"] == {"count": 3, "min": 3.0, "max": 6.0, "avg": 4.0, "sum": 12.0}
