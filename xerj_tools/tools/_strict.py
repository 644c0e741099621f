"""The library's tools' limits as JSON Schema fragments (each `Limit.fragment`, `_limits`): what
the schema language can state of a tool's prose limits, checked in Rust with the tool's schema in
one `is_valid` (the strict schema of `xerj_tools._schema._plan.Plan`).

Where the tool's schema, the fragment (the tool's argument names added) and the Python rest all
say yes, the tool's quick yes would say yes too, so the call is valid with nothing to report.
Where either says no, the caller asks the schema and the quick yes as before. So a fragment may
be stricter than its quick yes (a search with a ``rerank`` goes the slow way), never looser; the
agreement suite (tests/schema/test_limits.py) holds every fragment to its quick yes and its checks.

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

from typing import Any, NamedTuple

from ._checks import MAX_RECENCY_K, MAX_SOURCE_STARS
from ._paths import QUICK_ID_CHARS

__all__ = ["DOCUMENT", "HYBRID", "RECALL", "SEARCH", "SEMANTIC", "STORE", "VECTOR", "Strict"]


class Strict(NamedTuple):
    """A quick yes's limits as JSON Schema (`fragment`), and what Python still checks: each of
    `ints` absent or a Python int (JSON Schema's integer takes 5.0, the checks do not), each of
    `vectors` no list or one whose numbers have a finite sum (`_bounds._finite_numbers`:
    stated as bounds in the schema it costs ten times as much)."""

    fragment: dict[str, Any]
    ints: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()


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


# A `source` text holds at most MAX_SOURCE_STARS `*` in all (the quick yes counts them together,
# the checks pattern by pattern).
_STARS = {"not": {"type": "string", "pattern": f"(\\*[^*]*){{{MAX_SOURCE_STARS + 1}}}"}}
_PATTERN = {"type": "string", "minLength": 1, **_STARS}

_NO_RERANK: dict[str, Any] = {"not": {}}  # no rerank: its rules are the longer path's

SEARCH = Strict(
    {
        "properties": {
            "index": _INDEX,
            "size": _int(0, _WINDOW),
            "from": _int(0, _WINDOW),
            "query": _CLAUSE,
            "source": {
                **_STARS,
                "minItems": 1,
                "items": _PATTERN,
                "minProperties": 1,
                "propertyNames": {"enum": ["includes", "excludes", "include", "exclude"]},
                "additionalProperties": {
                    "type": ["string", "array"],
                    **_STARS,
                    "minLength": 1,
                    "minItems": 1,
                    "items": _PATTERN,
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
)

SEMANTIC = Strict(
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
)

VECTOR = Strict(
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
)

HYBRID = Strict(
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
)

STORE = Strict(
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
)

RECALL = Strict(
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
)

DOCUMENT = Strict(
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
)
