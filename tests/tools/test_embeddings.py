"""Embeddings under any name: the field a kNN search ran on, the dense_vector
fields of a cached mapping, and any long array of numbers are left out of what the model reads
unless `source` names them, with a marker; every hit of a page is then shown. Against the
stand-in, over a real socket."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from xerj_tools.testing import XerjStandIn
from xerj_tools.tools._source_view import LONG_ARRAY, SourceView, omit_embeddings

from conftest import Runner

DIMS = 1536
MARK = f"<{DIMS} numbers omitted>"


def _vector(seed: int, dims: int = DIMS) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(dims)]  # full-precision floats, ~20 chars each


@pytest.fixture
def products(xerj: XerjStandIn) -> XerjStandIn:
    # XERJ's own examples name their dense_vector fields `embedding` and `vec`
    # (docs/examples/vector-search-knn/knn_demo.py:98, hybrid-search/hybrid_search.py:59).
    docs = {f"p{i}": {"name": f"product {i}", "category": "tea", "embedding": _vector(i)} for i in range(10)}
    xerj.add_documents("products", docs)
    return xerj


@pytest.fixture
def runner(make_runner: Any, products: XerjStandIn) -> Runner:
    return make_runner(url=products.url)  # type: ignore[no-any-return]


def test_a_vector_search_shows_every_hit_without_the_searched_embedding(runner: Runner) -> None:
    payload = runner.payload("xerj_vector_search", {"index": "products", "field": "embedding",
                                                    "query_vector": _vector(3), "k": 5})
    assert payload["ok"] and len(payload["hits"]) == 5 and "truncated" not in payload
    assert payload["hits"][0]["_id"] == "p3"
    assert all(h["_source"]["embedding"] == MARK and h["_source"]["name"] for h in payload["hits"])


def test_a_page_through_search_shows_every_hit_and_no_long_array(runner: Runner) -> None:
    seen = []
    for start in (0, 5):
        payload = runner.payload("xerj_search", {"index": "products", "query": {"match_all": {}},
                                                 "size": 5, "from": start})
        assert len(payload["hits"]) == 5 and "truncated" not in payload
        seen += [h["_id"] for h in payload["hits"]]
        assert all(h["_source"]["embedding"] == MARK for h in payload["hits"])
    assert sorted(seen) == [f"p{i}" for i in range(10)]


def test_a_knn_clause_of_xerj_search_leaves_its_field_out_whatever_its_length(
    runner: Runner, products: XerjStandIn
) -> None:
    products.add_documents("small", {"a": {"t": "x", "vec": [0.1, 0.2, 0.3, 0.4]}})
    query = {"knn": {"field": "vec", "query_vector": [0.1, 0.2, 0.3, 0.4], "k": 1}}
    payload = runner.payload("xerj_search", {"index": "small", "query": query})
    assert payload["hits"][0]["_source"] == {"t": "x", "vec": "<4 numbers omitted>"}


def test_a_named_embedding_is_read_whole(runner: Runner, products: XerjStandIn) -> None:
    products.add_documents("small", {"a": {"t": "x", "emb": _vector(7, 100)}})
    payload = runner.payload("xerj_search", {"index": "small", "query": {"match_all": {}},
                                             "source": ["t", "emb"]})
    assert payload["hits"][0]["_source"] == {"t": "x", "emb": _vector(7, 100)}
    # a pattern is not a name: 1536 floats do not come back through `emb*`
    payload = runner.payload("xerj_search", {"index": "products", "query": {"ids": {"values": ["p1"]}},
                                             "source": ["emb*"], "size": 1})
    assert payload["hits"][0]["_source"] == {"embedding": MARK}


def test_a_document_is_read_with_a_marker_for_its_embedding(runner: Runner) -> None:
    payload = runner.payload("xerj_get_document", {"index": "products", "id": "p2"})
    assert payload["_source"] == {"name": "product 2", "category": "tea", "embedding": MARK}
    assert len(json.dumps(payload)) < 300


def test_long_arrays_are_found_at_any_depth_and_short_ones_kept() -> None:
    source = {"figures": list(range(LONG_ARRAY)), "chunks": [{"text": "a", "vec": [0.5] * 100}],
              "meta": {"inner": {"emb": [1.0] * 65}}, "matrix": [[0.1] * 65, [0.2] * 65],
              "tags": ["a"] * 100}
    out = omit_embeddings(source)
    assert out == {"figures": list(range(LONG_ARRAY)), "chunks": [{"text": "a", "vec": "<100 numbers omitted>"}],
                   "meta": {"inner": {"emb": "<65 numbers omitted>"}},
                   "matrix": "<2 vectors of 65 numbers omitted>", "tags": ["a"] * 100}
    assert source["meta"]["inner"]["emb"] == [1.0] * 65  # never changed in place
    assert omit_embeddings(source, named=frozenset({"meta.inner.emb"}))["meta"] == source["meta"]
    assert SourceView(vectors=frozenset({"figures"})).omit(source)["figures"] == f"<{LONG_ARRAY} numbers omitted>"
    plain = {"a": 1, "b": [1, 2]}
    assert omit_embeddings(plain) is plain


VECTOR = [0.25] * 4096


@pytest.mark.parametrize(
    ("value", "marker"),
    [
        ([None, *VECTOR, None], "<4098 numbers omitted>"),  # NaN and Infinity, read as null
        ([None, *VECTOR], "<4097 numbers omitted>"),  # a missing component first
        (["x", *VECTOR], "<4097 numbers omitted>"),
        ([*VECTOR, "x"], "<4097 numbers omitted>"),
        ([*VECTOR[:2000], "SECRET", *VECTOR[2000:]], "<4097 numbers omitted>"),
        ([[VECTOR]], "<1 lists of vectors of 4096 numbers omitted>"),
        ([[[VECTOR, VECTOR]]], "<1 lists of vectors of 4096 numbers omitted>"),
    ],
)
def test_an_embedding_of_an_odd_shape_is_still_left_out(value: list[Any], marker: str) -> None:
    assert omit_embeddings({"title": "t", "embedding": value}) == {"title": "t", "embedding": marker}


def test_an_embedding_deep_in_objects_is_left_out() -> None:
    source: dict[str, Any] = {"embedding": VECTOR}
    for _ in range(30):
        source = {"a": source}
    out = omit_embeddings({"title": "t", **source})
    for _ in range(30):
        out = out["a"]
    assert out == {"embedding": "<4096 numbers omitted>"}


@pytest.mark.parametrize(
    "value",
    [["a"] * 100, [True] * 5000, ["x", "y", *range(100), *["z"] * 100], [{"k": 1}] * 100, [[], []]],
)
def test_lists_that_are_no_embedding_are_kept(value: list[Any]) -> None:
    source = {"v": value}
    assert omit_embeddings(source) is source


def test_a_large_answer_is_read_holding_one_hits_embedding_at_a_time() -> None:
    import tracemalloc

    from xerj_tools._http._models import Reply
    from xerj_tools.tools._hits import FAST_BODY, decode_search

    hits = [{"_index": "p", "_id": str(i), "_score": 1.0, "_source": {"n": i, "embedding": _vector(i)}}
            for i in range(100)]
    body = json.dumps({"hits": {"total": {"value": 100}, "hits": hits}}).encode()
    assert len(body) > FAST_BODY  # decoded by `json`, each hit shaped as it is parsed
    del hits
    tracemalloc.start()
    try:
        data = decode_search(Reply(200, {}, body), SourceView())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(h["_source"]["embedding"] == MARK for h in data["hits"]["hits"])
    # the body decoded to text once (json.loads), then one hit's floats at a time (~60 KB);
    # 100 x 1536 floats held at once would add ~5 MB
    assert peak < len(body) + 1_500_000, (peak, len(body))


def test_a_hybrid_search_shows_every_hit_without_the_embedding(runner: Runner) -> None:
    queries = [{"query": {"match": {"name": "product"}}},
               {"query": {"knn": {"field": "embedding", "query_vector": _vector(4), "k": 5}}}]
    payload = runner.payload("xerj_hybrid_search", {"index": "products", "queries": queries, "size": 5})
    assert payload["ok"] and len(payload["hits"]) == 5 and "truncated" not in payload
    # excluded on the wire where XERJ applies `_source` (its text sub-query), marked where not
    assert all(h["_source"].get("embedding", MARK) == MARK and h["_source"]["name"] for h in payload["hits"])
