"""The stand-in's agent-memory endpoints: store and recall, with XERJ's rules and error shapes.

XERJ keeps a namespace in an ordinary index, ``.xerj-memory-<ns>``, and answers store and recall
by running its own `_search` on it (memory_api.rs:1-48). The stand-in does the same: a namespace
is a view over its memories (`memory_index`) searched by the stand-in's `search`, so filters,
the ``from + size`` limit and kNN behave as they do for any index. Citations are XERJ paths at
commit e6e8e6a; ``CONTRACT.md`` lists them.
"""

from __future__ import annotations

import json
import struct
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._embed import embed
from ._engine import Index, Result
from ._searcher import search
from ._wire import serde_struct

__all__ = [
    "Memory",
    "memory_forget",
    "memory_index",
    "memory_list",
    "memory_recall",
    "memory_store",
]

MEMORY_PREFIX = ".xerj-memory-"  # memory_api.rs:72
# `StoreBody` (memory_api.rs:221-247): `text` is a required String; unknown keys are ignored.
_STORE_FIELDS = {
    "text": "string",
    "metadata": "any",
    "vector": "vec_f32?",
    "id": "string?",
    "dedup": "bool?",
    "dedup_threshold": "f32?",
}
# `RecallBody` (memory_api.rs:396-427): `deny_unknown_fields`, in this order.
_RECALL_FIELDS = {
    "query": "string?",
    "vector": "vec_f32?",
    "semantic": "bool?",
    "k": "usize?",
    "filter": "any",
    "recency_weight": "f32?",
}
_NO_QUERY = (
    "recall requires exactly one of `vector` (query embedding) or `query` (text); list recent "
    "memories with GET /_memory/{namespace} instead"
)


@dataclass
class Memory:
    id: str
    text: str
    metadata: Any
    vector: list[float] | None
    embedding: list[float]
    stored_at: int


def memory_error(status: int, reason: str) -> Result:
    # The memory endpoints' own error shape, without root_cause (memory_api.rs:127-136).
    return status, {"error": {"type": "memory_error", "reason": reason}, "status": status}


def namespace_error(ns: str) -> str | None:
    """XERJ's `validate_namespace` (memory_api.rs:101-124), in its order; None when valid."""
    if not ns:
        return "namespace must not be empty"
    if len(ns.encode()) > 200:
        return "namespace too long (max 200 chars)"
    if not (ns[0].isascii() and (ns[0].islower() or ns[0].isdigit())):
        return "namespace must start with a lowercase letter or digit"
    for ch in ns:
        if not (ch.isascii() and (ch.islower() or ch.isdigit() or ch in "_-.")):
            return f"namespace contains illegal character '{ch}' (allowed: a-z 0-9 _ - .)"
    if ".." in ns:
        return "namespace must not contain '..'"
    return None


