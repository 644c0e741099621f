"""The ``outputSchema`` of each tool over MCP (2025-06-18 structured output).

Every tool result carries the envelope twice: as its one text block (what the model reads,
unchanged) and as ``structuredContent`` (the same object, for clients that read data). The
schemas describe the envelope of docs/messages.md: ``ok`` always; ``error`` on a failure; the
answer's own fields, as each tool names them (`Tool.result_fields`). They name the fields a client can rely on and leave the rest
open (``additionalProperties`` is not false), so a field added later never breaks a client that
validates.

A ``type`` that lists several types (``"total": ["integer", "null"]``) is written as ``anyOf``
branches of one type each: the same JSON Schema, in the form that clients mapping schemas onto a
single-``type`` dialect accept (the MCP Inspector's ``--strict`` check warns about the list form).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...tools import Tool

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


def output_schema(tool: Tool | None) -> dict[str, Any]:
    """The ``outputSchema`` of a tool: the envelope, with the tool's own fields
    (`Tool.result_fields`) when it names them."""
    fields = tool.result_fields if tool is not None and tool.result_fields else {}
    return {
        "type": "object",
        "properties": _single_types(copy.deepcopy({**_COMMON, **fields})),
        "required": ["ok"],
    }


def _single_types(schema: Any) -> Any:
    """`schema` with each list of types made ``anyOf`` branches (in place; returned)."""
    if isinstance(schema, dict):
        for value in schema.values():
            _single_types(value)
        types = schema.get("type")
        if isinstance(types, list):
            del schema["type"]
            schema["anyOf"] = [{"type": t} for t in types]
    elif isinstance(schema, list):
        for item in schema:
            _single_types(item)
    return schema
