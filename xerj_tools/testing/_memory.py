"""The stand-in's agent-memory endpoints: store and recall, with XERJ's rules and error shapes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._engine import (
    Memory,
    Result,
    cosine_score,
    embed,
    memory_error,
    namespace_error,
    new_memory,
    score,
    tokens,
    top,
)

_STORE_KEYS = ("text", "metadata", "vector", "id", "dedup", "dedup_threshold")
_RECALL_KEYS = ("query", "vector", "semantic", "k", "filter", "recency_weight")


def memory_store(memories: dict[str, dict[str, Memory]], ns: str, body: Any) -> Result:
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    if not isinstance(body, Mapping):
        return memory_error(400, "missing request body")
    if "text" not in body:
        return memory_error(400, "malformed memory body: missing field `text`")
    vector = body.get("vector")
    if isinstance(vector, list) and not vector:
        return memory_error(400, "vector must not be empty")
    if not body.get("text") and not vector:
        return memory_error(400, "a memory must have non-empty `text` or a `vector`")
    store = memories.setdefault(ns, {})
    memory = new_memory(body)
    if body.get("dedup") and store:
        threshold = float(body.get("dedup_threshold", 0.95))
        best = max(
            ((cosine_score(memory.embedding, m.embedding) or 0.0, m) for m in store.values()),
            key=lambda p: p[0],
        )
        if best[0] >= threshold:
            return 200, {
                "id": best[1].id,
                "namespace": ns,
                "created": False,
                "deduplicated": True,
                "score": round(best[0], 4),
            }
    store[memory.id] = memory  # an existing id is overwritten (contract §8)
    return 201, {"id": memory.id, "namespace": ns, "created": True}


def memory_recall(memories: Mapping[str, Mapping[str, Memory]], ns: str, body: Any) -> Result:
    if (problem := namespace_error(ns)) is not None:
        return memory_error(400, problem)
    if not isinstance(body, Mapping):
        return memory_error(
            400,
            "recall requires a JSON body with exactly one of `vector` (query embedding) "
            "or `query` (text); list recent memories with GET /_memory/{namespace} instead",
        )
    for key in body:
        if key not in _RECALL_KEYS:
            return memory_error(
                400, f"unknown field `{key}`, expected one of {', '.join(_RECALL_KEYS)}"
            )
    query, vector = body.get("query"), body.get("vector")
    if query is not None and vector is not None:
        return memory_error(400, "supply exactly one of `vector` or `query`, not both")
    if query is None and vector is None:
        return memory_error(400, "recall requires exactly one of `vector` or `query`")
    if vector is not None and (not isinstance(vector, list) or not vector):
        return memory_error(400, "`vector` must be a non-empty array of numbers")
    if query is not None and (not isinstance(query, str) or not query):
        return memory_error(400, "`query` must be a non-empty string")
    k = max(1, int(body.get("k", 10)))
    store = memories.get(ns, {})
    filt = body.get("filter")
    candidates = [
        m
        for m in store.values()
        if filt is None or score(filt, {"metadata": m.metadata or {}, "text": m.text}) is not None
    ]
    scored: list[tuple[float, Memory]] = []
    for m in candidates:
        if vector is not None:
            s = cosine_score([float(x) for x in vector], m.vector) if m.vector is not None else None
        elif body.get("semantic"):
            s = cosine_score(embed(str(query)), m.embedding)
        else:
            s = float(len(set(tokens(query)) & set(tokens(m.text)))) or None
        if s is not None:
            scored.append((s, m))
    hits = [
        {"id": m.id, "text": m.text, "metadata": m.metadata, "score": s} for s, m in top(scored, k)
    ]
    return 200, {"hits": hits, "namespace": ns}
