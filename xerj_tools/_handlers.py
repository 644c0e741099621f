"""Handlers: pure functions from a tool's validated arguments to the exact XERJ HTTP request."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import quote, unquote

from ._exceptions import ArgumentsError
from ._validation import Problem

__all__ = ["HANDLERS", "Handler", "HttpRequest", "RequestKind", "VECTOR_SUFFIXES", "dot_segment"]

RequestKind = Literal["search", "memory_store", "memory_recall", "listing", "other"]

# XERJ keeps each semantic_text field's embedding inside `_source` as `<field>_vector`, and a
# document longer than one chunk also its passage embeddings as `<field>_vector_chunks`
# (index.rs:5077, 5277-5289 at e6e8e6a). Its `_source` filter cannot drop them by pattern: on
# the general path a `*` is a trailing wildcard only (index.rs:15826-15832 `field_matches`,
# used by `filter_object` when no pattern has a dot), so `*_vector` matches no field; and kNN
# and `semantic` searches return before any `_source` filter runs (index.rs:6690-6726,
# 6786-6787 return from `search_inner` ahead of `apply_source_filter` at 9930). So requests name
# exact fields, where a search names them (see `_vector_fields`), and the embeddings that still
# arrive are dropped while the answer is decoded (`_hits.decode_search`).
VECTOR_SUFFIXES = ("_vector", "_vector_chunks")


@dataclass(frozen=True)
class HttpRequest:
    """One request to XERJ: method, percent-encoded path, JSON body and what it is for.

    `idempotent` says whether sending it twice is harmless; retries after the request may have
    reached the server (timeouts, dropped connections) happen only when it is.
    `notes` are sentences the model should read with the result (an argument that was dropped).
    """

    method: str
    path: str
    body: Mapping[str, Any] | None = None
    kind: RequestKind = "other"
    idempotent: bool = True
    notes: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def reranked(self) -> bool:
        """True when the body asks XERJ for its second-stage reranker."""
        return self.body is not None and self.body.get("rerank") is not None

    def without_rerank(self) -> HttpRequest:
        body = {k: v for k, v in (self.body or {}).items() if k != "rerank"}
        return replace(self, body=body)


Handler = Callable[[Mapping[str, Any]], HttpRequest]
"""Turns validated arguments into an `HttpRequest`. Pure: no I/O, no clock."""


_DOT_SEGMENTS = frozenset({".", ".."})


def dot_segment(path: str) -> str | None:
    """The first segment of `path` that is ``.`` or ``..`` (also percent-encoded), or None.

    httpx resolves such segments before sending (RFC 3986 dot-segment removal: ``/a/../b`` is
    sent as ``/b``), and a server may decode ``%2e%2e`` into one: either way the request would
    reach another endpoint than the one built. No XERJ name is ``.`` or ``..``.
    """
    for segment in path.split("/"):
        if unquote(segment) in _DOT_SEGMENTS:
            return segment
    return None


def _segment(value: str, *, keep: str = "", path: str = "$") -> str:
    # Everything but unreserved characters is percent-encoded, so no value can leave its path
    # segment; an index list keeps its commas and wildcards. `.` and `..` are unreserved, so
    # they are refused here rather than let httpx resolve them away.
    if value in _DOT_SEGMENTS:
        raise ArgumentsError(
            f"{value!r} cannot be a path segment",
            problems=(
                Problem(path, f"{value!r} is not a name: it would be read as a relative path"),
            ),
        )
    return quote(value, safe=keep)


def _search_path(index: str) -> str:
    return f"/{_segment(index, keep=',*', path='$.index')}/_search"


def _integral(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; XERJ's serde `usize` fields refuse it.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _copy(args: Mapping[str, Any], body: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if args.get(key) is not None:
            body[key] = _integral(args[key])


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
    _copy(args, body, "size", "from", "sort", "aggs", "track_total_hits")
    if (source := _source(args.get("source"), body["query"])) is not None:
        body["_source"] = source
    if args.get("rerank") is not None:
        body["rerank"] = args["rerank"]
    return HttpRequest("POST", _search_path(args["index"]), body, kind="search")


def semantic_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_semantic_search`: the `filter` goes inside the `semantic` clause (parser.rs:2324-2348)."""
    clause: dict[str, Any] = {"field": args["field"], "query": args["query"]}
    _copy(args, clause, "k", "filter")
    body: dict[str, Any] = {"query": {"semantic": clause}}
    _copy(args, body, "size")  # no `_source`: XERJ applies none on this path (see above)
    return HttpRequest("POST", _search_path(args["index"]), body, kind="search")


