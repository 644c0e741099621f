"""A strict JSON Schema per quick yes (issue 24): the prose limits the schema language can state,
checked in Rust with the tool's schema in one `is_valid`.

For each quick yes of `_fastyes` whose limits JSON Schema can state, `STRICT` holds a schema
fragment and a small Python rest (`Strict`). The valid lane (`xerj_tools._lane`) asks
``{"allOf": [tool schema, fragment, known argument names]}`` (jsonschema-rs) and then the rest;
where both say yes, the quick yes would say yes too, so the call is valid with nothing to report.
Where either says no, the lane asks the schema and the quick yes as before. So a fragment may be
stricter than its quick yes (a search with a ``rerank`` goes the old way), never looser; property
tests (tests/test_strict.py) hold every fragment and rest to their quick yes, the tool's checks
and `validate`.

What stays in Python, because JSON Schema cannot say it:
- an integer written ``5.0``: JSON Schema counts it an integer, the checks do not
  (`_ints`: each integer argument present is a Python int, not a float);
- index names and memory namespaces (`_index_ok`, `_namespace_ok`: a cached verdict);
- ``from + size <= 10,000`` is stated in the fragment only where both are small (an ``anyOf``);
  a larger page goes the old way.

Text that must not be blank (``str.strip``'s whitespace differs from the regex ``\\s``) must
hold an ASCII letter or digit here: blank text cannot, and text without one goes the old way.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .._bounds import _finite_numbers
from ._checks import MAX_RECENCY_K
from ._fastyes import (
    _GOOD_INDICES,
    _GOOD_NAMESPACES,
    _index_ok,
    _namespace_ok,
    document_yes,
    hybrid_yes,
    recall_yes,
    search_yes,
    semantic_yes,
    store_yes,
    vector_yes,
)
from ._paths import MAX_ID_BYTES

__all__ = ["STRICT", "Strict", "note", "strict_for"]

Rest = Callable[[Mapping[str, Any]], bool]


class Strict(NamedTuple):
    """A quick yes's limits as JSON Schema (`fragment`), and what Python still checks (`rest`)."""

    fragment: dict[str, Any]
    rest: Rest


_WINDOW = 10_000
_TEXT = {"type": "string", "pattern": "[A-Za-z0-9]"}  # not blank (see the module's note)
_VECTOR = {"minItems": 1}  # no empty vector (its finite sum: the rest)
_CLAUSE = {"maxProperties": 1}  # one query clause


def _range(lo: int, hi: int) -> dict[str, Any]:
    return {"minimum": lo, "maximum": hi}


# The Python rests, one per tool, written out (each a few look-ups: no call but the cached
# name verdicts). An integer argument present must be a Python int (None too is refused here).


def _index_ok_now(args: Mapping[str, Any]) -> bool:
    index = args.get("index")
    return (type(index) is str and index in _GOOD_INDICES) or _index_ok(index)


def _namespace_ok_now(args: Mapping[str, Any]) -> bool:
    namespace = args.get("namespace")
    return (type(namespace) is str and namespace in _GOOD_NAMESPACES) or _namespace_ok(namespace)


def _vector_now(vector: Any) -> bool:
    """_vector's finite sum (fsum), which a schema's bounds state only at ten times the cost."""
    return type(vector) is not list or _finite_numbers(vector)


def _search_rest(args: Mapping[str, Any]) -> bool:
    return (
        type(args.get("size", 0)) is int
        and type(args.get("from", 0)) is int
        and _index_ok_now(args)
    )


def _semantic_rest(args: Mapping[str, Any]) -> bool:
    return (
        type(args.get("k", 1)) is int and type(args.get("size", 0)) is int and _index_ok_now(args)
    )


def _vector_rest(args: Mapping[str, Any]) -> bool:
    return (
        type(args.get("k", 1)) is int
        and type(args.get("size", 0)) is int
        and type(args.get("num_candidates", 1)) is int
        and _vector_now(args.get("query_vector"))
        and _index_ok_now(args)
    )


def _hybrid_rest(args: Mapping[str, Any]) -> bool:
    return (
        type(args.get("size", 0)) is int
        and type(args.get("rrf_k", 1)) is int
        and _index_ok_now(args)
    )


def _store_rest(args: Mapping[str, Any]) -> bool:
    return _vector_now(args.get("vector")) and _namespace_ok_now(args)


def _recall_rest(args: Mapping[str, Any]) -> bool:
    return (
        type(args.get("k", 1)) is int
        and _vector_now(args.get("vector"))
        and _namespace_ok_now(args)
    )


