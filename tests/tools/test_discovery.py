"""`xerj_list_indices` and `xerj_describe_index`, the mapping cache and the field hints
it gives; against the stand-in, over a real socket."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from xerj_tools import XERJ_TOOLS, Dispatcher, Policy, load_registry, run_agent
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

from conftest import Runner, chat_call, openai_client


def paths(xerj: XerjStandIn) -> list[str]:
    return [f"{r.method} {r.path}" for r in xerj.requests]


def test_both_are_first_party_tools_after_the_publishers_six() -> None:
    names = load_registry().names
    assert names[-2:] == ("xerj_list_indices", "xerj_describe_index")
    assert all(XERJ_TOOLS[n].origin == "first-party" and XERJ_TOOLS[n].traits.writes is False for n in names[-2:])


def test_the_listing_has_names_counts_and_never_a_denied_index(runner: Runner, xerj: XerjStandIn) -> None:
    runner.payload("xerj_memory_store", {"namespace": "n1", "text": "likes tea"})  # .xerj-memory-n1
    xerj.clear()
    payload = runner.payload("xerj_list_indices", {})
    assert payload == {"ok": True, "count": 2, "indices": [{"name": "docs", "docs": 8}, {"name": "tickets", "docs": 6}]}
    assert paths(xerj) == ["GET /_cat/indices/*"] and len(xerj.listings) == 1  # then the aliases


def test_a_policy_that_denies_an_index_hides_it_and_refuses_to_describe_it(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, policy=Policy(deny_indices=(".*", "tickets")))
    listing = runner.payload("xerj_list_indices", {})
    assert listing["count"] == 1 and [r["name"] for r in listing["indices"]] == ["docs"]
    assert "tickets" not in json.dumps(listing)
    xerj.clear()
    refused = runner.payload("xerj_describe_index", {"index": "tickets"})
    assert refused["error"]["code"] == "policy_denied" and xerj.requests == []


def test_a_pattern_narrows_the_listing_on_the_node(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_list_indices", {"pattern": "tick*"})
    assert [r["name"] for r in payload["indices"]] == ["tickets"]
    assert paths(xerj)[0] == "GET /_cat/indices/tick*"
    assert runner.payload("xerj_list_indices", {"pattern": "nomatch*"}) == {"ok": True, "count": 0, "indices": []}


@pytest.mark.parametrize("pattern", ["t*s", "logs-*-2026", "*o*", "d*s,x"])
def test_a_pattern_xerj_cannot_glob_is_refused_with_the_rule(runner: Runner, xerj: XerjStandIn, pattern: str) -> None:
    payload = runner.payload("xerj_list_indices", {"pattern": pattern})
    assert payload["error"]["code"] == "invalid_arguments" and "prefix*" in payload["error"]["reason"]
    assert xerj.requests == []


def test_aliases_are_listed_with_their_indices_and_held_to_the_policy(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=200, match="_resolve", body={"indices": [], "data_streams": [], "aliases": [
        {"name": "kb", "indices": ["docs"]}, {"name": ".hidden", "indices": ["docs"]}]}))
    payload = runner.payload("xerj_list_indices", {})
    assert payload["indices"][0] == {"name": "docs", "docs": 8, "aliases": ["kb"]}


def test_an_unreadable_alias_list_leaves_names_and_counts_with_a_note(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=404, match="_resolve"))
    payload = runner.payload("xerj_list_indices", {})
    assert payload["count"] == 2 and "aliases could not be read" in payload["notes"][0]


def test_a_long_listing_is_cut_with_a_way_on(runner: Runner, xerj: XerjStandIn) -> None:
    for i in range(400):
        xerj.add_documents(f"logs-2026-{i:04d}", {"1": {"m": "x"}})
    payload = runner.payload("xerj_list_indices", {})
    assert payload["count"] == 402 and len(payload["indices"]) == 150
    assert payload["truncated"] == {"shown": 150, "of": 402} and "pattern" in payload["notes"][0]


def test_an_index_is_described_in_groups_a_query_can_be_written_from(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_describe_index", {"index": "docs"})
    assert payload["fields"] == {"semantic_text": ["body"], "keyword": ["kind", "service", "title.keyword"],
                                 "text": ["title"], "numeric": {"year": "long"}}
    assert payload["search_with"]["xerj_semantic_search"] == ["body"]
    # and XERJ autoindex's catalog is asked for what it knows of `docs` (here: no catalog, a 404)
    assert paths(xerj) == ["GET /docs/_mapping", "POST /autoindex-catalog/_search"]
    xerj.add_documents("products", {"p": {"name": "x", "vec": [0.1, 0.2, 0.3, 0.4], "meta": {"a": 1}}},
                       mappings={"properties": {"name": {"type": "text"}, "vec": {"type": "dense_vector", "dims": 4},
                                                "meta": {"type": "nested", "properties": {"a": {"type": "long"}}},
                                                "at": {"type": "date"}}})
    payload = runner.payload("xerj_describe_index", {"index": "products"})
    assert payload["fields"] == {"date": ["at"], "nested": ["meta"], "numeric": {"meta.a": "long"}, "text": ["name"],
                                 "vector": {"vec": {"dims": 4}}}
    assert payload["search_with"]["xerj_vector_search"] == {"vec": 4}


def test_an_index_without_a_mapping_is_described_from_its_dynamic_schema(runner: Runner) -> None:
    payload = runner.payload("xerj_describe_index", {"index": "tickets"})
    assert payload["fields"] == {"text": ["opened", "service", "status", "title"], "numeric": {"priority": "long"}}


def test_a_missing_index_is_index_not_found_with_the_indices_that_exist(runner: Runner) -> None:
    payload = runner.payload("xerj_describe_index", {"index": "nope"})  # XERJ: 200 {} for it
    assert payload["error"]["code"] == "index_not_found" and payload["error"]["indices"] == ["docs", "tickets"]


def test_a_description_takes_no_negative_from(runner: Runner, xerj: XerjStandIn) -> None:
    assert runner.payload("xerj_describe_index", {"index": "docs", "from": -1})["error"]["code"] == "invalid_arguments"
    assert xerj.requests == []


@pytest.mark.parametrize(("index", "described"), [("d*", ["docs"]), ("docs,tickets", ["docs", "tickets"])])
def test_a_description_of_a_pattern_or_list_covers_its_indices(runner: Runner, index: str,
                                                               described: list[str]) -> None:
    # as XERJ's get_mapping expands it (resolve_index_selector, es_compat.rs:14131-14162)
    assert runner.payload("xerj_describe_index", {"index": index})["index"] == described


def _wide(n: int) -> dict[str, Any]:
    groups = {f"group_{g:02d}": {"properties": {f"field_{i:04d}": {"type": "keyword"} for i in range(n // 50)}}
              for g in range(50)}
    return {"properties": groups}


def test_five_thousand_fields_fit_the_budget_and_page_on(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.add_documents("wide", {"1": {"x": 1}}, mappings=_wide(5000))
    result = runner.run(chat_call("xerj_describe_index", {"index": "wide"}))
    payload = json.loads(result.content)
    assert len(result.content) <= 12_000 and payload["field_count"] == 5050
    shown = payload["truncated"]["shown"]
    assert 100 < shown < 5050 and payload["next"] == {"from": shown}
    assert payload["objects"]["group_00"] == 101  # the object and its 100 members
    following = runner.payload("xerj_describe_index", {"index": "wide", "from": shown})
    first = sorted([*following["fields"].get("keyword", []), *following["fields"].get("object", [])])[0]
    assert first > max(payload["fields"]["keyword"])
    narrowed = runner.payload("xerj_describe_index", {"index": "wide", "prefix": "group_07."})
    assert len(narrowed["fields"]["keyword"]) == 100 and "next" not in narrowed


def test_deep_nesting_fits_the_budget(runner: Runner, xerj: XerjStandIn) -> None:
    spec: dict[str, Any] = {"type": "keyword"}
    for level in range(80):
        spec = {"properties": {f"level_{level:02d}_with_a_long_name": spec}}
    xerj.add_documents("deep", {"1": {"x": 1}}, mappings=spec)
    result = runner.run(chat_call("xerj_describe_index", {"index": "deep"}))
    assert len(result.content) <= 12_000 and json.loads(result.content)["ok"] is True


def test_a_described_mapping_marks_its_vectors_in_later_reads_without_a_round_trip(
    runner: Runner, xerj: XerjStandIn
) -> None:
    xerj.add_documents("small", {"a": {"t": "x", "vec": [0.1, 0.2, 0.3, 0.4]}},
                       mappings={"properties": {"t": {"type": "text"}, "vec": {"type": "dense_vector", "dims": 4}}})
    before = runner.payload("xerj_search", {"index": "small", "query": {"match_all": {}}})
    assert before["hits"][0]["_source"]["vec"] == [0.1, 0.2, 0.3, 0.4]  # 4 numbers: not long
    runner.payload("xerj_describe_index", {"index": "small"})
    xerj.clear()
    after = runner.payload("xerj_search", {"index": "small", "query": {"match_all": {}}})
    assert after["hits"][0]["_source"] == {"t": "x", "vec": "<4 numbers omitted>"}
    assert runner.payload("xerj_get_document", {"index": "small", "id": "a"})["_source"]["vec"] == "<4 numbers omitted>"
    assert not any(p.endswith("/_mapping") for p in paths(xerj))


def test_a_query_on_a_missing_field_is_told_the_fields_once_xerj_answered(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "docs", "query": {"match": {"bdy": "outage"}}})
    assert payload["hits"] == [] and payload["notes"][0].startswith("the mapping does not list 'bdy'. The mapping lists: body: semantic_text")
    assert paths(xerj) == ["POST /docs/_search", "GET /docs/_mapping"]
    xerj.clear()
    runner.payload("xerj_search", {"index": "docs", "query": {"match": {"bdy": "vpn"}}})
    assert paths(xerj) == ["POST /docs/_search"]  # the mapping is cached
    xerj.clear()
    found = runner.payload("xerj_search", {"index": "tickets", "query": {"match": {"title": "checkout"}}})
    assert found["hits"] and "notes" not in found and paths(xerj) == ["POST /tickets/_search"]  # happy path


def test_knn_on_a_field_that_is_no_vector_is_told_the_vector_fields(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.add_documents("small", {"a": {"t": "x", "vec": [0.1, 0.2, 0.3, 0.4]}},
                       mappings={"properties": {"t": {"type": "text"}, "vec": {"type": "dense_vector", "dims": 4}}})
    payload = runner.payload("xerj_vector_search", {"index": "small", "field": "t", "query_vector": [0.1, 0.2, 0.3, 0.4]})
    assert payload["hits"] == [] and "'t' is text, not dense_vector" in payload["notes"][0]
    assert "Vector fields: vec (4 dims)." in payload["notes"][0]


def test_an_unreadable_mapping_leaves_the_empty_answer_as_it_was(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=500, match="_mapping"))
    payload = runner.payload("xerj_search", {"index": "docs", "query": {"match": {"bdy": "outage"}}})
    assert payload["ok"] is True and payload["hits"] == [] and "notes" not in payload


def _learned(body: Mapping[str, Any]) -> Sequence[tuple[str, Any]]:
    answers = [json.loads(m["content"]) for m in body["messages"] if m.get("role") == "tool"]
    described = next(a for a in answers if "search_with" in a)
    keyword = described["fields"]["keyword"][0]  # "kind", learned, not guessed
    return [("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 0, "aggs": {"by": {"terms": {"field": keyword}}}})]


def test_a_scripted_model_lists_describes_then_queries_a_field_it_learned(xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_list_indices", {})]),
              Turn(tool_calls=[("xerj_describe_index", {"index": "docs"})]),
              Turn(tool_calls=_learned), Turn(text="done")]
    with ScriptedModel(script) as model, openai_client(model.base_url) as client, Dispatcher(url=xerj.url) as d:
        result = run_agent(client, model="scripted", messages=[{"role": "user", "content": "?"}], dispatcher=d)
    assert result.outcome == "completed" and result.output_text == "done"
    assert [e for e in paths(xerj) if "_resolve" not in e and "autoindex-catalog" not in e] == [
        "GET /_cat/indices/*", "GET /docs/_mapping", "POST /docs/_search"]
    query = next(r for r in reversed(xerj.requests) if r.path == "/docs/_search")
    assert query.body["aggs"] == {"by": {"terms": {"field": "kind"}}}
    answer = json.loads(result.transcript[-2]["content"])
    assert answer["ok"] is True and answer["aggregations"]["by"]["buckets"]
