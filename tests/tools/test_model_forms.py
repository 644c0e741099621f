"""What models write against XERJ, accepted and answered: `source` as an object, `wildcard` and
`query_string` queries; and a search without `query`, refused with the one-step fix.

Each test runs a real `xerj_search` call over a socket against the stand-in, sync and async."""

from __future__ import annotations

from typing import Any

from xerj_tools.testing import XerjStandIn

from conftest import Runner


def _search(runner: Runner, **arguments: Any) -> dict[str, Any]:
    return runner.payload("xerj_search", {"index": "tickets", "query": {}, **arguments})


def test_source_as_an_object_narrows_the_hits(runner: Runner, xerj: XerjStandIn) -> None:
    payload = _search(runner, size=1, source={"includes": ["title", "status"]})
    assert payload["ok"] is True and payload["hits"][0]["_source"] == {
        "title": "Refund not received", "status": "open"}
    assert xerj.requests[-1].body["_source"] == {"includes": ["title", "status"]}
    payload = _search(runner, size=1, source={"excludes": "opened"})
    assert "opened" not in payload["hits"][0]["_source"] and "title" in payload["hits"][0]["_source"]


def test_excluding_vectors_by_pattern_is_accepted_and_no_embedding_reaches_the_model(runner: Runner) -> None:
    # XERJ reads `*` only at the end of a name, so "*_vector" excludes nothing there; the
    # client leaves the embeddings out of the answer all the same.
    payload = runner.payload("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}},
                                             "size": 2, "source": {"excludes": ["*_vector"]}})
    assert payload["ok"] is True and payload["hits"]
    assert all("body_vector" not in h["_source"] and "body" in h["_source"] for h in payload["hits"])


def test_a_source_object_xerj_would_ignore_is_refused_before_it_is_sent(runner: Runner, xerj: XerjStandIn) -> None:
    before = len(xerj.requests)
    payload = _search(runner, source={"exclude_fields": ["body"]})
    assert payload["error"]["code"] == "invalid_arguments"
    (problem,) = payload["error"]["problems"]
    assert problem["path"] == "$.source" and "exclude_fields, which XERJ ignores" in problem["message"]
    payload = _search(runner, source={"includes": []})
    assert payload["error"]["problems"][0]["path"] == "$.source.includes"
    assert len(xerj.requests) == before


def test_a_search_without_query_is_refused_with_the_fix(runner: Runner, xerj: XerjStandIn) -> None:
    before = len(xerj.requests)
    payload = runner.payload("xerj_search", {"index": "tickets", "size": 0, "aggs": {"s": {"terms": {"field": "status"}}}})
    assert payload["error"]["code"] == "invalid_arguments" and len(xerj.requests) == before
    (problem,) = payload["error"]["problems"]  # one problem, not the schema's bare "is required" too
    assert problem["path"] == "$.query" and "send {}" in problem["message"]
    fixed = _search(runner, size=0, aggs={"s": {"terms": {"field": "status"}}})
    assert fixed["ok"] is True and fixed["total"] == 6


def test_wildcard_matches_a_value_or_one_of_its_words(runner: Runner) -> None:
    ids = [h["_id"] for h in _search(runner, query={"wildcard": {"title": "check*"}})["hits"]]
    assert sorted(ids) == ["T-4", "T-6"]
    ids = [h["_id"] for h in _search(runner, query={"wildcard": {"service": {"value": "PAY?ENTS"}}})["hits"]]
    assert sorted(ids) == ["T-1", "T-5"]


def test_query_string_fields_operators_ranges_and_phrases(runner: Runner) -> None:
    def ids(text: str, **extra: Any) -> list[str]:
        payload = _search(runner, query={"query_string": {"query": text, **extra}})
        assert payload["ok"] is True, payload
        return sorted(h["_id"] for h in payload["hits"])

    assert ids("status:open AND priority:<2") == ["T-2", "T-4"]
    assert ids("priority:[2 TO 3}") == ["T-1", "T-6"]
    assert ids('title:"dark mode"') == ["T-6"]
    assert ids("refund OR invoice") == ["T-1", "T-5"]
    assert ids("chec*", default_field="title") == ["T-4", "T-6"]


def test_query_string_range_without_a_field_is_xerjs_parse_error(runner: Runner) -> None:
    payload = _search(runner, query={"query_string": {"query": ">2"}})
    assert payload["ok"] is False and payload["error"]["code"] == "bad_request"
    assert "query_string range requires an explicit field" in payload["error"]["reason"]


def test_rerank_fields_that_no_hit_returns_are_named(runner: Runner) -> None:
    # The judge reads `rerank.fields` and nothing else; a name no hit in the window returned text
    # for comes back in `fields_without_text` (docs/RERANK.md of xerj 11b0cd0).
    payload = runner.payload("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2,
                                             "rerank": {"fields": ["title", "bdoy"]}})
    assert payload["ok"] is True and payload["ranked_by"] == "reranker"
    assert payload["rerank"]["fields_without_text"] == ["bdoy"]
    assert payload["rerank"]["skipped_no_text"] == 0 and payload["rerank"]["window"] >= 2
    assert any("rerank.fields named bdoy" in w for w in payload["warnings"])


def test_a_window_with_no_text_in_the_named_fields_is_refused(runner: Runner) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 3,
                                             "rerank": {"fields": ["nothing_here"]}})
    assert payload["ok"] is False and "nothing to judge" in payload["error"]["reason"]


def test_listing_without_counts_reads_memory_only(runner: Runner, xerj: XerjStandIn) -> None:
    # `_cat/indices` adds up every listed index's files on disk (es_compat.rs:448-457); the names
    # and aliases alone come from `_resolve/index/*`, one request.
    payload = runner.payload("xerj_list_indices", {"pattern": "doc*,tickets,nope", "counts": False})
    assert payload["ok"] is True and [r["name"] for r in payload["indices"]] == ["docs", "tickets"]
    assert all("docs" not in r for r in payload["indices"])
    assert payload["notes"] == ["no index is named 'nope'"]
    # (the stand-in logs `_resolve/index/*` reads apart, in `listings`)
    assert [r.path for r in xerj.requests] == [] and len(xerj.listings) == 1
    counted = runner.payload("xerj_list_indices", {"pattern": "tickets"})
    assert counted["indices"] == [{"name": "tickets", "docs": 6}]
    assert [r.path for r in xerj.requests] == ["/_cat/indices/tickets"]
