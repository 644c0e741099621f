"""Explaining a call that fails its schema without jsonschema: an explainer compiled per schema.

`_fastcheck` answers "valid?" for the plain subset of JSON Schema that tool definitions use
(`type`, `properties`, `required`, `items`, `enum` of strings, `additionalProperties`, and the
annotations). When it says no, jsonschema's errors (`iter_errors`), each made a `Problem` by
`_validation._schema_problem`, would cost about 25 µs for a `xerj_search` call with
one argument missing, jsonschema's import (~50 ms) on the first. For a schema of that subset,
`compile_explainer` builds, once, a function that lists the same problems directly: the same
paths, the same messages (jsonschema's own text for unexpected properties), in a microsecond
or two. jsonschema stays the reference. A schema outside the subset is explained by it, and so
is a value this module could read otherwise: a key that is not a string among the properties a
schema forbids, or an `enum` compared with a value of no JSON type (a str subclass, a tuple).
Property tests over random schemas and values, the JSON-Schema-Test-Suite's cases and every
bundled tool's schema check that both give the same set of problems (tests/schema/test_explain.py).

What jsonschema does, read in its sources (4.18, the lowest version pyproject.toml declares,
and 4.26): `type` names as its type checker reads them (draft 6 and later: an integral float is
an integer; a `numbers.Number` that is no bool is a number); `properties`, `required` and
`additionalProperties` only on a dict; `items` (one schema) on each item of a list; the
message for unexpected properties ``Additional properties are not allowed ('a', 'b' were
unexpected)``, the names sorted (`_keywords.additionalProperties`, `_utils.extras_msg`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .._problems import Problem, json_path, json_type
from ._fastcheck import EXACT_TYPES, TYPES, FastCheck, compile_check, per_schema

__all__ = ["Explainer", "compile_explainer", "explainer_of", "preview"]

# A node explains one value under one (sub)schema: the value, the JSON path where it stands
# (rendered: `json_path` of its parts), the list to add problems to.
_Node = Callable[[Any, str, list[Problem]], None]
Explainer = Callable[[Any], "list[Problem] | None"]
"""The problems of one value (empty when the schema accepts it), or None where jsonschema must
explain it."""

# The types an `enum` of strings never equals, in jsonschema's reading as in Python's.
_NEVER_A_STRING = frozenset({type(None), bool, int, float, list, dict})


class _Fallback(Exception):
    """A value this module might read otherwise than jsonschema: jsonschema explains it."""


def preview(value: Any, limit: int = 60) -> str:
    """`value` as JSON in a problem's message, cut to `limit` characters (with "…")."""
    if isinstance(value, str) and len(value) > limit * 4:
        value = value[: limit * 4]  # no need to encode all of a long string to show its start
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def explainer_of(check: Any) -> Explainer | None:
    """The explainer of a `FastCheck`'s schema (compiled on its first call, kept per schema), or
    None: `check` is no `FastCheck`, or its schema is one jsonschema explains."""
    return _explainer(check.schema) if isinstance(check, FastCheck) else None


def compile_explainer(schema: Any) -> Explainer | None:
    """A function listing the problems of a value under `schema` as jsonschema's errors read
    through `_schema_problem` would (the same set), or None when the schema is outside the
    subset `_fastcheck.compile_check` supports (or is not made of dicts)."""
    if compile_check(schema) is None:
        return None
    compiled = _compile(schema)
    if compiled is None:
        return None
    node = compiled[0]

    def explain(value: Any) -> list[Problem] | None:
        problems: list[Problem] = []
        try:
            node(value, "$", problems)
        except _Fallback:
            return None
        return problems

    return explain


_explainer = per_schema(compile_explainer)


def _nothing(value: Any, where: str, out: list[Problem]) -> None:
    return None  # `true` or `{}`: every value passes


# A compiled (sub)schema: its node, and the exact Python types of value that it passes without
# a look at the value (a schema of a `type` alone: `{"type": "string"}` passes every str); the
# caller skips the node for those. None: it passes every value.
_Compiled = tuple[_Node, "frozenset[type] | None"]
_NOTHING: _Compiled = (_nothing, None)


def _missing_part(key: Any) -> str:
    # `_schema_problem` reads the name out of jsonschema's "'name' is a required property"
    message = f"{key!r} is a required property"
    return message.split("'")[1] if "'" in message else "?"


def _step(part: Any) -> str:
    """What `json_path` adds to a path for `part` (``.name``, ``[3]``, ``["a b"]``)."""
    return json_path((part,))[1:]


_CLASSES: dict[str, type] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}  # fmt: skip


