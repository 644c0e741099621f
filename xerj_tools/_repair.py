"""Audited repair of argument mistakes that have exactly one reading under the schema.

Models make the same few mistakes: ``"10"`` for 10, 42 for ``"42"`` (an integer where only a
string fits, a numeric document id), an object sent as a JSON string, `size` or `sort` nested
inside `query`, one sub-query where `queries` wants an array, ``null`` for an optional argument
they mean to leave out. When the schema
leaves exactly one reading, the call is repaired and every repair is recorded, so the model sees
what it did and can learn from it. Nothing else is guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._bounds import TooDeep, loads
from ._problems import json_path

__all__ = ["repair_arguments"]

_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
# Keys a model puts inside `query` that are arguments of their own (and what they are called).
_NESTED = {
    "size": "size",
    "from": "from",
    "sort": "sort",
    "_source": "source",
    "source": "source",
    "aggs": "aggs",
}


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    return [t for t in declared if isinstance(t, str)] if isinstance(declared, list) else []


def _not_null(schema: Any) -> bool:
    """Whether `schema` declares types and null is none of them (nor an `enum` value): then a null
    has exactly one reading, "not given". A schema without a `type` may accept null; it is left."""
    types = _types(schema)
    enum = schema.get("enum") if isinstance(schema, Mapping) else None
    return bool(types) and "null" not in types and not (isinstance(enum, list) and None in enum)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _coerce(value: Any, schema: Any, path: list[str | int], repairs: list[str]) -> Any:
    types = _types(schema)
    if type(value) is int and types == ["string"]:
        # A document id of digits sent as a number: its decimal string is the one reading.
        repairs.append(f"{json_path(path)}: {value} → {json.dumps(str(value))}")
        return str(value)
    if isinstance(value, str) and types and "string" not in types:
        if ("integer" in types or "number" in types) and (
            _INTEGER.match(value) or ("number" in types and _NUMBER.match(value))
        ):
            number: int | float = int(value) if _INTEGER.match(value) else float(value)
            repairs.append(f"{json_path(path)}: {_show(value)} → {number}")
            return number
        if "object" in types or "array" in types:
            try:
                decoded = loads(value)
            except TooDeep as exc:  # the one reading is refused: say why, not "got string"
                raise TooDeep(exc.limit, json_path(path)) from None
            except ValueError:
                return value
            wanted = {"object": dict, "array": list}
            if any(isinstance(decoded, wanted[t]) for t in types if t in wanted):
                kind = "object" if isinstance(decoded, dict) else "array"
                repairs.append(f"{json_path(path)}: JSON string → {kind}")
                value = decoded
    if isinstance(value, dict) and isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            required = schema.get("required")
            required = required if isinstance(required, list) else []
            out = {}
            for k, v in value.items():
                if v is None and k in properties and k not in required and _not_null(properties[k]):
                    # MCP Inspector, strict-mode normalisation and several frameworks send null
                    # for an argument they mean to leave out; XERJ's own MCP server skips it
                    # (xerj-mcp main.rs:429-435 `copy_opt`). A null for a required one stays an error.
                    repairs.append(f"{json_path([*path, k])}: null → omitted")
                    continue
                out[k] = _coerce(v, properties[k], [*path, k], repairs) if k in properties else v
            return out
    if (
        isinstance(value, list)
        and isinstance(schema, Mapping)
        and isinstance(schema.get("items"), Mapping)
    ):
        return [_coerce(v, schema["items"], [*path, i], repairs) for i, v in enumerate(value)]
    return value


def _unnest_query(args: dict[str, Any], properties: Mapping[str, Any], repairs: list[str]) -> None:
    query = args.get("query")
    if not isinstance(query, dict) or len(query) < 2:
        return
    movable = [
        k for k in query if k in _NESTED and _NESTED[k] in properties and _NESTED[k] not in args
    ]
    if not movable or len(query) - len(movable) < 1:
        return  # nothing to move, or nothing would be left of the query: no single reading
    if len({_NESTED[k] for k in movable}) < len(movable):
        return  # both `_source` and `source` inside the query: two readings
    rest = dict(query)
    for key in movable:
        target = _NESTED[key]
        args[target] = rest.pop(key)
        repairs.append(f"$.query.{key} → $.{target}")
    args["query"] = rest


def _wrap_queries(args: dict[str, Any], properties: Mapping[str, Any], repairs: list[str]) -> None:
    queries = args.get("queries")
    if "array" not in _types(properties.get("queries")) or not isinstance(queries, dict):
        return
    if "query" in queries:
        args["queries"] = [queries]
        repairs.append("$.queries: one sub-query object → array of one")
    elif len(queries) == 1:
        args["queries"] = [{"query": queries}]
        repairs.append('$.queries: one query clause → [{"query": clause}]')


def repair_arguments(
    arguments: Mapping[str, Any], schema: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Return repaired arguments and a description of each repair (empty when none applied).

    Raises `TooDeep` (with its path) when a JSON string the schema wants decoded is nested
    deeper than `MAX_ARGUMENT_DEPTH`.
    """
    repairs: list[str] = []
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    args = _coerce(dict(arguments), schema, [], repairs)
    if "query" in properties and "object" in _types(properties["query"]):
        _unnest_query(args, properties, repairs)
    _wrap_queries(args, properties, repairs)
    if repairs:
        args = _coerce(args, schema, [], repairs)
    return args, repairs
