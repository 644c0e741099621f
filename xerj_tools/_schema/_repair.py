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
from collections.abc import Callable, Mapping
from typing import Any

from .._bounds import TooDeep, loads
from .._problems import json_path
from ._fastcheck import per_schema

__all__ = ["Repairer", "Repairs", "repair_arguments", "repairer"]

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


# `_compile(schema)` builds, once per schema, the walk that repairs a value under it: what each
# (sub)schema admits is read when it is compiled, not on every value. A walk returns the very
# value it was given when it repaired nothing inside it, and a new one (never a changed one) when
# it did, so that a call with nothing to repair costs a look at each argument and no copy.
class Repairs(list[str]):
    """The repairs of one call, and whether one made a value that was not in the arguments (a
    number read from a string, a value decoded from JSON text, an array around `queries`),
    which may break the structural limits (`_bounds`) the arguments were within."""

    new_values = False  # (set on the instance by the first repair that makes a value)


_Coerce = Callable[[Any, tuple[Any, ...], Repairs], Any]
# A walk, and the exact types of value it leaves alone without a look (an integer under a
# `{"type": "integer"}`, anything under a schema that admits no repair): its caller skips it.
_Walk = tuple[_Coerce, frozenset[type]]
_JSON_TYPES: frozenset[type] = frozenset({dict, list, str, int, float, bool, type(None)})


def _unchanged(value: Any, path: tuple[Any, ...], repairs: Repairs) -> Any:
    return value  # a schema that admits no repair below it


def _compile(schema: Any, seen: dict[int, _Walk]) -> _Walk:
    """The repairing walk of `schema`. `seen`: the walks compiled so far in this schema, by the
    id of their subschema (a subschema used twice is compiled once; one that holds itself is
    reached through a cell filled when it is done)."""
    known = seen.get(id(schema))
    if known is not None:
        return known
    cell: list[_Coerce] = []
    seen[id(schema)] = (lambda value, path, repairs: cell[0](value, path, repairs)), frozenset()
    walk = _compile_new(schema, seen)
    cell.append(walk[0])
    seen[id(schema)] = walk
    return walk


def _compile_new(schema: Any, seen: dict[int, _Walk]) -> _Walk:
    types = _types(schema)
    to_string = types == ["string"]  # a document id of digits sent as a number
    from_string = bool(types) and "string" not in types
    numeric = from_string and ("integer" in types or "number" in types)
    number = "number" in types
    structured = from_string and ("object" in types or "array" in types)
    wanted = tuple({"object": dict, "array": list}[t] for t in types if t in ("object", "array"))
    mapping = isinstance(schema, Mapping)
    properties = schema.get("properties") if mapping else None
    # Each property's walk, and whether a null for it means "not given" (see `_not_null`).
    children: dict[Any, tuple[_Coerce, frozenset[type], bool]] | None = None
    if isinstance(properties, Mapping):
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        children = {
            key: (*_compile(sub, seen), key not in required and _not_null(sub))
            for key, sub in properties.items()
        }
    items = schema.get("items") if mapping else None
    item_walk = _compile(items, seen)[0] if isinstance(items, Mapping) else None
    looked_at: set[type] = {int} if to_string else {str} if from_string else set()
    if children is not None:
        looked_at.add(dict)
    if item_walk is not None:
        looked_at.add(list)
    if not looked_at:
        return _unchanged, _JSON_TYPES

    def walk(value: Any, path: tuple[Any, ...], repairs: Repairs) -> Any:
        if to_string:
            if type(value) is int:
                repairs.append(f"{json_path(path)}: {value} → {json.dumps(str(value))}")
                return str(value)
        elif from_string and isinstance(value, str):
            if numeric and (_INTEGER.match(value) or (number and _NUMBER.match(value))):
                parsed: int | float = int(value) if _INTEGER.match(value) else float(value)
                repairs.append(f"{json_path(path)}: {_show(value)} → {parsed}")
                repairs.new_values = True
                return parsed
            if not structured:
                return value
            try:
                decoded = loads(value)
            except TooDeep as exc:  # the one reading is refused: say why, not "got string"
                raise TooDeep(exc.limit, json_path(path)) from None
            except ValueError:
                return value
            if not isinstance(decoded, wanted):
                return value
            kind = "object" if isinstance(decoded, dict) else "array"
            repairs.append(f"{json_path(path)}: JSON string → {kind}")
            repairs.new_values = True
            value = decoded
        if children is not None and isinstance(value, dict):
            return _object(value, children, path, repairs)
        if item_walk is not None and isinstance(value, list):
            out = [item_walk(item, (*path, i), repairs) for i, item in enumerate(value)]
            return out if any(a is not b for a, b in zip(out, value, strict=True)) else value
        return value

    return walk, _JSON_TYPES - looked_at


