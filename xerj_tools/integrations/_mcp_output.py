"""The ``outputSchema`` of each tool over MCP (2025-06-18 structured output).

Every tool result carries the envelope twice: as its one text block (what the model reads,
unchanged) and as ``structuredContent`` (the same object, for clients that read data). The
schemas describe the envelope of docs/messages.md: ``ok`` always; ``error`` on a failure; the
answer's fields per kind of tool. They name the fields a client can rely on and leave the rest
open (``additionalProperties`` is not false), so a field added later never breaks a client that
validates.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["output_schema"]

_STRINGS = {"type": "array", "items": {"type": "string"}}
_ERROR = {
    "type": "object",
    "description": "Why the call failed and what to do; present exactly when ok is false.",
    "properties": {
        "code": {"type": "string", "description": "a stable error code (docs/messages.md)"},
        "reason": {"type": "string"},
        "retryable": {"type": "boolean"},
        "hint": {"type": "string"},
        "retry_after": {"type": "number", "description": "seconds to wait (rate_limited)"},
        "problems": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["code", "reason", "retryable", "hint"],
}
_COMMON: dict[str, Any] = {
    "ok": {"type": "boolean", "description": "true: the answer follows; false: see error"},
    "error": _ERROR,
    "repairs": {**_STRINGS, "description": "argument mistakes repaired before sending"},
    "notes": _STRINGS,
    "warnings": _STRINGS,
    "truncated": {
        "type": "object",
        "description": "what the budget left out, and `next`: the arguments of the next page",
    },
}
_HITS = {"type": "array", "items": {"type": "object"}}
_SEARCH: dict[str, Any] = {
    "total": {"type": ["integer", "null"], "description": "the engine's count of matches"},
    "total_relation": {"type": "string"},
    "hits": {**_HITS, "description": "each with _index, _id, _score, _source"},
    "aggregations": {"type": "object"},
    "ranked_by": {"type": "string", "enum": ["engine", "reranker"]},
    "rerank": {"type": "object"},
    "fusion": {"type": "object"},
}
_KINDS: dict[str, dict[str, Any]] = {
    "xerj_search": _SEARCH,
    "xerj_semantic_search": _SEARCH,
    "xerj_vector_search": _SEARCH,
    "xerj_hybrid_search": _SEARCH,
    "xerj_memory_recall": {"hits": {**_HITS, "description": "each with id, text, score"}},
    "xerj_memory_store": {
        "id": {"type": "string"},
        "namespace": {"type": "string"},
        "created": {"type": "boolean"},
        "deduplicated": {"type": "boolean"},
    },
    "xerj_get_document": {
        "found": {"type": "boolean"},
        "_index": {"type": "string"},
        "_id": {"type": "string"},
        "_source": {"type": "object"},
    },
}


def output_schema(tool: str) -> dict[str, Any]:
    """The ``outputSchema`` of a tool: the envelope, with its kind's fields when known."""
    return {
        "type": "object",
        "properties": copy.deepcopy({**_COMMON, **_KINDS.get(tool, {})}),
        "required": ["ok"],
    }
