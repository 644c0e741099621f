"""A strict JSON Schema per quick yes: the prose limits the schema language can state,
checked in Rust with the tool's schema in one `is_valid`.

For each quick yes of `_fastyes` whose limits JSON Schema can state, `STRICT` holds a schema
fragment and a small Python rest (`Strict`). The valid lane (`xerj_tools._lane`) asks
``{"allOf": [tool schema, fragment, known argument names]}`` (jsonschema-rs; `compiled_strict`
merges it into one schema where the keywords do not meet) and then the rest;
where both say yes, the quick yes would say yes too, so the call is valid with nothing to report.
Where either says no, the lane takes the longer path: the schema, then the quick yes. So a
fragment may be stricter than its quick yes (a search with a ``rerank`` takes the longer path),
never looser; property tests (tests/schema/test_strict.py) hold every fragment and rest to their quick
yes, the tool's checks and `validate`.

What stays in Python, because JSON Schema cannot say it (`Strict.ints`, `Strict.vectors`):
- an integer written ``5.0``: JSON Schema counts it an integer, the checks do not;
- a vector's finite sum (``fsum``): bounds on each number say it at ten times the cost.
What the fragments state more narrowly than the checks, so that such calls take the longer path:
``from + size <= 10,000`` only where both are at most 5,000 or ``from`` is absent; index names
and namespaces by a pattern (a subset of `_paths`' rules); no ``rerank`` (its rules are many).

Text that must not be blank (``str.strip``'s whitespace differs from the regex ``\\s``) must
hold an ASCII letter or digit here: blank text cannot, and text without one takes the longer path.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .._bounds import _finite_numbers
from ._checks import MAX_RECENCY_K
from ._fastyes import (
    document_yes,
    hybrid_yes,
    recall_yes,
    search_yes,
    semantic_yes,
    store_yes,
    vector_yes,
)
from ._paths import QUICK_ID_CHARS

__all__ = ["STRICT", "Strict", "compiled_strict", "note", "strict_for"]


class Strict(NamedTuple):
    """A quick yes's limits as JSON Schema (`fragment`), and what Python still checks: each of
    `ints` absent or a Python int (JSON Schema's integer takes 5.0, the checks do not), each of
    `vectors` no list or one whose numbers have a finite sum (`_bounds._finite_numbers`:
    stated as bounds in the schema it costs ten times as much)."""

    fragment: dict[str, Any]
    ints: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()

    def rest(self, args: Mapping[str, Any]) -> bool:
        """The Python side (the lane inlines it)."""
        for key in self.ints:
            if type(args.get(key, 0)) is not int:
                return False
        for key in self.vectors:
            vector = args.get(key)
            if type(vector) is list and not _finite_numbers(vector):
                return False
        return True


_WINDOW = 10_000
_TEXT = {"type": "string", "pattern": "[A-Za-z0-9]"}  # not blank (see the module's note)
_VECTOR = {"minItems": 1}  # no empty vector (its finite sum: the rest)
_CLAUSE = {"maxProperties": 1}  # one query clause


def _range(lo: int, hi: int) -> dict[str, Any]:
    return {"minimum": lo, "maximum": hi}


def _int(lo: int, hi: int | None = None) -> dict[str, Any]:
    """An integer argument (of `Strict.ints`, where Python checks it is no float)."""
    return {"type": "integer", "minimum": lo, **({} if hi is None else {"maximum": hi})}


# Names as a pattern: a subset of what `_paths` allows (lower-case letters, digits, ``_``, ``-``,
# ``*``, no dot, not starting with ``_``, ``-`` or ``+``; an index also a comma list). Other
# names (``_all``, ``.hidden``, upper case, Unicode) take the longer path.
_NAME = "[a-z0-9*][a-z0-9_*-]{0,199}"
_INDEX = {"pattern": f"^{_NAME}(?:,{_NAME})*$", "maxLength": 1024}
_NAMESPACE = {"pattern": "^[a-z0-9][a-z0-9_-]{0,199}$", "not": {"pattern": "-edges$"}}


_NO_RERANK: dict[str, Any] = {"not": {}}  # no rerank: its rules are the longer path's

STRICT: dict[Callable[..., bool], Strict] = {
    search_yes: Strict(
        {
            "properties": {
                "index": _INDEX,
                "size": _int(0, _WINDOW),
                "from": _int(0, _WINDOW),
                "query": _CLAUSE,
                "source": {
                    "minItems": 1,
                    "items": {"type": "string", "minLength": 1},
                    "minProperties": 1,
                    "propertyNames": {"enum": ["includes", "excludes", "include", "exclude"]},
                    "additionalProperties": {
                        "type": ["string", "array"],
                        "minLength": 1,
                        "minItems": 1,
                        "items": {"type": "string", "minLength": 1},
                    },
                },
                "sort": {"items": {"type": ["string", "object"]}},
                "track_total_hits": {"minimum": -1},
                "rerank": _NO_RERANK,
            },
            "required": ["query"],  # `_checks.search_problems` refuses a search without one
            "allOf": [
                {  # from + size <= 10,000 where both are given and small, or no `from`
                    "anyOf": [
                        {"not": {"required": ["from"]}},
                        {"properties": {"from": {"maximum": 5000}, "size": {"maximum": 5000}}},
                    ]
                },
            ],
        },
        ("size", "from"),
    ),
    semantic_yes: Strict(
        {
            "properties": {
                "index": _INDEX,
                "field": _TEXT,
                "query": _TEXT,
                "k": _int(1, _WINDOW),
                "size": _int(0, _WINDOW),
                "filter": _CLAUSE,
            }
        },
        ("k", "size"),
    ),
    vector_yes: Strict(
        {
            "properties": {
                "index": _INDEX,
                "field": _TEXT,
                "query_vector": _VECTOR,
                "k": _int(1, _WINDOW),
                "size": _int(0, _WINDOW),
                "num_candidates": _int(1, _WINDOW),
                "filter": _CLAUSE,
            }
        },
        ("k", "size", "num_candidates"),
        ("query_vector",),
    ),
    hybrid_yes: Strict(
        {
            "properties": {
                "index": _INDEX,
                "size": _int(0, _WINDOW),
                "queries": {
                    "minItems": 1,
                    "items": {
                        "properties": {"query": _CLAUSE, "weight": {"type": "number"}},
                        "propertyNames": {"enum": ["query", "weight"]},
                    },
                },
                "rrf_k": _int(1),
                "rerank": _NO_RERANK,
            },
            "allOf": [
                {  # rrf_k only with the rrf fusion (the default)
                    "anyOf": [
                        {"not": {"required": ["rrf_k"]}},
                        {"properties": {"fusion": {"const": "rrf"}}},
                    ]
                },
            ],
        },
        ("size", "rrf_k"),
    ),
    store_yes: Strict(
        {
            "properties": {
                "namespace": _NAMESPACE,
                "vector": _VECTOR,
                "text": _TEXT,
                "id": _TEXT,
                "dedup_threshold": _range(0, 1),
            }
        },
        (),
        ("vector",),
    ),
    recall_yes: Strict(
        {
            "properties": {
                "namespace": _NAMESPACE,
                "vector": _VECTOR,
                "k": _int(1, _WINDOW),
                "recency_weight": _range(0, 1),
            },
            "allOf": [
                {  # a recency weight re-ranks at most MAX_RECENCY_K memories
                    "anyOf": [
                        {"not": {"required": ["recency_weight", "k"]}},
                        {"properties": {"k": {"maximum": MAX_RECENCY_K}}},
                    ]
                },
                {  # something to recall by: a vector, or a query that is not blank
                    "anyOf": [
                        {"required": ["vector"], "properties": {"vector": {"type": "array"}}},
                        {"required": ["query"], "properties": {"query": _TEXT}},
                    ]
                },
            ],
        },
        ("k",),
        ("vector",),
    ),
    document_yes: Strict(
        {
            "properties": {
                "index": {**_INDEX, "not": {"pattern": "[,*]"}},
                "id": {
                    "minLength": 1,
                    "maxLength": QUICK_ID_CHARS,
                    "not": {"enum": [".", ".."]},
                },
            }
        },
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


def compiled_strict(
    spec: Any, validator_for: Callable[[Any], Any]
) -> tuple[Callable[[Any], bool] | None, Strict | None]:
    """The `is_valid` of the tool's schema (its compiled fast check's) with its quick yes's
    strict fragment and its known argument names, compiled by `validator_for` (jsonschema-rs's,
    which the caller brings: the schema layer sits above this one), with that `Strict`; (None,
    None) where the quick yes has none, the schema is not compiled by jsonschema-rs, or it lists
    no properties."""
    found = strict_for(spec.fast_yes)
    fast = spec.fast_check
    properties = (spec.parameters or {}).get("properties")
    if (
        found is None
        or getattr(fast, "backend", None) != "jsonschema-rs"
        or not isinstance(properties, Mapping)
        or not properties
    ):
        return None, None
    root = _merged(_plain(fast.schema), found.fragment, frozenset(properties))
    try:
        is_valid = validator_for(root).is_valid
    except Exception:  # a schema jsonschema-rs reads otherwise: the longer path
        return None, None
    return is_valid, found


# Keywords whose meaning depends on a sibling: a subschema holding one is never merged into.
_SIBLINGS = frozenset({
    "additionalProperties", "patternProperties", "unevaluatedProperties", "items",
    "prefixItems", "additionalItems", "unevaluatedItems", "contains", "if", "then", "else",
    "$ref", "$dynamicRef",
})  # fmt: skip


def _merged(schema: dict[str, Any], fragment: dict[str, Any], names: frozenset[str]) -> Any:
    """``{"allOf": [schema, fragment, only these argument names]}``, as one schema where the
    keywords do not meet (a tenth of a microsecond less per call in jsonschema-rs)."""
    whole = {"allOf": [schema, fragment, {"propertyNames": {"enum": sorted(names)}}]}
    properties = schema.get("properties", {})
    if (
        not isinstance(properties, dict)
        or schema.keys() & _SIBLINGS
        or schema.keys() & (fragment.keys() - {"properties"})
    ):
        return whole
    merged = dict(properties)
    for key, sub in fragment.get("properties", {}).items():
        own = merged.get(key, True)
        if (
            isinstance(own, dict)
            and not own.keys() & _SIBLINGS
            and not sub.keys() & _SIBLINGS
            and all(own[k] == v for k, v in sub.items() if k in own)
        ):
            merged[key] = {**own, **sub}
        else:
            merged[key] = {"allOf": [own, sub]}
    for name in names:
        merged.setdefault(name, True)
    if not merged.keys() <= names:
        return whole
    return {**schema, **fragment, "properties": merged, "additionalProperties": False}


def _plain(schema: Any) -> Any:
    """`schema` as plain dicts and lists (jsonschema-rs reads no other mapping type)."""
    if isinstance(schema, Mapping):
        return {str(k): _plain(v) for k, v in schema.items()}
    if isinstance(schema, (list, tuple)):
        return [_plain(v) for v in schema]
    return schema
