"""XERJ's contract, continued: the index listings and the `_source` rules.

Same two targets as `test_contract.py` (the stand-in always, the node at ``XERJ_CONTRACT_URL`` when set),
the same fixture and the same ``contract-<uuid>`` index. Paths at commit e6e8e6a (1.0.0-rc.4).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_contract import DOCS, INDEX, PREFIX, Target, ok, targets

pytestmark = pytest.mark.live


@pytest.fixture(scope="module", params=["stand-in", "node"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from targets(request.param)


def sources(target: Target, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {hit["_id"]: hit.get("_source", {}) for hit in ok(target.search(body))["hits"]["hits"]}


# ── Listings ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("query", ["", "?format=json", "?format=json&h=index", "?v=true&s=index"])
def test_cat_indices_is_text_lines_whatever_the_query_string(target: Target, query: str) -> None:
    """`cat_indices` takes no query parameters and always answers `text/plain; charset=utf-8`,
    one `green open <name> <uuid> 1 0 <docs> 0 <size> <size> <size>` line per index
    (router.rs:216; es_compat.rs:393-395, 446-486)."""
    answer = target.client.get(f"/_cat/indices{query}")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    lines = [line.split() for line in answer.text.splitlines()]
    ours = [cols for cols in lines if len(cols) > 2 and cols[2] == INDEX]
    assert len(ours) == 1, answer.text
    cols = ours[0]
    assert len(cols) == 11 and cols[:2] == ["green", "open"]
    assert cols[4:6] == ["1", "0"] and cols[6] == str(len(DOCS)) and cols[7] == "0"
    assert cols[8] == cols[9] == cols[10]  # store.size, pri.store.size, dataset.size
    again = target.client.get("/_cat/indices").text
    assert any(line.split()[2:4] == cols[2:4] for line in again.splitlines())  # a stable uuid


# ids without the per-run PREFIX: every pytest-xdist worker must collect the same test ids
@pytest.mark.parametrize("name", ["*", f"{PREFIX}-*", INDEX], ids=["*", "prefix-*", "index"])
def test_resolve_index_is_json_indices_aliases_and_no_data_streams(target: Target, name: str) -> None:
    """`resolve_index`: `{indices: [{name, attributes: ["open"]}], aliases: [{name, indices}],
    data_streams: []}`, a name with `*` globbed, any other matched exactly; 200 (router.rs:353;
    es_compat.rs:15816-15863)."""
    answer = target.client.get(f"/_resolve/index/{name}")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert set(body) == {"indices", "aliases", "data_streams"} and body["data_streams"] == []
    assert {"name": INDEX, "attributes": ["open"]} in body["indices"]
    assert all(set(entry) == {"name", "attributes"} for entry in body["indices"])
    assert all(set(alias) == {"name", "indices"} for alias in body["aliases"])
    if name != "*":
        assert [entry["name"] for entry in body["indices"]] == [INDEX]


def test_resolve_index_with_no_match_is_an_empty_200(target: Target) -> None:
    """es_compat.rs:15816-15863: nothing matched is still 200, with empty lists."""
    answer = target.client.get(f"/_resolve/index/{PREFIX}-missing")
    assert answer.status_code == 200
    assert answer.json() == {"indices": [], "aliases": [], "data_streams": []}


# ── `_source` ─────────────────────────────────────────────────────────────────

MATCH = {"match": {"title": "outage"}}


def test_source_star_is_a_trailing_wildcard_only_on_the_general_path(target: Target) -> None:
    """With no dotted pattern `filter_object` compares with `field_matches`: a trailing `*` is a
    prefix match, anything else is literal, so `*itle` and `*_vector` match nothing
    (index.rs:15672-15694, 15826-15832; called at 9930)."""
    assert all(set(s) == {"title"} for s in sources(target, {"query": MATCH, "_source": ["ti*"]}).values())
    leading = sources(target, {"query": MATCH, "_source": {"excludes": ["*itle", "*ec"]}})
    assert leading and all({"title", "vec"} <= set(s) for s in leading.values())
    assert all(s == {} for s in sources(target, {"query": MATCH, "_source": ["*itle"]}).values())


@pytest.mark.parametrize("search", [
    {"knn": {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 2}},
    {"query": {"semantic": {"field": "body", "query": "restore search index snapshot", "k": 2}}},
], ids=["knn", "semantic"])
def test_knn_and_semantic_searches_apply_no_source_filter(target: Target, search: dict[str, Any]) -> None:
    """A top-level `knn` and a `semantic` query return from `search_inner` before the only
    `apply_source_filter` call (index.rs:6690-6726, 6786-6787; 9930): `_source` is ignored."""
    got = sources(target, {**search, "_source": ["title"], "size": 2})
    assert len(got) == 2
    assert all({"title", "body", "service", "vec"} <= set(s) for s in got.values()), got