def vector_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_vector_search`: a top-level `knn` clause (es_compat.rs:5811-5827)."""
    knn: dict[str, Any] = {"field": args["field"], "query_vector": list(args["query_vector"])}
    _copy(args, knn, "k", "num_candidates", "filter")
    body: dict[str, Any] = {"knn": knn}
    _copy(args, body, "size")  # no `_source`: XERJ applies none on this path (see above)
    return HttpRequest("POST", _search_path(args["index"]), body, kind="search")


def hybrid_search(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_hybrid_search`: `rrf_k` becomes ``fusion: {"type": "rrf", "k": N}`` (parser.rs:2392-2397)."""
    hybrid: dict[str, Any] = {"queries": [dict(q) for q in args["queries"]]}
    if args.get("rrf_k") is not None:
        hybrid["fusion"] = {"type": args.get("fusion") or "rrf", "k": _integral(args["rrf_k"])}
    elif args.get("fusion") is not None:
        hybrid["fusion"] = args["fusion"]
    body: dict[str, Any] = {"query": {"hybrid": hybrid}}
    _copy(args, body, "size")
    # Each sub-query runs as its own search with this `_source` (index.rs:5364): the text
    # ones apply it, the semantic and kNN ones do not, and fusion keeps the hit as the first
    # list that found it carried it (index.rs:17490-17513 `fuse_rrf`, and `fuse_linear`).
    if (source := _source(None, body["query"])) is not None:
        body["_source"] = source
    if args.get("rerank") is not None:
        body["rerank"] = args["rerank"]
    return HttpRequest("POST", _search_path(args["index"]), body, kind="search")


def new_memory_id() -> str:
    return str(uuid.uuid4())


def memory_store(
    args: Mapping[str, Any], *, new_id: Callable[[], str] = new_memory_id
) -> HttpRequest:
    """`xerj_memory_store` → ``POST /_memory/{namespace}`` (memory_api.rs:299-382).

    The memory id is chosen here, before the first attempt, when the model gave none: XERJ
    overwrites an existing id, so a retried store can never create a second memory.
    """
    body: dict[str, Any] = {"text": args.get("text", ""), "id": args.get("id") or new_id()}
    _copy(args, body, "metadata", "vector", "dedup", "dedup_threshold")
    path = f"/_memory/{_segment(args['namespace'], path='$.namespace')}"
    return HttpRequest("POST", path, body, kind="memory_store")


def memory_recall(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_memory_recall` → ``POST /_memory/{namespace}/_recall`` (memory_api.rs:429-573).

    The description says `vector` takes precedence over `query`/`semantic`; the engine answers
    400 when both are sent. So a vector is sent alone, and the model is told the query was unused.
    """
    body: dict[str, Any] = {}
    notes: tuple[str, ...] = ()
    if args.get("vector"):
        body["vector"] = list(args["vector"])
        if args.get("query") or args.get("semantic"):
            notes = ("vector given, so query/semantic were not used (vector takes precedence)",)
    else:
        _copy(args, body, "query", "semantic")
    _copy(args, body, "k", "filter", "recency_weight")
    path = f"/_memory/{_segment(args['namespace'], path='$.namespace')}/_recall"
    return HttpRequest("POST", path, body, kind="memory_recall", notes=notes)


HANDLERS: dict[str, Handler] = {
    "xerj_search": search,
    "xerj_semantic_search": semantic_search,
    "xerj_vector_search": vector_search,
    "xerj_hybrid_search": hybrid_search,
    "xerj_memory_store": memory_store,
    "xerj_memory_recall": memory_recall,
}