_NO_RERANK = {"not": {"required": ["rerank"]}}  # a rerank's rules: the old way

STRICT: dict[Callable[..., bool], Strict] = {
    search_yes: Strict(
        {
            "properties": {
                "size": _range(0, _WINDOW),
                "from": _range(0, _WINDOW),
                "query": _CLAUSE,
                "source": {"minItems": 1, "items": {"type": "string", "minLength": 1}},
                "sort": {"items": {"type": ["string", "object"]}},
                "track_total_hits": {"minimum": -1},
            },
            "allOf": [
                _NO_RERANK,
                {  # from + size <= 10,000 where both are given and small, or no `from`
                    "anyOf": [
                        {"not": {"required": ["from"]}},
                        {"properties": {"from": {"maximum": 5000}, "size": {"maximum": 5000}}},
                    ]
                },
            ],
        },
        _search_rest,
    ),
    semantic_yes: Strict(
        {
            "properties": {
                "field": _TEXT,
                "query": _TEXT,
                "k": _range(1, _WINDOW),
                "size": _range(0, _WINDOW),
                "filter": _CLAUSE,
            }
        },
        _semantic_rest,
    ),
    vector_yes: Strict(
        {
            "properties": {
                "field": _TEXT,
                "query_vector": _VECTOR,
                "k": _range(1, _WINDOW),
                "size": _range(0, _WINDOW),
                "num_candidates": _range(1, _WINDOW),
                "filter": _CLAUSE,
            }
        },
        _vector_rest,
    ),
    hybrid_yes: Strict(
        {
            "properties": {
                "size": _range(0, _WINDOW),
                "queries": {
                    "minItems": 1,
                    "items": {
                        "properties": {"query": _CLAUSE, "weight": {"type": "number"}},
                        "propertyNames": {"enum": ["query", "weight"]},
                    },
                },
                "rrf_k": {"minimum": 1},
            },
            "allOf": [
                _NO_RERANK,
                {  # rrf_k only with the rrf fusion (the default)
                    "if": {"required": ["rrf_k"]},
                    "then": {"properties": {"fusion": {"const": "rrf"}}},
                },
            ],
        },
        _hybrid_rest,
    ),
    store_yes: Strict(
        {
            "properties": {
                "vector": _VECTOR,
                "text": _TEXT,
                "id": _TEXT,
                "dedup_threshold": _range(0, 1),
            }
        },
        _store_rest,
    ),
    recall_yes: Strict(
        {
            "properties": {
                "vector": _VECTOR,
                "k": _range(1, _WINDOW),
                "recency_weight": _range(0, 1),
            },
            "allOf": [
                {  # a recency weight re-ranks at most MAX_RECENCY_K memories
                    "if": {"required": ["recency_weight", "k"]},
                    "then": {"properties": {"k": {"maximum": MAX_RECENCY_K}}},
                },
                {  # something to recall by: a vector, or a query that is not blank
                    "anyOf": [
                        {"required": ["vector"], "properties": {"vector": {"type": "array"}}},
                        {"required": ["query"], "properties": {"query": _TEXT}},
                    ]
                },
            ],
        },
        _recall_rest,
    ),
    document_yes: Strict(
        {
            "properties": {
                "index": {"not": {"anyOf": [{"const": "_all"}, {"pattern": "[,*]"}]}},
                "id": {
                    "minLength": 1,
                    "maxLength": MAX_ID_BYTES // 4,
                    "not": {"enum": [".", ".."]},
                },
            }
        },
        _index_ok_now,
    ),
}


# The quick yes `Tool.yes_for` makes of a tool's own (the unknown-argument check added) -> the
# own one, so that the lane finds its `Strict`.
_OWN: weakref.WeakKeyDictionary[Callable[..., bool], Callable[..., bool]] = (
    weakref.WeakKeyDictionary()
)


def note(made: Callable[..., bool], own: Callable[..., bool]) -> None:
    """Record that the quick yes `made` is `own` with the unknown-argument check added."""
    if own in STRICT:
        _OWN[made] = own


def strict_for(yes: Callable[..., bool] | None) -> Strict | None:
    """The `Strict` of a tool's quick yes (`ToolSpec.fast_yes`), or None."""
    if yes is None:
        return None
    found = STRICT.get(yes)
    if found is None:
        own = _OWN.get(yes)
        found = STRICT.get(own) if own is not None else None
    return found
