"""JSON Schema down to the subset Gemini's ``Schema`` type holds (OpenAPI 3.0's, as google-genai's
``types.Schema`` declares it), and what that loses.

The whole JSON Schema goes out as ``parametersJsonSchema`` (`GEMINI.definition`), which google-genai
accepts as it is; this subset is for what takes only ``parameters``. Every keyword the subset has
no place for is dropped and named, with its path, in the notes (``xerj-tools lint
--strict-report`` lists them as ``[gemini-subset]``). The dispatcher still validates every call
against the whole schema: what the declaration loses, the model may get wrong, and the
dispatcher's answer then says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["gemini_subset"]

# Kept as they are (camelCase, as the REST API and google-genai's aliases spell them).
_KEPT = (
    "description",
    "title",
    "format",
    "pattern",
    "default",
    "example",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
)
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
# Keywords that say nothing to the model, dropped without a note.
_SILENT = {"$schema", "$id", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}


def gemini_subset(schema: Any) -> tuple[dict[str, Any], list[str]]:
    """`schema` as Gemini's ``Schema`` (types upper-case, ``nullable`` for a null type), and a
    note per keyword or value it had no place for, each with its JSON path."""
    notes: list[str] = []
    return _convert(schema, "$", notes), notes


def _convert(schema: Any, path: str, notes: list[str]) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        if schema is not True:
            notes.append(f"{path}: a boolean schema {schema!r} has no equivalent; dropped")
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            _type(value, out, path, notes)
        elif key in _KEPT:
            out[key] = value
        elif key == "enum":
            if all(isinstance(v, str) for v in value or ()):
                out["enum"] = list(value)
            else:
                notes.append(
                    f"{path}: enum of non-string values dropped (Gemini's enum holds strings)"
                )
        elif key == "const":
            if isinstance(value, str):
                out["enum"] = [value]
            else:
                notes.append(f"{path}: const {value!r} dropped (only a string becomes an enum)")
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {k: _convert(v, f"{path}.{k}", notes) for k, v in value.items()}
        elif key == "required":
            out["required"] = list(value)
        elif key == "items" and isinstance(value, Mapping):
            out["items"] = _convert(value, f"{path}[]", notes)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out["anyOf"] = [_convert(v, f"{path}.{key}[{i}]", notes) for i, v in enumerate(value)]
            if key == "oneOf":
                notes.append(f"{path}: oneOf became anyOf (exactly-one is lost)")
        elif key == "additionalProperties":
            if value is not True:
                notes.append(
                    f"{path}: additionalProperties dropped (unknown keys are not refused by the "
                    "declaration)"
                )
        elif key not in _SILENT:
            notes.append(f"{path}: {key} dropped (not in Gemini's Schema)")
    if _is_free_object(schema):
        notes.append(
            f"{path}: an object with no declared properties; the subset has no additionalProperties "
            "to say that any key is allowed"
        )
    return out


def _is_free_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "object" in kinds and not schema.get("properties")


def _type(value: Any, out: dict[str, Any], path: str, notes: list[str]) -> None:
    kinds = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    known = [k for k in kinds if k in _TYPES]
    if len(known) != len(kinds) or not kinds:
        notes.append(f"{path}: type {value!r} is not a JSON Schema type; dropped")
    if "null" in known and len(known) > 1:
        out["nullable"] = True
        known.remove("null")
    if len(known) == 1:
        out["type"] = known[0].upper()
    elif known:
        out["anyOf"] = [{"type": k.upper()} for k in known]
