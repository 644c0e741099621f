"""The stand-in's `_search`: query, knn, semantic, hybrid and rerank, with XERJ's rules.

Citations are XERJ paths at commit e6e8e6a (``engine/crates/…``); ``CONTRACT.md`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._aggs import run_aggs, too_many_buckets
from ._embed import embed
from ._engine import (
    SEARCH_KEYS,
    Index,
    QueryError,
    Result,
    _parse_error,
    invalid_query,
    score,
    top,
    union,
)
from ._knn import knn, knn_k, multi_knn, top_level_knn
from ._numbers import count
from ._ordering import hits_total, sort_specs, sort_value, sorted_hits
from ._rerank import RerankMode, prepare, rerank
from ._selector import _NotFound, select
from ._source import source_filter, unfiltered_ids
from ._wire import (
    check_content_type,
    first_unknown_key,
    optional_json,
    serde_struct,
)

__all__ = ["RerankMode", "search", "search_request"]

# The typed fields of `EsSearchBody` (es_compat.rs:2133-2232) that serde can refuse; every
# other key is an `Option<Value>`. `size` and `from` are `usize` with defaults, so `null`, a
# negative number or a float is a 400 parse_exception.
_BODY_FIELDS = {
    "size": "usize",
    "from": "usize",
    "explain": "bool",
    "profile": "bool",
    "track_scores": "bool?",
    "min_score": "f32?",
    "seq_no_primary_term": "bool?",
    "version": "bool?",
    "timeout": "string?",
}


def search_request(
    indices: Mapping[str, Index],
    expr: str,
    raw: bytes,
    content_type: str | None,
    *,
    rerank_mode: RerankMode,
    closed: frozenset[str],
    aliases: Mapping[str, Sequence[str]],
) -> Result:
    """``POST /{index}/_search`` from the raw body, through XERJ's `EsSearchJson` extractor.

    es_compat.rs:2727-2810: an empty body is match_all; a non-JSON Content-Type is a 415; the
    first top-level key off the allow-list is a 400 `parsing_exception` (found before the typed
    parse); then serde's own refusals.
    """
    allowed = SEARCH_KEYS if rerank_mode == "unsupported" else SEARCH_KEYS | {"rerank"}
    if raw:
        check_content_type(content_type)
    if raw and (unknown := first_unknown_key(raw, allowed)) is not None:
        return 400, unknown
    body = optional_json(raw, content_type)
    if body is not None:
        serde_struct("EsSearchBody", body, raw, fields=_BODY_FIELDS)
    return search(
        indices, expr, body or {}, rerank_mode=rerank_mode, closed=closed, aliases=aliases
    )


def _semantic(index: Index, spec: Any) -> list[tuple[float, str]]:
    """`semantic` (parser.rs:2324-2348; index.rs:4940-5035)."""
    if not isinstance(spec, Mapping):
        raise _parse_error("`semantic` must be an object")
    for key in ("field", "query"):
        if not isinstance(spec.get(key), str):
            raise _parse_error(f"`{key}` must be a non-empty string")
    if spec["field"] not in index.semantic_fields:
        # Raised by the engine, not the parser: no "parse error: " prefix. Only a node with no
        # active embedding backend refuses; one with a backend (neural, proxy, ONNX) embeds the
        # query with it for any field (index.rs:4991-5023, the 400 at 5013-5023). The stand-in
        # plays a node on the default embed mode, which has none.
        raise invalid_query(
            "semantic query requires either a `semantic_text` field (auto-embedded with the "
            'built-in lexical embedder) or an active embedding backend (`embedding.mode = "neural"`; '
            '`"proxy"` with `embedding.default_endpoint` set to an OpenAI-compatible endpoint; or '
            '`"onnx-experimental"` in an ONNX-enabled build with explicit model and tokenizer '
            "paths)."
        )
    k = count(spec, "k", 10)
    vector = {"field": f"{spec['field']}_vector", "query_vector": embed(spec["query"]), "k": k}
    return knn(index, vector, spec.get("filter"))


def _hybrid(index: Index, spec: Any, depth: int) -> list[tuple[float, str]]:
    """`hybrid` (parser.rs:2350-2410; index.rs:5326-5420, fuse_rrf/fuse_linear 17490-17580)."""
    if not isinstance(spec, Mapping):
        raise _parse_error("`hybrid` must be an object")
    queries = spec.get("queries")
    if not isinstance(queries, list):
        raise _parse_error("`hybrid.queries` must be an array")
    subs = []
    for i, sub in enumerate(queries):
        if not isinstance(sub, Mapping):
            raise _parse_error(f"`hybrid.queries[{i}]` must be an object")
        if "query" not in sub:
            raise _parse_error(f"`hybrid.queries[{i}]` missing `query`")
        weight = sub.get("weight")
        subs.append((sub["query"], float(weight) if isinstance(weight, (int, float)) else 1.0))
    if not subs:
        raise _parse_error("`hybrid.queries` must not be empty")
    fusion = spec.get("fusion")
    kind, k = "rrf", 60
    if isinstance(fusion, str):
        kind = fusion
    elif isinstance(fusion, Mapping):
        kind = str(fusion["type"]) if isinstance(fusion.get("type"), str) else "rrf"
        k = fusion["k"] if isinstance(fusion.get("k"), int) and fusion["k"] >= 0 else 60
    elif fusion is not None:
        raise _parse_error("`hybrid.fusion` must be a string or object")
    if kind == "learned":
        raise _parse_error("hybrid fusion learned is not yet supported; use rrf or linear")
    if kind not in ("rrf", "linear"):
        raise _parse_error(f"unknown hybrid fusion strategy `{kind}`")
    fused: dict[str, float] = {}
    for query, weight in subs:
        ranked = _ranked(index, query, depth)[:depth]  # each arm fetches max(50, from + size)
        scores = [s for s, _ in ranked]
        lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
        for rank, (s, doc_id) in enumerate(ranked, start=1):
            if kind == "rrf":
                part = weight / (k + rank)
            else:  # min-max per arm; a constant arm contributes 0
                part = weight * ((s - lo) / (hi - lo) if hi > lo else 0.0)
            fused[doc_id] = fused.get(doc_id, 0.0) + part
    return top(((s, d) for d, s in fused.items()), len(fused))


def _ranked(index: Index, query: Any, depth: int) -> list[tuple[float, str]]:
    if isinstance(query, Mapping) and len(query) == 1:
        kind, spec = next(iter(query.items()))
        if kind == "semantic":
            return _semantic(index, spec)
        if kind == "knn":
            return knn(index, spec)
        if kind == "hybrid":
            return _hybrid(index, spec, depth)
        must = spec.get("must") if kind == "bool" and isinstance(spec, Mapping) else None
        if (
            isinstance(must, list)
            and len(must) == 1
            and isinstance(must[0], Mapping)
            and set(must[0]) == {"knn"}
            and set(spec) <= {"must", "filter"}
        ):
            # kNN under a pre-filter, as memory recall builds it (memory_api.rs:511-518).
            filters = spec.get("filter")
            return knn(index, must[0]["knn"], {"bool": {"filter": filters or []}})
    score(query, {}, "")  # a malformed query is refused even on an empty index
    hits = [
        (s, doc_id)
        for doc_id, src in index.docs.items()
        if (s := score(query, src, doc_id)) is not None
    ]
    return top(hits, len(hits))


def search(
    indices: Mapping[str, Index],
    expr: str,
    body: Mapping[str, Any],
    *,
    rerank_mode: RerankMode,
    closed: frozenset[str] = frozenset(),
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> Result:
    """A parsed `_search` body against `indices` (none of `closed`) → (status, body)."""
    try:
        return _search(indices, expr, body, rerank_mode, closed, aliases or {})
    except QueryError as exc:
        return exc.status, exc.body()
    except _NotFound as exc:
        return exc.status, exc.body


def _search(
    indices: Mapping[str, Index],
    expr: str,
    body: Mapping[str, Any],
    rerank_mode: RerankMode,
    closed: frozenset[str],
    aliases: Mapping[str, Sequence[str]],
) -> Result:
    size = body.get("size", 10)
    start = body.get("from", 0)
    clauses = top_level_knn(body.get("knn"), body.get("query") is not None)
    k_total = sum(knn_k(c) for c in clauses)
    # A top-level kNN asks the engine for max(size, k) (es_compat.rs:5899), with or without a
    # `query` beside it.
    window = max(size, k_total) if clauses else size
    if start + window > 10_000:
        raise _parse_error(f"from + size must be <= 10000 (got {start + window})")  # parser.rs:151
    pure_knn = bool(clauses) and body.get("query") is None
    query = body.get("query") or {}
    aggs = body.get("aggs", body.get("aggregations"))
    if aggs is not None and isinstance(query, Mapping) and "hybrid" in query:
        raise invalid_query(  # index.rs:5337-5343: the engine's error, no parser prefix
            "aggregations are not supported with hybrid/fusion queries; "
            "run the aggregation as a separate non-hybrid search"
        )
    rerank_block = body.get("rerank")  # `"rerank": null` is no rerank (rerank_stage.rs)
    question = ""
    if rerank_block is not None and rerank_mode != "unsupported":
        question = prepare(rerank_block, body, size, start)
    depth = max(50, start + size)
    ranked: list[tuple[float, str, Index]] = []
    chosen = select(indices, expr, closed, aliases)
    for index in chosen:
        if pure_knn:
            found = multi_knn(index, clauses)
        elif clauses:  # `bool.should[query, knn]` (es_compat.rs:5884-5893): the sum, the union
            found = union([_ranked(index, query, depth), knn(index, clauses[0])])
        else:
            found = _ranked(index, query, depth)
        ranked += [(s, d, index) for s, d in found]
    ranked.sort(key=lambda h: -h[0])
    specs = sort_specs(body.get("sort"))
    field_sort = specs not in ([], [("_score", True)])  # a pure `_score` sort is no sort
    if field_sort:
        ranked = sorted_hits(ranked, specs)
    total = len(ranked)
    rerank_info = None
    max_score: float | None
    page: list[tuple[float | None, str, Index]]
    if rerank_block is not None and rerank_mode != "unsupported":
        page, rerank_info, max_score = rerank(
            rerank_mode, rerank_block, question, ranked, size, start
        )
    elif pure_knn:
        # Pure kNN: hits and `hits.total` are the k nearest (summed over the clauses), capped by
        # `size` (es_compat.rs:5829-5848, 7960-7968).
        page = list(ranked[start : start + window][: min(k_total, size)])
        total = len(page)
        max_score = page[0][0] if page else None
    else:
        page = list(ranked[start : start + window])
        # `max_score` (es_compat.rs:8064-8119): null under a field sort; past `from` it is the
        # population's maximum, not the page head (except hybrid, whose engine reports none).
        hybrid = isinstance(query, Mapping) and "hybrid" in query
        head = ranked[:1] if start > 0 and size > 0 and not hybrid else page[:1]
        max_score = head[0][0] if head and not field_sort else None
    hits = []
    unfiltered: dict[str, set[str]] = {}
    for s, doc_id, index in page:
        hit: dict[str, Any] = {
            "_index": index.name,
            "_id": doc_id,
            "_score": None if field_sort else s,
        }
        if index.name not in unfiltered:
            unfiltered[index.name] = unfiltered_ids(
                index, body, lambda ix, q: _ranked(ix, q, depth)[:depth]
            )
        spec = body.get("_source")
        if doc_id in unfiltered[index.name] and spec not in (False, "false"):
            spec = None  # this path applies no `_source` filter (see `unfiltered_ids`)
        filtered = source_filter(index.docs[doc_id], spec)
        if filtered is not None:
            hit["_source"] = filtered
        if field_sort:
            hit["sort"] = [sort_value((s or 0.0, doc_id, index), n, d) for n, d in specs]
        hits.append(hit)
    out: dict[str, Any] = {"_rerank": rerank_info} if rerank_info is not None else {}
    out.update({"took": 1, "timed_out": False})
    tth = body.get("track_total_hits")
    if size == 0 and tth is True and aggs is None:
        out["terminated_early"] = False  # es_compat.rs:10476-10497
    shards = max(1, len(chosen))  # one shard per index searched (es_compat.rs:10378-10403)
    out["_shards"] = {"total": shards, "successful": shards, "skipped": 0, "failed": 0}
    hits_block: dict[str, Any] = {}
    if (total_block := hits_total(tth, total)) is not None:
        hits_block["total"] = total_block
    hits_block["max_score"] = max_score
    hits_block["hits"] = hits
    out["hits"] = hits_block
    if aggs:
        # The documents carry `_id`, `_index` and `_score`, as XERJ's do (index.rs:9818-9830);
        # `global` and `min_doc_count: 0` read every document of the indices searched.
        matched: list[Mapping[str, Any]] = [
            {**ix.docs[d], "_id": d, "_index": ix.name, "_score": s} for s, d, ix in ranked
        ]
        every: list[Mapping[str, Any]] = [
            {**src, "_id": d, "_index": ix.name} for ix in chosen for d, src in ix.docs.items()
        ]
        out["aggregations"] = run_aggs(aggs, matched, every) if isinstance(aggs, Mapping) else {}
        if (refusal := too_many_buckets(out["aggregations"])) is not None:
            return 400, refusal  # es_compat.rs:10527-10580
    return 200, out