def _object(
    value: dict[Any, Any],
    children: dict[Any, tuple[_Coerce, frozenset[type], bool]],
    path: tuple[Any, ...],
    repairs: Repairs,
) -> dict[Any, Any]:
    out = None  # made at the first repair below: until then, `value` stands
    for i, (key, item) in enumerate(value.items()):
        child = children.get(key)
        if child is None:
            new = item
        elif item is None and child[2]:
            # MCP Inspector, strict-mode normalisation and several frameworks send null for an
            # argument they mean to leave out; XERJ's own MCP server skips it (xerj-mcp
            # main.rs:429-435 `copy_opt`). A null for a required one stays an error.
            repairs.append(f"{json_path((*path, key))}: null → omitted")
            if out is None:
                out = dict(list(value.items())[:i])
            continue
        elif type(item) in child[1]:
            new = item
        else:
            new = child[0](item, (*path, key), repairs)
        if out is not None:
            out[key] = new
        elif new is not item:
            out = dict(list(value.items())[:i])
            out[key] = new
    return value if out is None else out


def _unnest_query(args: dict[str, Any], properties: Mapping[str, Any], repairs: Repairs) -> None:
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


def _wrap_queries(args: dict[str, Any], properties: Mapping[str, Any], repairs: Repairs) -> None:
    queries = args.get("queries")
    if "array" not in _types(properties.get("queries")) or not isinstance(queries, dict):
        return
    if "query" in queries:
        args["queries"] = [queries]
        repairs.append("$.queries: one sub-query object → array of one")
    elif len(queries) == 1:
        args["queries"] = [{"query": queries}]
        repairs.append('$.queries: one query clause → [{"query": clause}]')
    else:
        return
    repairs.new_values = True  # one level deeper


class Repairer:
    """The repairs of one schema, compiled once (`repairer` keeps them per schema)."""

    __slots__ = ("_properties", "_unnest", "_walk", "_wrap")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        properties = schema.get("properties")
        self._properties: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        self._walk = _compile(schema, {})[0]
        self._unnest = "query" in self._properties and "object" in _types(self._properties["query"])
        self._wrap = "array" in _types(self._properties.get("queries"))

    def repair(
        self, arguments: Mapping[str, Any], *, typed: bool = False
    ) -> tuple[dict[str, Any], Repairs]:
        """`(repaired, repairs)`; ``repairs.new_values`` says whether a repair made a value the
        arguments did not hold (arguments within the structural limits may no longer be).

        `typed`: the schema accepts `arguments` as they are (a `FastCheck` of it said so). Each
        repair of the walk mends a value that breaks the `type` of the subschema jsonschema
        applies at its place (an int for a string, a string for a number, an object or an
        array, a null for a type without null), so the walk would find nothing: only moving
        `size` out of `query`, or `queries` into an array, may apply."""
        repairs = Repairs()
        args = dict(arguments) if typed else self._walk(dict(arguments), (), repairs)
        walked = len(repairs)
        if self._unnest:
            _unnest_query(args, self._properties, repairs)
        if self._wrap:
            _wrap_queries(args, self._properties, repairs)
        if len(repairs) > walked:  # what was moved or wrapped is walked (the rest was)
            args = self._walk(args, (), repairs)
        return args, repairs


repairer = per_schema(Repairer)
"""`repairer(schema)`: `schema`'s compiled repairs, built on its first call and kept."""


def repair_arguments(
    arguments: Mapping[str, Any], schema: Mapping[str, Any], *, typed: bool = False
) -> tuple[dict[str, Any], Repairs]:
    """Return repaired arguments and a description of each repair (empty when none applied);
    the `Repairs` list also says whether a repair made a new value (`Repairer.repair`, which
    says what `typed` means).

    Raises `TooDeep` (with its path) when a JSON string the schema wants decoded is nested
    deeper than `MAX_ARGUMENT_DEPTH`.
    """
    return repairer(schema).repair(arguments, typed=typed)
