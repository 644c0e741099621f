"""What of each hit the model reads: its fields, its inner hits, never an embedding it did not
name; and the reasons of failed shards."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._handlers import HttpRequest
from ._outcome import Reply

__all__ = ["decode_search", "hit", "named_fields", "shard_reasons"]


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list) and bool(value) and isinstance(value[0], (int, float, list, dict))
    )


def _strip_vectors(source: Any, named: frozenset[str]) -> Any:
    # XERJ keeps a semantic field's embedding inside _source as `<field>_vector` (and
    # `<field>_vector_chunks`; engine/crates/xerj-engine/src/index.rs:5077), and its _source
    # filter knows only a trailing `*` (index.rs:15826), so `*` or `body*` brings them back:
    # they are dropped here unless the model named that exact field.
    if not isinstance(source, dict):
        return source
    return {
        k: v for k, v in source.items()
        if k in named or not (k.endswith(("_vector", "_vector_chunks")) and _is_vector(v))
    }  # fmt: skip


def _drop_hit_vectors(obj: dict[str, Any], named: frozenset[str]) -> dict[str, Any]:
    # A json object_hook runs as each object closes: a hit's embeddings are dropped as soon as
    # that hit is parsed, so even a large answer never holds all of them at once.
    source = obj.get("_source")
    if "_id" in obj and isinstance(source, dict):
        obj["_source"] = _strip_vectors(source, named)
    return obj


def decode_search(reply: Reply, named: frozenset[str]) -> Any:
    """The search answer's JSON, without the embeddings the model did not name (NaN and
    infinities made null, as `Reply.data` does); None when the body is not JSON."""
    try:
        return json.loads(
            reply.body,
            parse_constant=lambda _: None,
            object_hook=lambda obj: _drop_hit_vectors(obj, named),
        )
    except (ValueError, RecursionError):
        return None


def named_fields(request: HttpRequest) -> frozenset[str]:
    """The exact field names the model asked `_source` for (no patterns)."""
    source = (request.body or {}).get("_source")
    if isinstance(source, dict):
        source = source.get("includes")
    names = source.split(",") if isinstance(source, str) else source
    if not isinstance(names, list):
        return frozenset()
    return frozenset(n.strip() for n in names if isinstance(n, str) and "*" not in n)


def hit(row: Mapping[str, Any], named: frozenset[str], inner: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("_index", "_id", "_score", "_nested"):
        if key in row:
            out[key] = row[key]
    if "_source" in row:
        out["_source"] = _strip_vectors(row["_source"], named)
    for key in ("highlight", "fields", "sort", "matched_queries"):
        if key in row:
            out[key] = row[key]
    if "inner_hits" in row:
        # the model asked for them in its query (es_compat.rs:9892-9894, 23971)
        out["inner_hits"] = _inner_hits(row["inner_hits"], named) if inner else row["inner_hits"]
    return out


def _inner_hits(value: Any, named: frozenset[str]) -> Any:
    """Each named block of inner hits, its hits shaped like top-level ones (one level deep)."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for name, block in value.items():
        inner = block.get("hits") if isinstance(block, dict) else None
        rows = inner.get("hits") if isinstance(inner, dict) else None
        if isinstance(inner, dict) and isinstance(rows, list):
            shaped = [hit(r, named, inner=False) for r in rows if isinstance(r, dict)]
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
