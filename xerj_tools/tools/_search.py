"""The four search tools: `xerj_search`, `xerj_semantic_search`, `xerj_vector_search` and
`xerj_hybrid_search`. Each builds ``POST /{index}/_search`` and reads XERJ's search envelope."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .._http._models import HttpRequest
from .._message._format import engine_error, invalid, unusable
from ._hits import decode_search, hit, shard_reasons
from ._limits import (
    MAX_RESULT_WINDOW,
    clause,
    finite_vector,
    index_expression,
    int_range,
    not_blank,
    required,
)
from ._paths import segment
from ._rerank import rerank
from ._search_limits import rrf_only, sort_entries, source, sub_queries, total_hits, window
from ._source_view import SourceView, source_view
from ._tool import Advice, Cap, PolicyTraits, Received, Tool, copy_args, integral

__all__ = ["HYBRID", "SEARCH", "SEMANTIC", "VECTOR", "read_search"]

# Each tool's limits, in the order their problems are reported.
SEARCH_LIMITS = (
    index_expression(),
    # XERJ reads a search without `query` as match_all (es_compat.rs:4519 at e6e8e6a,
    # `unwrap_or(json!({"match_all": {}}))`); a model that forgot its filter would get every
    # document, so the call is refused with the one-step fix rather than repaired
    # (docs/validation.md).
    required(
        "query",
        'is required: send {} (or {"match_all": {}}) to search every document, for '
        "instance with size 0 and aggs, or the query you meant",
    ),
    clause("query"),
    window(),
    source(),
    sort_entries(),
    total_hits(),
    rerank(question_from="query"),
)
_K_AND_SIZE = (int_range("k", 1, MAX_RESULT_WINDOW), int_range("size", 0, MAX_RESULT_WINDOW))
SEMANTIC_LIMITS = (
    index_expression(),
    not_blank("field", "field name"),
    not_blank("query", "question"),
    *_K_AND_SIZE,
    clause("filter"),
)
VECTOR_LIMITS = (
    index_expression(),
    not_blank("field", "field name"),
    finite_vector("query_vector"),
    *_K_AND_SIZE,
    int_range("num_candidates", 1, MAX_RESULT_WINDOW),
    clause("filter"),
)
HYBRID_LIMITS = (
    index_expression(),
    sub_queries(),
    int_range("rrf_k", 1),
    rrf_only(),
    int_range("size", 0, MAX_RESULT_WINDOW),
    rerank(),
)


def _search_path(index: str) -> str:
    return f"/{segment(index, keep=',*', path='$.index')}/_search"


def _vector_fields(query: Any, out: set[str], depth: int = 0) -> set[str]:
    """The embedding fields a query names: `<f>_vector` and `<f>_vector_chunks` for each
    `semantic` clause on field f, and the field of each `knn` clause with its `_chunks`."""
    if depth > 64:
        return out
    if isinstance(query, dict):
        for key, value in query.items():
            if key in ("semantic", "knn") and isinstance(value, dict):
                field = value.get("field")
                if isinstance(field, str) and field:
                    target = field if key == "knn" else f"{field}_vector"
                    out.update((target, f"{target}_chunks"))
            _vector_fields(value, out, depth + 1)
    elif isinstance(query, list):
        for item in query:
            _vector_fields(item, out, depth + 1)
    return out


def _source(value: Any, query: Any) -> Any:
    """`_source` as sent. The model's own choice goes as it is (and is applied again as the answer
    is decoded, `_source_view`, where XERJ ignores it); by default, the embedding fields
    the query names are excluded by their exact names (the only form XERJ's filter honours),
    and nothing at all is sent when the query names none."""
    if value is False or value == "false":
        return False
    if value is not None and value is not True and value != "true":
        return value  # specific fields, as a list or a comma string: the model asked for them
    if isinstance(query, dict) and len(query) == 1 and next(iter(query)) in ("semantic", "knn"):
        return None  # the kNN path: XERJ applies no `_source` filter here
    names = _vector_fields(query, set())
    return {"excludes": sorted(names)} if names else None


def search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_search` → ``POST /{index}/_search``; `source` is sent as `_source` (es_compat.rs:2144)."""
    body: dict[str, Any] = {"query": args.get("query") or {}}
    copy_args(args, body, "size", "from", "sort", "aggs", "track_total_hits")
    if (source := _source(args.get("source"), body["query"])) is not None:
        body["_source"] = source
    if args.get("rerank") is not None:
        body["rerank"] = args["rerank"]
    vectors = tuple(sorted(_vector_fields(body["query"], set())))
    return HttpRequest("POST", _search_path(args["index"]), body, vectors=vectors)


def semantic_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_semantic_search`: the `filter` goes inside the `semantic` clause (parser.rs:2324-2348)."""
    clause: dict[str, Any] = {"field": args["field"], "query": args["query"]}
    copy_args(args, clause, "k", "filter")
    body: dict[str, Any] = {"query": {"semantic": clause}}
    copy_args(args, body, "size")  # no `_source`: XERJ applies none on this path (see above)
    vectors = (f"{args['field']}_vector", f"{args['field']}_vector_chunks")
    return HttpRequest("POST", _search_path(args["index"]), body, vectors=vectors)


def vector_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_vector_search`: a top-level `knn` clause (es_compat.rs:5811-5827)."""
    knn: dict[str, Any] = {"field": args["field"], "query_vector": list(args["query_vector"])}
    copy_args(args, knn, "k", "num_candidates", "filter")
    body: dict[str, Any] = {"knn": knn}
    copy_args(args, body, "size")  # no `_source`: XERJ applies none on this path (see above)
    # XERJ returns each hit's whole `_source` here, the searched embedding included, whatever
    # the field's name (`embedding`, `vec`: docs/examples/vector-search-knn/knn_demo.py:98,
    # hybrid-search/hybrid_search.py:59): the reading leaves it out (`_source_view`).
    return HttpRequest("POST", _search_path(args["index"]), body, vectors=(args["field"],))


def hybrid_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_hybrid_search`: `rrf_k` becomes ``fusion: {"type": "rrf", "k": N}`` (parser.rs:2392-2397)."""
    hybrid: dict[str, Any] = {"queries": [dict(q) for q in args["queries"]]}
    if args.get("rrf_k") is not None:
        hybrid["fusion"] = {"type": args.get("fusion") or "rrf", "k": integral(args["rrf_k"])}
    elif args.get("fusion") is not None:
        hybrid["fusion"] = args["fusion"]
    body: dict[str, Any] = {"query": {"hybrid": hybrid}}
    copy_args(args, body, "size")
    # Each sub-query runs as its own search with this `_source` (index.rs:5364): the text
    # ones apply it, the semantic and kNN ones do not, and fusion keeps the hit as the first
    # list that found it carried it (index.rs:17490-17513 `fuse_rrf`, and `fuse_linear`).
    if (source := _source(None, body["query"])) is not None:
        body["_source"] = source
    if args.get("rerank") is not None:
        body["rerank"] = args["rerank"]
    vectors = tuple(sorted(_vector_fields(body["query"], set())))
    return HttpRequest("POST", _search_path(args["index"]), body, vectors=vectors)


def _total(hits: Mapping[str, Any], out: dict[str, Any]) -> None:
    # None where track_total_hits was false, and for anything but a count (a list would also
    # blow the budget)
    total = hits.get("total")
    value = total.get("value") if isinstance(total, dict) else total
    out["total"] = value if _count(value) else None
    if out["total"] is not None and isinstance(total, dict) and total.get("relation") == "gte":
        out["total_relation"] = "gte"  # at least this many; the engine stopped counting


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# What the model reads of XERJ's `_rerank` block (rerank_stage.rs `apply` at 11b0cd0; the fields
# as docs/RERANK.md there describes them): why it was not applied, what was judged and what was
# not (skipped as blank, pruned, dropped, calls that failed), the `rerank.fields` that no hit gave
# text for, and what judged it. `query` (the model's own) and `took_ms` are left out.
_RERANK_KEYS = (
    "reason",
    "window",
    "judged",
    "unjudged",
    "skipped_no_text",
    "pruned_below_min_score",
    "dropped_unjudged",
    "partial_failures",
    "fields_without_text",
    "provider",
    "model",
    "score_kind",
    "usage",
)


def _rerank_block(data: Mapping[str, Any]) -> dict[str, Any] | None:
    block = data.get("_rerank")
    if not isinstance(block, dict):
        return None
    out: dict[str, Any] = {"applied": bool(block.get("applied"))}
    for key in _RERANK_KEYS:
        if block.get(key) is not None:
            out[key] = block[key]
    if out["applied"]:
        out["scores"] = "probability"  # every _score is the judge's probability, or null
    return out


def _failed_aggregations(slots: Any, path: str = "", depth: int = 0) -> list[str]:
    """The aggregations XERJ reports as failed inside their slot under a 200: an object whose
    only key is ``error``, e.g. ``{"error": "unsupported aggregation type 'x'"}`` (aggs.rs:2060,
    2073, 2078, 2172, 4284, 5603 at e6e8e6a). Sub-aggregations are looked for in buckets;
    `top_hits` documents are not read (a document's own ``error`` field is data)."""
    found: list[str] = []
    if not isinstance(slots, dict) or depth > 32:
        return found
    for name, slot in slots.items():
        if not isinstance(slot, dict):
            continue
        where = f"{path} > {name}" if path else str(name)
        error = slot.get("error")
        if len(slot) == 1 and isinstance(error, str):
            found.append(f"aggregation {where!r} failed: {error[:300]}")
            continue
        buckets = slot.get("buckets")
        if isinstance(buckets, dict):  # keyed buckets (`filters`, `keyed: true`)
            buckets = list(buckets.values())
        for holder in [slot, *(buckets if isinstance(buckets, list) else [])]:
            if isinstance(holder, dict):
                subs = {
                    k: v for k, v in holder.items() if k not in _NOT_AGGS and isinstance(v, dict)
                }
                found += [f for f in _failed_aggregations(subs, where, depth + 1) if f not in found]
    return found


_NOT_AGGS = frozenset({"buckets", "hits", "meta"})  # bucket lists, top_hits, the request's own meta


def _fusion(request: HttpRequest) -> dict[str, Any] | None:
    query = (request.body or {}).get("query")
    hybrid = query.get("hybrid") if isinstance(query, dict) else None
    if not isinstance(hybrid, dict):
        return None
    fusion = hybrid.get("fusion", "rrf")
    kind = fusion.get("type", "rrf") if isinstance(fusion, dict) else fusion
    out: dict[str, Any] = {"type": kind}
    if kind == "rrf":
        out["k"] = fusion.get("k", 60) if isinstance(fusion, dict) else 60
    out["queries"] = len(hybrid.get("queries") or [])
    return out


def _search_payload(
    data: Mapping[str, Any],
    request: HttpRequest,
    rerank_note: Mapping[str, Any] | None,
    view: SourceView,
) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": True}
    hits = data.get("hits") if isinstance(data.get("hits"), dict) else {}
    assert isinstance(hits, dict)
    _total(hits, out)
    raw_hits = hits.get("hits") if isinstance(hits.get("hits"), list) else []
    assert isinstance(raw_hits, list)
    out["hits"] = [hit(h, view) for h in raw_hits if isinstance(h, dict)]
    if "aggregations" in data:
        out["aggregations"] = data["aggregations"]
    rerank = dict(rerank_note) if rerank_note else _rerank_block(data)
    if rerank is None and request.reranked:
        rerank = {"applied": False, "reason": "the node returned no _rerank block"}
    out["ranked_by"] = "reranker" if rerank and rerank.get("applied") else "engine"
    if rerank is not None:
        out["rerank"] = rerank
    if (fusion := _fusion(request)) is not None:
        out["fusion"] = fusion
    warnings = []
    if failed := _failed_aggregations(data.get("aggregations")):
        # Not a silent success: the model reads which aggregation failed and XERJ's reason.
        warnings += [
            *failed[:5],
            "the other aggregations and the hits are complete; fix or "
            "remove the failed aggregation and search again to get it",
        ]
    silent = rerank.get("fields_without_text") if rerank else None
    if isinstance(silent, list) and silent:
        names = ", ".join(str(n) for n in silent[:10])
        warnings.append(
            f"rerank.fields named {names}, which no hit in the window returned text for (a typo, "
            "or a field these hits lack): those hits were judged without it"
        )
    if data.get("timed_out") is True:
        warnings.append("the search timed out on the node; hits may be incomplete")
    shards = data.get("_shards")
    if isinstance(shards, dict) and _count(shards.get("failed")) and shards["failed"] > 0:
        total = shards.get("total") if _count(shards.get("total")) else "?"
        warning = f"{shards['failed']} of {total} shards failed; hits may be incomplete"
        if reasons := shard_reasons(shards.get("failures")):
            warning += ": " + "; ".join(reasons)  # what the model needs to fix its query
        warnings.append(warning)
    if data.get("terminated_early") is True:
        warnings.append("the search terminated early")
    if warnings:
        out["warnings"] = warnings
    return out


def read_search(received: Received) -> dict[str, Any]:
    """XERJ's search envelope (es_compat.rs), each hit cut to what the model asked for."""
    reply, request = received.reply, received.request
    view = source_view(request)
    data = decode_search(reply, view)
    if not isinstance(data, dict) or unusable(reply, data) is not None:
        raise engine_error(reply, request)
    hits = data.get("hits")
    if not (isinstance(hits, dict) and isinstance(hits.get("hits"), list)):
        raise invalid(reply, "the `hits.hits` list of a search result")
    return _search_payload(data, request, received.rerank, view)


def _fewer(body: Mapping[str, Any]) -> tuple[Any, str]:
    size = body.get("size", 10)
    return size, f"e.g. {max(1, size // 4)}" if isinstance(size, int) and size > 1 else "fewer"


def _too_large_search(request: HttpRequest) -> str:
    size, fewer = _fewer(request.body or {})
    return (
        f"Ask for less: a smaller size (it was {size}; {fewer}), or only the fields you need "
        'in `source`, e.g. ["title"].'
    )


def _too_large_vectors(request: HttpRequest) -> str:
    body = request.body or {}
    size, fewer = _fewer(body)
    clause = body.get("knn") or (body.get("query") or {}).get("semantic") or {}
    # k defaults to num_candidates, then 10 (parser.rs:2261-2267 at e6e8e6a)
    k = clause.get("k") or clause.get("num_candidates") or 10
    return (
        f"Ask for fewer hits: call again with a smaller size or k (size was {size}, k {k}; "
        f"{fewer}). On this search XERJ returns every hit's whole document (its embeddings "
        "are left out of what you read), so fewer hits is the way to a smaller answer."
    )


def _too_large_hybrid(request: HttpRequest) -> str:
    size, fewer = _fewer(request.body or {})
    return f"Ask for fewer hits: call again with a smaller size (it was {size}; {fewer})."


def _fetch_hit(served: Collection[str]) -> str | None:
    """How to read a cut field whole, with a tool this dispatcher serves (or None)."""
    if "xerj_search" in served:
        return (
            "to read a cut field whole, fetch that hit alone with xerj_search "
            "(a query on its _id, source set to the field, size 1)"
        )
    if "xerj_get_document" in served:
        return "to read a cut field whole, fetch that document with xerj_get_document"
    return None


_NO_AGGS = "aggregations are not supported with hybrid queries; run them as a separate xerj_search"
_HITS_FIELDS: dict[str, Any] = {  # what `read_search` writes
    "total": {"type": ["integer", "null"], "description": "the engine's count of matches"},
    "total_relation": {"type": "string"},
    "hits": {"type": "array", "items": {"type": "object"},
             "description": "each with _index, _id, _score, _source"},
    "aggregations": {"type": "object"},
    "ranked_by": {"type": "string", "enum": ["engine", "reranker"]},
    "rerank": {"type": "object"},
    "fusion": {"type": "object"},
}  # fmt: skip
_SEARCHING: dict[str, Any] = {
    "read": read_search,
    "result_fields": _HITS_FIELDS,
    "fit": "hits",
    "path": "/{index}/_search",
    "origin": "published",
}


def _searching(caps: Mapping[str, Cap]) -> PolicyTraits:
    return PolicyTraits(index_args=("index",), namespace_args=(), caps=caps, writes=False)


SEARCH = Tool(
    name="xerj_search",
    build=search,
    title="Search an index (query DSL)",
    limits=SEARCH_LIMITS,
    paging="from",
    traits=_searching({"size": "max_size"}),
    advice=Advice(
        too_large=_too_large_search,
        refetch=_fetch_hit,
        hints={
            "_source": "the argument is called `source`",
            "aggregations": "the argument is called `aggs`",
        },
    ),
    **_SEARCHING,
)
SEMANTIC = Tool(
    name="xerj_semantic_search",
    build=semantic_search,
    title="Semantic search",
    limits=SEMANTIC_LIMITS,
    traits=_searching({"size": "max_size", "k": "max_k"}),
    advice=Advice(too_large=_too_large_vectors, refetch=_fetch_hit),
    **_SEARCHING,
)
VECTOR = Tool(
    name="xerj_vector_search",
    build=vector_search,
    title="Vector (kNN) search",
    limits=VECTOR_LIMITS,
    traits=_searching({"size": "max_size", "k": "max_k", "num_candidates": "max_num_candidates"}),
    advice=Advice(too_large=_too_large_vectors, refetch=_fetch_hit),
    **_SEARCHING,
)
HYBRID = Tool(
    name="xerj_hybrid_search",
    build=hybrid_search,
    title="Hybrid search",
    limits=HYBRID_LIMITS,
    traits=_searching({"size": "max_size"}),
    advice=Advice(
        too_large=_too_large_hybrid,
        refetch=_fetch_hit,
        hints={"aggs": _NO_AGGS, "aggregations": _NO_AGGS},
    ),
    **_SEARCHING,
)
