"""The memory tools' own limit kinds: text or a vector to store or recall by, and the recency
re-rank's bound on `k`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._problems import Problem
from ._limits import _TEXT, MAX_RESULT_WINDOW, Limit, _blank, _int_value

__all__ = ["MAX_RECENCY_K", "recall_by", "recency_k", "text_unless_vector"]

# Recall with `recency_weight` fetches max(4k, 50) candidates (memory_api.rs:486-489) in one
# search whose from + size must stay within 10000 (memory_api.rs:498-501; parser.rs:154-158).
MAX_RECENCY_K = MAX_RESULT_WINDOW // 4


def _has_vector(args: Mapping[str, Any]) -> bool:
    vector = args.get("vector")
    return isinstance(vector, list) and len(vector) > 0


def text_unless_vector() -> Limit:
    """`text`, where it is text, is not blank, unless a vector is given to store."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        if _blank(args.get("text")) and not _has_vector(args):
            yield Problem("$.text", "must be non-empty unless a vector is given")

    return Limit(
        problems=problems,
        admits=lambda args: not _blank(args.get("text")),
        fragment={"properties": {"text": _TEXT}},
        given="text",
        kind="text_unless_vector()",
    )


def recency_k() -> Limit:
    """With `recency_weight`, `k` is at most `MAX_RECENCY_K`: XERJ fetches 4 k candidates."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        k = _int_value(args, "k", 10)
        if args.get("recency_weight") is not None and MAX_RECENCY_K < k <= MAX_RESULT_WINDOW:
            yield Problem(
                "$.k",
                f"must be at most {MAX_RECENCY_K} with recency_weight; got {k}. XERJ fetches "
                f"4 × k candidates to re-rank by recency, and one search may fetch at most "
                f"{MAX_RESULT_WINDOW}. Lower k, or drop recency_weight",
            )

    def admits(args: Mapping[str, Any]) -> bool:
        k = args.get("k")
        if k is None or args.get("recency_weight") is None:
            return True
        return type(k) is int and k <= MAX_RECENCY_K

    return Limit(
        problems=problems,
        admits=admits,
        fragment={
            "allOf": [
                {
                    "anyOf": [
                        {"not": {"required": ["recency_weight", "k"]}},
                        {"properties": {"k": {"maximum": MAX_RECENCY_K}}},
                    ]
                }
            ]
        },
        ints=("k",),
        given="recency_weight",
        kind="recency_k()",
    )


def recall_by() -> Limit:
    """Something to recall by: a vector, or a query that is not blank (and a query where the
    recall is semantic)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        query = args.get("query")
        has_vector = _has_vector(args)
        has_query = isinstance(query, str) and bool(query.strip())
        if args.get("semantic") is True and not has_vector and not has_query:
            yield Problem("$.query", "semantic recall needs a non-empty query")
        elif not has_vector and not has_query and "vector" not in args:
            if "query" in args:
                yield Problem("$.query", "must be a non-empty string")
            else:
                yield Problem("$", "give a query (text) or a vector to recall by")

    def admits(args: Mapping[str, Any]) -> bool:
        query = args.get("query")
        return _has_vector(args) or (isinstance(query, str) and bool(query.strip()))

    return Limit(
        problems=problems,
        admits=admits,
        fragment={
            "allOf": [
                {
                    "anyOf": [
                        {
                            "required": ["vector"],
                            "properties": {"vector": {"type": "array", "minItems": 1}},
                        },
                        {"required": ["query"], "properties": {"query": _TEXT}},
                    ]
                }
            ]
        },
        kind="recall_by()",
    )
