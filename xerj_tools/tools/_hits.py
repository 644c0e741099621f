"""What of each hit the model reads: its fields, its inner hits, never an embedding it did not
name; and the reasons of failed shards."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .._http._models import Reply
from .._json import fast_loads
from ._number_runs import Counted, count_runs
from ._source_view import SourceView

__all__ = ["decode_search", "hit", "shard_reasons"]


def _shape_source(obj: dict[str, Any], view: SourceView) -> None:
    # XERJ keeps a semantic field's embedding inside _source as `<field>_vector` (and
    # `<field>_vector_chunks`; engine/crates/xerj-engine/src/index.rs:5077), returns the whole
    # `_source` on kNN and semantic paths (index.rs:6690-6726, 6786, 9930), and a dense_vector
    # field may have any name (`embedding`, `vec`: docs/examples/vector-search-knn/knn_demo.py:98,
    # hybrid-search/hybrid_search.py:59): the view applies the model's includes/excludes again
    # and leaves out every embedding it did not name (`_source_view.omit_embeddings`).
    source = obj.get("_source")
    if not isinstance(source, dict):
        return
    if not view.keep:
        del obj["_source"]
    elif view.includes or view.excludes:
        obj["_source"] = view.apply(source)
    else:
        obj["_source"] = view.omit(source)


def _hit_hook(
    view: SourceView, counted: Counted | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A json object_hook, which runs as each object closes: a hit's embeddings are dropped as
    soon as that hit is parsed, so even a large answer never holds all of them at once. It runs
    for every object of the answer, a `top_hits` hit inside an aggregation too; the request's
    own `_source` filter is applied after (`_narrow`), to the search's hits only. With
    `counted`, the hit's long arrays stand in for themselves (`_number_runs`)."""
    omit = view.omit

    def drop(obj: dict[str, Any]) -> dict[str, Any]:
        if "_id" in obj and type(source := obj.get("_source")) is dict:
            obj["_source"] = omit(source if counted is None else counted.expand(source))
        return obj

    return drop


def _narrow(data: Any, view: SourceView) -> None:
    """The search's hits, and their inner hits, cut to the request's `_source`: a `top_hits`
    aggregation's hits keep the `_source` it asked for itself (aggs.rs:7559-7571, 7990-8012 at
    e6e8e6a), their embeddings left out all the same."""
    if view.keep and not view.includes and not view.excludes:
        return
    block = data.get("hits") if isinstance(data, dict) else None
    rows = block.get("hits") if isinstance(block, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        _shape_source(row, view)
        inner = row.get("inner_hits")
        for named in inner.values() if isinstance(inner, dict) else []:
            hits = named.get("hits") if isinstance(named, dict) else None
            found = hits.get("hits") if isinstance(hits, dict) else None
            for found_row in found if isinstance(found, list) else []:
                if isinstance(found_row, dict):
                    _shape_source(found_row, view)


# Up to this size an answer is decoded by orjson (when installed) and its hits shaped after;
# a larger one by `json`, each hit shaped as it is parsed (see `_hit_hook`).
FAST_BODY = 256 * 1024


def _walk(value: Any, hook: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    # `hook` on every object with an `_id` (it ignores the others), innermost first, as `json`'s
    # object_hook runs; in place.
    if type(value) is dict:
        for item in value.values():
            if type(item) is dict or type(item) is list:
                _walk(item, hook)
        if "_id" in value:
            hook(value)
    elif type(value) is list:
        for item in value:
            if type(item) is dict or type(item) is list:
                _walk(item, hook)


def decode_search(reply: Reply, view: SourceView) -> Any:
    """The search answer's JSON, each hit's `_source` cut to what the model asked for (see
    `_source_view`; NaN and infinities made null, as `Reply.data` does); None when the body is
    not JSON."""
    if len(reply.body) <= FAST_BODY:
        data = fast_loads(reply.body)
        if data is not NotImplemented:
            try:
                _walk(data, _hit_hook(view))
                _narrow(data, view)
                return data
            except RecursionError:
                pass  # deeper than Python walks: `json` answers as it always did
    # its long arrays of numbers counted, not read, unless still there once the hits are shaped
    counted = count_runs(reply.body)
    text = reply.body if counted is None else counted.text
    try:
        hook = _hit_hook(view, counted)
        data = json.loads(text, parse_constant=lambda _: None, object_hook=hook)
        _narrow(data, view)
        return data if counted is None else counted.restored(data)
    except (ValueError, RecursionError):
        return None


# what the model reads of a hit, in this order
_READ = "_index _id _score _nested _source highlight fields sort matched_queries".split()


def hit(row: Mapping[str, Any], view: SourceView, inner: bool = True) -> dict[str, Any]:
    """The keys of `row` (a hit from `decode_search`) the model reads. `decode_search` shaped
    the `_source` of every hit with an `_id` as it was parsed, so only a row without one (which
    XERJ does not send) is shaped here: once is enough, the view being idempotent."""
    out = {key: row[key] for key in _READ if key in row}
    if "_id" not in row:
        _shape_source(out, view)
    if "inner_hits" in row:
        # the model asked for them in its query (es_compat.rs:9892-9894, 23971)
        out["inner_hits"] = _inner_hits(row["inner_hits"], view) if inner else row["inner_hits"]
    return out


def _inner_hits(value: Any, view: SourceView) -> Any:
    """Each named block of inner hits, its hits shaped like top-level ones (one level deep)."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for name, block in value.items():
        inner = block.get("hits") if isinstance(block, dict) else None
        rows = inner.get("hits") if isinstance(inner, dict) else None
        if isinstance(inner, dict) and isinstance(rows, list):
            shaped = [hit(r, view, inner=False) for r in rows if isinstance(r, dict)]
            out[name] = {
                "hits": {**{k: v for k, v in inner.items() if k != "hits"}, "hits": shaped}
            }
        else:
            out[name] = block
    return out


def shard_reasons(failures: Any, limit: int = 3) -> list[str]:
    """The distinct reasons in `_shards.failures` (XERJ: es_compat.rs:8012-8019, 10504)."""
    reasons: list[str] = []
    for failure in failures if isinstance(failures, list) else []:
        cause = failure.get("reason") if isinstance(failure, dict) else None
        if isinstance(cause, dict):
            kind, said = cause.get("type"), cause.get("reason")
            text = f"{kind}: {said}" if isinstance(kind, str) and isinstance(said, str) else None
        else:
            text = cause if isinstance(cause, str) else None
        if text and text[:300] not in reasons:
            reasons.append(text[:300])
        if len(reasons) == limit:
            break
    return reasons
