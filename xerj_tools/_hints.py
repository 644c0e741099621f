"""Hints that depend on the call: what the model can change, with the tool it called."""

from __future__ import annotations

import re

from ._handlers import HttpRequest

__all__ = ["block_hint", "too_large_hint"]


_BLOCKED = re.compile(r"index \[(?P<index>[^\]]*)\] is blocked for (?P<op>\S+) operations")


def block_hint(reason: str) -> str:
    # XERJ's reason: "index [<name>] is blocked for <read|write|...> operations"
    # (common error.rs:115-117).
    found = _BLOCKED.search(reason)
    what = (
        f"index {found['index']!r} is blocked for {found['op'].replace('_', ' ')} operations"
        if found
        else "the index is blocked"
    )
    return (
        f"The {what} on the node (an index block set by its operator, or a full disk); "
        "credentials are not the problem and calling again will not help soon. "
        "Use another index or namespace, or tell the user."
    )


def too_large_hint(tool: str | None, request: HttpRequest) -> str | None:
    """What the model can change, with the tool it called, to get an answer that fits."""
    body = request.body or {}
    size = body.get("size", 10)
    fewer = f"e.g. {max(1, size // 4)}" if isinstance(size, int) and size > 1 else "fewer"
    if tool in ("xerj_semantic_search", "xerj_vector_search"):
        clause = body.get("knn") or (body.get("query") or {}).get("semantic") or {}
        # k defaults to num_candidates, then 10 (parser.rs:2261-2267 at e6e8e6a)
        k = clause.get("k") or clause.get("num_candidates") or 10
        return (
            f"Ask for fewer hits: call again with a smaller size or k (size was {size}, k {k}; "
            f"{fewer}). On this search XERJ returns every hit's whole document, its embeddings "
            "included, so fewer hits is the way to a smaller answer."
        )
    if tool == "xerj_hybrid_search":
        return f"Ask for fewer hits: call again with a smaller size (it was {size}; {fewer})."
    if tool == "xerj_search":
        return (
            f"Ask for less: a smaller size (it was {size}; {fewer}), or only the fields you need "
            'in `source`, e.g. ["title"].'
        )
    if tool == "xerj_memory_recall":
        return f"Recall fewer memories: call again with a smaller k (it was {body.get('k', 10)})."
    if tool == "xerj_memory_store":
        return (
            "XERJ's answer to the store was too large to read, so it is unknown whether the "
            "memory was stored; recall it before storing it again."
        )
    return None
