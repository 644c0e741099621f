"""The stand-in's endpoints: `_search` (query, knn, semantic, hybrid, rerank) and agent memory."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ._engine import (
    SEARCH_KEYS,
    Index,
    QueryError,
    Result,
    _parse_error,
    cosine_score,
    embed,
    question,
    score,
    source_filter,
    tokens,
    top,
)

RerankMode = Literal["ok", "degraded", "unconfigured", "disabled", "provider_error", "unsupported"]
_RERANK_KEYS = {
    "provider",
    "model",
    "window",
    "min_score",
    "query",
    "fields",
    "instructions",
    "timeout_ms",
    "max_doc_chars",
    "batch",
    "max_concurrency",
}


def _uint(body: Mapping[str, Any], key: str, default: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        # serde `usize`: null, negatives and floats are a parse_exception (contract §2.1)
        raise QueryError(
            400,
            "parse_exception",
            f"malformed JSON in request body: invalid value for `{key}`",
            root_cause=False,
        )
    return value


def _sort_key(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, "" if value is None else str(value))


def _resolve(indices: Mapping[str, Index], expr: str) -> list[Index]:
    chosen: list[Index] = []
    for part in expr.split(","):
        if part in ("_all", "*") or "*" in part:
            pattern = "*" if part == "_all" else part
            chosen += [ix for name, ix in indices.items() if fnmatch.fnmatchcase(name, pattern)]
        elif part in indices:
            chosen.append(indices[part])
        else:
            reason = f"no such index [{part}]"
            error = {
                "type": "index_not_found_exception",
                "reason": reason,
                "resource.type": "index_or_alias",
                "resource.id": part,
                "index_uuid": "_na_",
                "index": part,
            }
            raise _NotFound({"error": {"root_cause": [dict(error)], **error}, "status": 404})
    return chosen


class _NotFound(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("not found")
        self.body = body


def _knn(index: Index, spec: Mapping[str, Any]) -> list[tuple[float, str]]:
    vector = spec.get("query_vector", spec.get("vector"))
    if not isinstance(vector, list) or not vector:
        raise _parse_error("`knn` requires `query_vector` (or `vector`) as a float array")
    k = spec.get("k", spec.get("num_candidates", 10))
    hits = []
    for doc_id, src in index.docs.items():
        stored = src.get(spec.get("field", ""))
        if not isinstance(stored, list):
            continue
        if spec.get("filter") is not None and any(
            score(f, src) is None
            for f in (spec["filter"] if isinstance(spec["filter"], list) else [spec["filter"]])
        ):
            continue
        s = cosine_score([float(x) for x in vector], stored)
        if s is not None:
            hits.append((s, doc_id))
    return top(hits, int(k))


def _semantic(index: Index, spec: Mapping[str, Any]) -> list[tuple[float, str]]:
    fieldname, text = spec.get("field"), spec.get("query")
    if not isinstance(fieldname, str) or not isinstance(text, str) or not fieldname or not text:
        raise _parse_error("`field` and `query` must be non-empty strings")
    if fieldname not in index.semantic_fields:
        raise _parse_error(
            "semantic query requires either a `semantic_text` field (auto-embedded with "
            "the built-in lexical embedder) or an active embedding backend"
        )
    return _knn(
        index,
        {
            "field": f"{fieldname}_vector",
            "query_vector": embed(text),
            "k": spec.get("k", 10),
            "filter": spec.get("filter"),
        },
    )


def _hybrid(index: Index, spec: Mapping[str, Any]) -> list[tuple[float, str]]:
    queries = spec.get("queries")
    if not isinstance(queries, list):
        raise _parse_error("`hybrid.queries` must be an array")
    if not queries:
        raise _parse_error("`hybrid.queries` must not be empty")
    fusion = spec.get("fusion", "rrf")
    kind = fusion.get("type", "rrf") if isinstance(fusion, Mapping) else fusion
    k = fusion.get("k", 60) if isinstance(fusion, Mapping) else 60
    if kind == "learned":
        raise _parse_error("hybrid fusion learned is not yet supported; use rrf or linear")
    if kind not in ("rrf", "linear"):
        raise _parse_error(f"unknown hybrid fusion strategy `{kind}`")
    fused: dict[str, float] = {}
    for i, sub in enumerate(queries):
        if not isinstance(sub, Mapping) or "query" not in sub:
            raise _parse_error(f"`hybrid.queries[{i}]` missing `query`")
        weight = float(sub.get("weight", 1.0))
        ranked = _ranked(index, sub["query"])[:50]
        scores = [s for s, _ in ranked]
        lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
        for rank, (s, doc_id) in enumerate(ranked, start=1):
            part = (
                weight / (k + rank)
                if kind == "rrf"
                else weight * ((s - lo) / (hi - lo) if hi > lo else 1.0)
            )
            fused[doc_id] = fused.get(doc_id, 0.0) + part
    return top(((s, d) for d, s in fused.items()), len(fused))


def _ranked(index: Index, query: Any) -> list[tuple[float, str]]:
    if isinstance(query, Mapping) and len(query) == 1:
        kind, spec = next(iter(query.items()))
        if kind == "semantic":
            return _semantic(index, spec)
        if kind == "knn":
            return _knn(index, spec)
        if kind == "hybrid":
            return _hybrid(index, spec)
    hits = [
        (s, doc_id) for doc_id, src in index.docs.items() if (s := score(query, src)) is not None
    ]
    return top(hits, len(hits))


def _avg(n: list[float]) -> float | None:
    return sum(n) / len(n) if n else None


_METRICS: dict[str, Callable[[list[float]], Any]] = {
    "avg": _avg,
    "min": lambda n: min(n, default=None),
    "max": lambda n: max(n, default=None),
    "sum": sum,
    "value_count": len,
}


def _aggs(aggs: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in aggs.items():
        kind, body = next(iter(spec.items()))
        values = [
            v
            for s in sources
            for v in ([s.get(body.get("field"))] if body.get("field") in s else [])
        ]
        if kind == "terms":
            counts: dict[Any, int] = {}
            for v in values:
                counts[v] = counts.get(v, 0) + 1
            ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
            size = int(body.get("size", 10))
            out[name] = {
                "doc_count_error_upper_bound": 0,
                "sum_other_doc_count": sum(c for _, c in ordered[size:]),
                "buckets": [{"key": k, "doc_count": c} for k, c in ordered[:size]],
            }
        elif kind in ("avg", "min", "max", "sum", "value_count"):
            nums = [v for v in values if isinstance(v, (int, float))]
            fn = _METRICS[kind]
            out[name] = {"value": fn(nums)}
        else:
            raise _parse_error(f"unknown aggregation type [{kind}]")
    return out


def _rerank(
    mode: RerankMode,
    block: Any,
    body: Mapping[str, Any],
    ranked: list[tuple[float, str, Index]],
    size: int,
    start: int,
) -> tuple[list[tuple[float | None, str, Index]], dict[str, Any]]:
    if not isinstance(block, Mapping):
        raise QueryError(400, "illegal_argument_exception", "`rerank` must be an object")
    for key in block:
        if key not in _RERANK_KEYS:
            raise QueryError(
                400,
                "illegal_argument_exception",
                f"unknown `rerank` field `{key}`; supported: {', '.join(sorted(_RERANK_KEYS))}",
            )
    if mode == "unconfigured":
        raise QueryError(
            503,
            "rerank_exception",
            "no rerank API key is configured on this server: set "
            "`api_key` under `[rerank]` in the config file, or the TYPESAFE_API_KEY environment "
            "variable, and restart",
        )
    if mode == "disabled":
        raise QueryError(
            403, "rerank_exception", "rerank is disabled on this server ([rerank] enabled=false)"
        )
    if mode == "provider_error":
        raise QueryError(502, "rerank_exception", "rerank provider unreachable after 3 attempts")
    text = block.get("query") or question(body.get("query"))
    if not text:
        raise QueryError(
            400, "illegal_argument_exception", "`rerank.query` is required for this query"
        )
    window = int(block.get("window", 30))
    if "sort" in body or size == 0 or start + size > window:
        raise QueryError(
            400, "illegal_argument_exception", "rerank refused: sort, size 0 or from+size > window"
        )
    if mode == "degraded":
        info = {
            "applied": False,
            "reason": "rerank deadline exceeded after 301ms",
            "provider": "jev",
            "score_kind": "engine",
            "query": text,
            "took_ms": 301,
        }
        return [(s, d, ix) for s, d, ix in ranked], info
    words = set(tokens(text))
    judged = []
    for _, doc_id, ix in ranked[:window]:
        doc_words = set(
            tokens(
                " ".join(str(v) for k, v in ix.docs[doc_id].items() if not k.endswith("_vector"))
            )
        )
        judged.append((round(len(words & doc_words) / (len(words) or 1), 4), doc_id, ix))
    min_score = float(block.get("min_score", 0.0))
    kept = [h for h in sorted(judged, key=lambda h: -h[0]) if h[0] >= min_score]
    info = {
        "applied": True,
        "provider": "jev",
        "model": "jev-latest",
        "score_kind": "probability",
        "window": window,
        "judged": len(judged),
        "unjudged": 0,
        "skipped_no_text": 0,
        "pruned_below_min_score": len(judged) - len(kept),
        "dropped_unjudged": 0,
        "partial_failures": 0,
        "query": text,
        "took_ms": 3,
    }
    return [(s, d, ix) for s, d, ix in kept], info


def search(
    indices: Mapping[str, Index], expr: str, body: Mapping[str, Any], *, rerank_mode: RerankMode
) -> Result:
    try:
        return _search(indices, expr, body, rerank_mode)
    except QueryError as exc:
        return exc.status, exc.body()
    except _NotFound as exc:
        return 404, exc.body


def _search(
    indices: Mapping[str, Index], expr: str, body: Mapping[str, Any], rerank_mode: RerankMode
) -> Result:
    allowed = SEARCH_KEYS if rerank_mode == "unsupported" else SEARCH_KEYS | {"rerank"}
    for key in body:
        if key not in allowed:
            reason = f"Unknown key for a START_OBJECT in [{key}]."
            error = {"type": "parsing_exception", "reason": reason, "line": 1, "col": 1}
            return 400, {"error": {"root_cause": [dict(error)], **error}, "status": 400}
    size, start = _uint(body, "size", 10), _uint(body, "from", 0)
    if start + size > 10_000:
        raise _parse_error(f"from + size must be <= 10000 (got {start + size})")
    query = body.get("query", {})
    aggs = body.get("aggs", body.get("aggregations"))
    if aggs and isinstance(query, Mapping) and "hybrid" in query:
        raise _parse_error(
            "aggregations are not supported with hybrid/fusion queries; "
            "run the aggregation as a separate non-hybrid search"
        )
    ranked: list[tuple[float, str, Index]] = []
    knn_hits = 0
    for index in _resolve(indices, expr):
        if "knn" in body:
            found = _knn(index, body["knn"])
            knn_hits += len(found)
        else:
            found = _ranked(index, query)
        ranked += [(s, d, index) for s, d in found]
    ranked.sort(key=lambda h: -h[0])
    sort = body.get("sort")
    if sort:
        spec = sort[0] if isinstance(sort, list) else sort
        fieldname, order = (spec, "asc") if isinstance(spec, str) else next(iter(spec.items()))
        order = order.get("order", "asc") if isinstance(order, Mapping) else order
        ranked.sort(
            key=lambda h: _sort_key(h[2].docs[h[1]].get(fieldname)), reverse=order == "desc"
        )
    total = len(ranked)
    rerank_info = None
    scored: list[tuple[float | None, str, Index]] = list(ranked)
    if body.get("rerank") is not None:
        scored, rerank_info = _rerank(rerank_mode, body["rerank"], body, ranked, size, start)
    page = scored[start : start + size]
    if "knn" in body:
        page = scored[: min(size, knn_hits)]
    hits = []
    for s, doc_id, index in page:
        hit: dict[str, Any] = {"_index": index.name, "_id": doc_id, "_score": None if sort else s}
        filtered = source_filter(index.docs[doc_id], body.get("_source"))
        if filtered is not None:
            hit["_source"] = filtered
        if sort:
            hit["sort"] = [index.docs[doc_id].get(fieldname)]
        hits.append(hit)
    out: dict[str, Any] = {}
    if rerank_info is not None:
        out["_rerank"] = rerank_info
    out.update(
        {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        }
    )
    tth = body.get("track_total_hits", 10_000)
    hits_block: dict[str, Any] = {}
    if tth not in (False, 0):
        cap = 10_000 if tth is None else (None if tth is True or tth == -1 else int(tth))
        relation = "gte" if cap is not None and total > cap else "eq"
        hits_block["total"] = {
            "value": min(total, cap) if cap is not None else total,
            "relation": relation,
        }
    hits_block["max_score"] = hits[0]["_score"] if hits else None
    hits_block["hits"] = hits
    out["hits"] = hits_block
    if aggs:
        out["aggregations"] = _aggs(aggs, [ix.docs[d] for _, d, ix in ranked])
    return 200, out