def _type_test(declared: Any) -> tuple[Callable[[Any], bool], str, frozenset[type]]:
    """The test of a `type`, the words for it in a problem, the exact types it always passes."""
    names = [declared] if isinstance(declared, str) else list(declared)
    expected = " or ".join(declared) if isinstance(declared, list) else str(declared)
    passing = frozenset(t for name in names for t in EXACT_TYPES[name])
    if len(names) == 1:
        return TYPES[names[0]], expected, passing  # compile_check vouched for every name
    # one isinstance for the types that are classes (a property's test runs on each value)
    classes = tuple(_CLASSES[name] for name in names if name in _CLASSES)
    numeric = next((TYPES[name] for name in ("number", "integer") if name in names), None)
    if numeric is None:
        return (lambda v: isinstance(v, classes)), expected, passing
    return (lambda v: isinstance(v, classes) or numeric(v)), expected, passing


def _compile(schema: Any) -> _Compiled | None:
    """The explaining node of one (sub)schema that `compile_check` accepted, or None."""
    if schema is True or (isinstance(schema, dict) and not schema):
        return _NOTHING
    if not isinstance(schema, dict):
        return None  # a Mapping of another kind: jsonschema reads it as it does
    type_test: Callable[[Any], bool] | None = None
    expected = ""
    passing: frozenset[type] | None = None
    if schema.get("type") is not None:
        type_test, expected, passing = _type_test(schema["type"])
    allowed: frozenset[str] | None = None
    shown = ""
    if "enum" in schema:
        allowed = frozenset(schema["enum"])
        shown = ", ".join(json.dumps(v) for v in schema["enum"] or ())
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return None
    # Every property's (step in the path, node, types it passes unseen); None: all.
    table: dict[Any, tuple[str, _Node, frozenset[type] | None]] = {}
    try:
        for key, sub in properties.items():
            child = _compile(sub)
            if child is None:
                return None
            table[key] = (_step(key), *child)
        missing = [(key, _step(_missing_part(key))) for key in schema.get("required", [])]
    except TypeError:  # a key `json_path` cannot write (neither str nor int): jsonschema explains
        return None
    extra = schema.get("additionalProperties", True)
    extra_node: _Node | None = None
    if extra is not True and extra is not False:
        compiled_extra = _compile(extra)
        if compiled_extra is None:
            return None
        extra_node = None if compiled_extra is _NOTHING else compiled_extra[0]
    closed = extra is False
    checks_extras = closed or extra_node is not None
    objects = bool(
        missing or checks_extras or any(entry[2] is not None for entry in table.values())
    )
    items: _Compiled = _NOTHING
    if "items" in schema:
        compiled_items = _compile(schema["items"])
        if compiled_items is None:
            return None
        items = compiled_items
    items_node, items_passing = items
    lists = items is not _NOTHING

    def node(value: Any, where: str, out: list[Problem]) -> None:
        if type_test is not None and not type_test(value):
            got = json_type(value)
            hint = f" {preview(value)}" if got == "string" and isinstance(value, str) else ""
            out.append(Problem(where, f"expected {expected}, got {got}{hint}"))
        if allowed is not None:
            if type(value) is str:
                known = value in allowed
            elif type(value) in _NEVER_A_STRING:
                known = False
            else:
                raise _Fallback
            if not known:
                out.append(Problem(where, f"must be one of {shown}; got {preview(value)}"))
        if objects and isinstance(value, dict):
            extras: list[Any] = []
            for key, item in value.items():
                entry = table.get(key)
                if entry is None:
                    if checks_extras:
                        extras.append(key)
                elif entry[2] is not None and type(item) not in entry[2]:
                    entry[1](item, where + entry[0], out)
            for key, step in missing:
                if key not in value:
                    out.append(Problem(where + step, "is required"))
            if extras:
                _unexpected(value, extras, where, out, extra_node)
        if lists and isinstance(value, list):
            if items_passing is not None and {type(item) for item in value} <= items_passing:
                return
            for index, item in enumerate(value):
                items_node(item, f"{where}[{index}]", out)

    if allowed is None and not objects and not lists:
        return node, passing  # a `type` alone: its node is skipped for the types it passes
    return node, frozenset()


def _unexpected(
    value: dict[Any, Any],
    extras: list[Any],
    where: str,
    out: list[Problem],
    extra_node: _Node | None,
) -> None:
    """Properties no `properties` names, under `additionalProperties` false or a schema."""
    if any(type(key) is not str for key in extras):
        raise _Fallback  # jsonschema sorts them (4.18: by value, 4.26: by str) and may fail
    if extra_node is not None:
        for key in extras:
            extra_node(value[key], where + _step(key), out)
        return
    verb = "was" if len(extras) == 1 else "were"
    names = ", ".join(repr(key) for key in sorted(extras))
    out.append(Problem(where, f"Additional properties are not allowed ({names} {verb} unexpected)"))