def f32(x: float) -> float:
    """`x` as an f32, printed the way serde_json prints one (the shortest round-trip form)."""
    exact = struct.unpack("f", struct.pack("f", x))[0]
    for digits in range(1, 10):
        short = float(f"{exact:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == exact:
            return short
    return float(exact)


def memory_index(ns: str, store: Mapping[str, Memory]) -> Index:
    """The backing index of a namespace as XERJ lays it out (memory_api.rs:159-214, 348-356)."""
    index = Index(MEMORY_PREFIX + ns, semantic_fields=("text",))
    for m in store.values():
        doc: dict[str, Any] = {"text": m.text, "stored_at": m.stored_at}
        if m.metadata is not None:
            doc["metadata"] = m.metadata
        if m.vector is not None:
            doc["vector"] = m.vector
        doc["text_vector"] = m.embedding  # the `semantic_text` companion (index.rs:5077)
        index.docs[m.id] = doc
    return index


def _search(ns: str, store: Mapping[str, Memory], body: dict[str, Any]) -> Result:
    index = memory_index(ns, store)
    return search({index.name: index}, index.name, body, rerank_mode="ok")


def memory_store(memories: dict[str, dict[str, Memory]], ns: str, body: Any, raw: bytes) -> Result:
    """``POST /_memory/{ns}`` (memory_api.rs:299-382). A body serde refuses raises `BodyError`:
    axum runs the extractor before the handler, so that refusal comes before the namespace
    check (memory_api.rs:299-306, 430-437; extract.rs:80-103)."""
    if body is not None:
        serde_struct("StoreBody", body, raw, fields=_STORE_FIELDS, required=("text",))
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    if body is None:
        return memory_error(400, "missing request body")
    text, vector = body["text"], body.get("vector")
    if not text and vector is None:
        return memory_error(400, "a memory must have non-empty `text` or a `vector`")
    if ns not in memories and vector == []:
        # Only when the backing index is created (memory_api.rs:180-187).
        return memory_error(400, "vector must not be empty")
    store = memories.setdefault(ns, {})
    if body.get("dedup") is True:
        threshold = f32(body.get("dedup_threshold", 0.95))  # memory_api.rs:86-90
        found = _nearest(ns, store, text, vector)
        if found is not None and found[1] >= threshold:
            return 200, {
                "id": found[0],
                "namespace": ns,
                "created": False,
                "deduplicated": True,
                "score": found[1],
            }
    stored_at = int(time.time() * 1000)
    # Two stores in one millisecond tie on XERJ; the stand-in keeps them apart so that
    # recency order is testable.
    stored_at = max([stored_at] + [m.stored_at + 1 for m in store.values()])
    memory_id = body["id"] if body.get("id") is not None else str(uuid.uuid4())
    store[memory_id] = Memory(  # `index_doc` overwrites an existing id (memory_api.rs:347-372)
        id=memory_id,
        text=text,
        metadata=body.get("metadata"),
        vector=[float(v) for v in vector] if vector is not None else None,
        embedding=embed(text),
        stored_at=stored_at,
    )
    return 201, {"id": memory_id, "namespace": ns, "created": True}


def _nearest(
    ns: str, store: Mapping[str, Memory], text: str, vector: list[float] | None
) -> tuple[str, float] | None:
    """The dedup probe (memory_api.rs:251-296): kNN on `vector`, else `semantic` on `text`."""
    probe: dict[str, Any] = {"size": 1}
    if vector:
        probe["knn"] = {"field": "vector", "query_vector": vector, "k": 1}
    elif text:
        probe["query"] = {"semantic": {"field": "text", "query": text, "k": 1}}
    else:
        return None
    status, answer = _search(ns, store, probe)
    hits = answer.get("hits", {}).get("hits", []) if status == 200 else []
    if not hits or not isinstance(hits[0].get("_score"), (int, float)):
        return None  # any probe failure is "no duplicate"
    return str(hits[0]["_id"]), f32(hits[0]["_score"])


def memory_recall(
    memories: Mapping[str, Mapping[str, Memory]], ns: str, body: Any, raw: bytes
) -> Result:
    """``POST /_memory/{ns}/_recall`` (memory_api.rs:429-573); a body serde refuses raises
    `BodyError`, as in `memory_store`."""
    if body is not None:
        serde_struct("RecallBody", body, raw, fields=_RECALL_FIELDS, deny_unknown=True)
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    if body is None:
        return memory_error(
            400,
            "recall requires a JSON body with exactly one of `vector` (query embedding) or "
            "`query` (text); list recent memories with GET /_memory/{namespace} instead",
        )
    query, vector = body.get("query"), body.get("vector")
    if query is not None and vector is not None:
        return memory_error(400, "supply exactly one of `vector` or `query`, not both")
    if query is None and vector is None:
        return memory_error(400, _NO_QUERY)
    if vector is None and query == "":
        return memory_error(400, "`query` must be a non-empty string")
    if vector == []:
        return memory_error(400, "`vector` must be a non-empty array of numbers")
    k = max(1, body["k"] if body.get("k") is not None else 10)  # memory_api.rs:481
    weight = body.get("recency_weight")
    weight = None if weight is None else min(1.0, max(0.0, float(weight)))
    # Recency needs a wider pool than k (memory_api.rs:483-489).
    fetch = k if weight is None else max(k * 4, 50)
    if ns not in memories:
        return 200, {"hits": [], "namespace": ns}  # memory_api.rs:493-495
    status, answer = _search(ns, memories[ns], _recall_body(body, fetch))
    if status >= 300:
        inner = json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
        return memory_error(status, f"recall failed: {inner}")  # memory_api.rs:565-568
    hits = answer["hits"]["hits"]
    if weight is not None:
        hits = _blend_recency(hits, weight, k)
    return 200, {"hits": [_memory_hit(h) for h in hits], "namespace": ns}


def _recall_body(body: Mapping[str, Any], fetch: int) -> dict[str, Any]:
    """The search XERJ runs for a recall (memory_api.rs:497-556)."""
    search_body: dict[str, Any] = {"size": fetch}
    filt = body.get("filter")
    if body.get("vector") is not None:
        knn = {"field": "vector", "query_vector": body["vector"], "k": fetch}
        if filt is not None:
            search_body["query"] = {"bool": {"must": [{"knn": knn}], "filter": [filt]}}
        else:
            search_body["knn"] = knn
    elif body.get("semantic") is True:
        semantic: dict[str, Any] = {"field": "text", "query": body["query"], "k": fetch}
        if filt is not None:
            semantic["filter"] = filt
        search_body["query"] = {"semantic": semantic}
    else:
        inner = {"match": {"text": body["query"]}}
        search_body["query"] = (
            inner if filt is None else {"bool": {"must": [inner], "filter": [filt]}}
        )
    return search_body


def _memory_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    # `map_hit` (memory_api.rs:575-587).
    source = hit.get("_source") or {}
    return {
        "id": hit.get("_id"),
        "text": source.get("text"),
        "metadata": source.get("metadata"),
        "score": hit.get("_score"),
    }


def _blend_recency(hits: list[Any], weight: float, k: int) -> list[Any]:
    """`blend_recency` (memory_api.rs:606-652): order by a blend, keep each hit's own score.

    blended = (1 - w) * norm(score) + w * norm(stored_at), both min-max normalised over the
    candidates; a dimension whose values are all equal contributes 0. Ties keep the relevance
    order (a stable sort, descending).
    """
    if not hits:
        return []
    w = f32(weight)
    scores = [h.get("_score") if isinstance(h.get("_score"), (int, float)) else 0.0 for h in hits]
    times = [float((h.get("_source") or {}).get("stored_at") or 0.0) for h in hits]

    def norm(v: float, lo: float, hi: float) -> float:
        return (v - lo) / (hi - lo) if hi > lo else 0.0

    smin, smax, tmin, tmax = min(scores), max(scores), min(times), max(times)
    blended = [
        ((1.0 - w) * norm(s, smin, smax) + w * norm(t, tmin, tmax), h)
        for h, s, t in zip(hits, scores, times, strict=True)
    ]
    return [h for _, h in sorted(blended, key=lambda p: -p[0])][:k]


def memory_list(
    memories: Mapping[str, Mapping[str, Memory]], ns: str, query: Mapping[str, str]
) -> Result:
    """``GET /_memory/{ns}?from&size``: recent first, paged (memory_api.rs:681-755)."""
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    try:
        start = int(query.get("from", query.get("after", "0")))
        size = min(max(int(query.get("size", "100")), 1), 1000)
    except ValueError:
        return 400, {}  # axum's `Query` rejection; not modelled further
    if ns not in memories:
        page = {"from": start, "size": size, "next": None}
        return 200, {"namespace": ns, "exists": False, "count": 0, "entries": [], **page}
    body = {
        "query": {"match_all": {}},
        "from": start,
        "size": size,
        "sort": [{"stored_at": {"order": "desc", "unmapped_type": "long"}}],
        "track_total_hits": True,
    }
    status, answer = _search(ns, memories[ns], body)
    if status >= 300:
        inner = json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
        return memory_error(status, f"list failed: {inner}")
    count = answer["hits"]["total"]["value"]
    entries = [_memory_hit(h) for h in answer["hits"]["hits"]]
    more = start + len(entries) < count
    return 200, {
        "namespace": ns,
        "exists": True,
        "count": count,
        "entries": entries,
        "from": start,
        "size": size,
        "next": {"from": start + len(entries), "size": size} if more else None,
    }


def memory_forget(memories: dict[str, dict[str, Memory]], ns: str, memory_id: str | None) -> Result:
    """``DELETE /_memory/{ns}[/{id}]`` (memory_api.rs:762-829)."""
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    if memory_id is None:
        dropped = memories.pop(ns, None) is not None
        return (200 if dropped else 404), {"namespace": ns, "dropped": dropped}
    if ns not in memories:
        return memory_error(404, f"memory namespace '{ns}' does not exist")
    forgotten = memories[ns].pop(memory_id, None) is not None
    return (200 if forgotten else 404), {"id": memory_id, "namespace": ns, "forgotten": forgotten}
