"""Resolve, then authorise, then send concrete names: aliases, data streams, `-` exclusions and
closed indices as XERJ treats them, over the stand-in (which models XERJ's alias rules: a search
or GET on an alias reads its first index and labels hits with the alias; a data stream is an
alias over `.ds-<name>-NNNNNN`; `-x` is a literal name; a closed index is listed as open)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from xerj_tools import Policy
from xerj_tools.testing import XerjStandIn

from conftest import Runner

SECRET = "B-ONLY-SECRET-91"


@pytest.fixture
def node(xerj: XerjStandIn) -> XerjStandIn:
    xerj.add_documents("logs-a", {"a1": {"title": "log a", "tag": "x"}})
    xerj.add_documents("logs-b", {"b1": {"title": "log b", "tag": "x"}})
    xerj.add_documents("logs-c", {"c1": {"title": "log c", "tag": "x"}})
    # a memory namespace: `.xerj-memory-tenant-b`, denied by the default policy
    httpx2.post(f"{xerj.url}/_memory/tenant-b", json={"text": SECRET}).raise_for_status()
    xerj.clear()
    return xerj


def _sent(xerj: XerjStandIn) -> list[str]:
    return [r.path for r in xerj.requests]  # the listing reads are in `xerj.listings`


def _secret_free(payload: Any) -> bool:
    text = json.dumps(payload)
    return SECRET not in text and ".xerj-memory" not in text


# -- the bypass: an alias of a denied index --------------------------------------------------------

AGGS = {"size": 0, "aggs": {"t": {"terms": {"field": "text"}}}}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("xerj_search", {"index": "mem", "query": {"match_all": {}}}),
        ("xerj_search", {"index": "mem", "query": {"match_all": {}}, **AGGS}),
        ("xerj_search", {"index": "mem", "query": {"match": {"nosuchfield": "zzz"}}}),
        ("xerj_search", {"index": "logs-a,mem", "query": {"match_all": {}}}),
        ("xerj_get_document", {"index": "mem", "id": "x"}),
        ("xerj_describe_index", {"index": "mem"}),
    ],
)
def test_an_alias_of_a_denied_index_is_refused_with_a_cold_listing(
    runner: Runner, node: XerjStandIn, tool: str, arguments: dict[str, Any]
) -> None:
    node.add_alias("mem", ".xerj-memory-tenant-b")
    payload = runner.payload(tool, arguments)
    assert payload["ok"] is False and payload["error"]["code"] == "policy_denied"
    assert "'mem' is an alias of an index this agent may not search" in payload["error"]["reason"]
    assert _secret_free(payload)
    assert _sent(node) == []  # refused before anything was sent


@pytest.mark.parametrize(
    "arguments",
    [
        {"index": "fresh", "query": {"match_all": {}}, **AGGS},
        {"index": "fresh", "query": {"match_all": {}}, "size": 0},
    ],
)
def test_an_alias_made_after_the_listing_was_cached_is_seen_before_sending(
    runner: Runner, node: XerjStandIn, arguments: dict[str, Any]
) -> None:
    assert runner.payload("xerj_search", {"index": "logs-a", "query": {"match_all": {}}})["ok"]
    node.add_alias("fresh", ".xerj-memory-tenant-b")  # within the listing's 30 s
    node.clear()
    payload = runner.payload("xerj_search", arguments)
    assert payload["error"]["code"] == "policy_denied" and _secret_free(payload)
    # the unknown name made the listing be read again; nothing else was sent
    assert node.requests == [] and len(node.listings) == 1
    described = runner.payload("xerj_describe_index", {"index": "fresh"})
    assert described["error"]["code"] == "policy_denied" and _secret_free(described)


def test_a_lookup_through_an_alias_of_a_denied_index_is_refused(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_alias("who", ".xerj-memory-tenant-b")
    lookup = {"terms": {"tag": {"index": "who", "id": "m", "path": "text"}}}
    payload = runner.payload("xerj_search", {"index": "logs-a", "query": lookup})
    assert payload["error"]["code"] == "policy_denied"
    assert payload["error"]["reason"].startswith("$.query.terms.tag.index: index 'who' is an alias")
    assert _sent(node) == []


def test_a_lookup_through_an_allowed_alias_names_the_index_xerj_would_read(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_documents("users", {"u": {"tags": ["x"]}})
    node.add_alias("people", "users")
    lookup = {"terms": {"tag": {"index": "people", "id": "u", "path": "tags"}}}
    payload = runner.payload("xerj_search", {"index": "logs-a", "query": lookup})
    assert payload["ok"] is True
    sent = next(r for r in node.requests if r.path.endswith("/_search"))
    assert sent.body["query"]["terms"]["tag"]["index"] == "users"


# -- what the model asked for -----------------------------------------------------------------------


def test_a_multi_index_alias_is_searched_across_all_its_indices(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_alias("logs", "logs-a", "logs-b")
    payload = runner.payload("xerj_search", {"index": "logs", "query": {"match_all": {}}})
    # XERJ alone would read logs-a only and label its hit `logs` (engine.rs:956-967)
    assert sorted(h["_index"] for h in payload["hits"]) == ["logs-a", "logs-b"]
    assert payload["total"] == 2 and _sent(node) == ["/logs-a,logs-b/_search"]
    assert "'logs' is an alias of logs-a, logs-b; all of them were read in its place" in (
        payload["notes"]
    )


def test_a_data_stream_is_searched_across_its_backing_indices_after_a_rollover(
    runner: Runner, node: XerjStandIn
) -> None:
    first = node.create_data_stream("app-logs")
    node.add_documents(first, {"old": {"msg": "before the rollover"}})
    second = node.rollover("app-logs")
    node.add_documents(second, {"new": {"msg": "after the rollover"}})
    payload = runner.payload("xerj_search", {"index": "app-logs", "query": {"match_all": {}}})
    assert payload["ok"] is True and sorted(h["_id"] for h in payload["hits"]) == ["new", "old"]
    assert any("'app-logs' is a data stream" in n for n in payload["notes"])
    # the `.ds-*` backing indices are allowed through the allowed stream, not by their names
    direct = runner.payload("xerj_search", {"index": first, "query": {"match_all": {}}})
    assert direct["error"]["code"] == "policy_denied"


def test_an_exclusion_is_applied_here_and_never_passed_through(
    runner: Runner, node: XerjStandIn
) -> None:
    payload = runner.payload("xerj_search", {"index": "logs-*,-logs-b", "query": {"match_all": {}}})
    assert sorted(h["_index"] for h in payload["hits"]) == ["logs-a", "logs-c"]
    assert _sent(node) == ["/logs-a,logs-c/_search"]
    assert any("XERJ has no `-` exclusion" in n and "logs-b left out" in n for n in payload["notes"])


def test_a_closed_index_reached_through_a_pattern_is_left_out(
    runner: Runner, node: XerjStandIn
) -> None:
    node.close_index("logs-a")
    payload = runner.payload("xerj_search", {"index": "logs-*,-logs-c", "query": {"match_all": {}}})
    assert payload["ok"] is True and [h["_index"] for h in payload["hits"]] == ["logs-b"]
    assert any("'logs-a' is closed and was left out" in n for n in payload["notes"])
    assert _sent(node) == ["/logs-a,logs-b/_search", "/logs-b/_search"]
    named = runner.payload("xerj_search", {"index": "logs-a", "query": {"match_all": {}}})
    assert named["error"]["code"] == "index_closed"  # named outright: XERJ's answer stays


def test_an_unknown_name_is_not_found_without_sending_a_search(
    runner: Runner, node: XerjStandIn
) -> None:
    payload = runner.payload("xerj_search", {"index": "logs-z", "query": {"match_all": {}}})
    assert payload["error"]["code"] == "index_not_found" and "logs-a" in payload["error"]["indices"]
    assert _sent(node) == []


# -- discovery --------------------------------------------------------------------------------------

KB_MAPPING = {
    "properties": {
        "body": {"type": "semantic_text"},
        "embedding": {"type": "dense_vector", "dims": 3},
        "title": {"type": "text"},
    }
}


def test_describe_on_an_alias_describes_its_indices_stored_mappings(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_documents(
        "kb", {"k": {"body": "tea", "embedding": [0.1, 0.2, 0.3], "title": "t"}},
        semantic_fields=("body",), mappings=KB_MAPPING,
    )  # fmt: skip
    node.add_alias("kb-alias", "kb")
    # what XERJ itself answers for the alias: the schema-derived mapping (es_compat.rs:1466-1485)
    raw = httpx2.get(f"{node.url}/kb-alias/_mapping").json()
    assert raw["kb-alias"]["mappings"]["properties"]["body"] == {"type": "text"}
    payload = runner.payload("xerj_describe_index", {"index": "kb-alias"})
    assert payload["index"] == ["kb"] and payload["fields"]["semantic_text"] == ["body"]
    assert payload["fields"]["vector"] == {"embedding": {"dims": 3}}


def test_describe_takes_a_pattern_as_get_mapping_expands_it(
    runner: Runner, node: XerjStandIn
) -> None:
    payload = runner.payload("xerj_describe_index", {"index": "logs-*"})
    assert payload["ok"] is True and payload["index"] == ["logs-a", "logs-b", "logs-c"]
    # then the autoindex catalog, which this node lacks (a 404), for the indices described
    assert _sent(node) == ["/logs-*/_mapping", "/autoindex-catalog/_search"]


def test_a_field_the_stored_mapping_does_not_list_is_not_called_missing(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_documents(
        "prod", {"p": {"title": "boots", "category": "shoes"}},
        mappings={"properties": {"title": {"type": "text"}}},
    )  # fmt: skip
    payload = runner.payload("xerj_search", {"index": "prod", "query": {"term": {"category": "x"}}})
    note = " ".join(payload["notes"])
    assert "the mapping does not list 'category'" in note and "no field" not in note
    assert "exists" in note


def test_the_listing_shows_an_alias_only_when_every_index_behind_it_is_allowed(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_alias("both", "logs-a", ".xerj-memory-tenant-b")
    node.add_alias("pair", "logs-a", "logs-b")
    payload = runner.payload("xerj_list_indices", {})
    rows = {r["name"]: r for r in payload["indices"]}
    assert rows["logs-a"]["aliases"] == ["pair"] and "both" not in json.dumps(payload)
    assert _secret_free(payload)


def test_the_listing_shows_an_allowed_data_stream_by_its_name(
    runner: Runner, node: XerjStandIn
) -> None:
    backing = node.create_data_stream("app-logs")
    node.add_documents(backing, {"e": {"msg": "event"}})
    payload = runner.payload("xerj_list_indices", {})
    stream = next(r for r in payload["indices"] if r["name"] == "app-logs")
    assert stream == {"name": "app-logs", "docs": 1, "data_stream": True, "indices": [backing]}
    assert not any(r["name"].startswith(".") for r in payload["indices"])


def test_a_denied_name_and_an_absent_one_are_listed_alike(
    make_runner: Any, node: XerjStandIn
) -> None:
    runner = make_runner(url=node.url, policy=Policy(allow_indices=("logs-a",)))
    present = runner.payload("xerj_list_indices", {"pattern": "logs-b"})
    absent = runner.payload("xerj_list_indices", {"pattern": "logs-nosuch"})
    assert present["error"]["code"] == absent["error"]["code"] == "policy_denied"
    assert present == absent and "logs-b" not in json.dumps(present)
    assert _sent(node) == []


def test_an_exclusion_in_a_listing_pattern_is_refused_with_the_rule(
    runner: Runner, node: XerjStandIn
) -> None:
    payload = runner.payload("xerj_list_indices", {"pattern": "logs-*,-logs-b"})
    assert payload["error"]["code"] == "invalid_arguments"
    assert "XERJ has no `-` exclusion" in payload["error"]["reason"] and _sent(node) == []


def test_an_alias_given_as_a_listing_pattern_is_told_why_it_is_not_found(
    runner: Runner, node: XerjStandIn
) -> None:
    node.add_alias("pair", "logs-a", "logs-b")
    payload = runner.payload("xerj_list_indices", {"pattern": "pair"})  # XERJ: 404 for it
    assert payload["error"]["code"] == "index_not_found"
    assert "an alias or data stream is not one" in payload["error"]["hint"]
