"""The search tools' own limit kinds: the result window, `source` and its patterns, sort entries,
the total-hits cap, and the hybrid search's sub-queries and fusion."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from .._problems import Problem
from ._limits import (
    MAX_RESULT_WINDOW,
    Limit,
    _clause_problems,
    _int_range,
    _int_value,
    _is_int,
    _is_number,
)

__all__ = [
    "MAX_SOURCE_STARS",
    "rrf_only",
    "sort_entries",
    "source",
    "sub_queries",
    "total_hits",
    "window",
]


def window() -> Limit:
    """`size` and `from` within the result window, and `from + size` too (`MAX_RESULT_WINDOW`).
    The fragment states the sum only where both are at most 5,000 or `from` is absent."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        yield from _int_range(args, "size", 0, MAX_RESULT_WINDOW)
        yield from _int_range(args, "from", 0, MAX_RESULT_WINDOW)
        total = _int_value(args, "from", 0) + _int_value(args, "size", 10)
        if total > MAX_RESULT_WINDOW and _int_value(args, "size", 10) <= MAX_RESULT_WINDOW:
            yield Problem("$", f"from + size must be at most {MAX_RESULT_WINDOW}; got {total}")

    def admits(args: Mapping[str, Any]) -> bool:
        size, start = args.get("size", 10), args.get("from", 0)
        return (
            type(size) is int
            and type(start) is int
            and 0 <= size <= MAX_RESULT_WINDOW
            and 0 <= start <= MAX_RESULT_WINDOW
            and start + size <= MAX_RESULT_WINDOW
        )

    bound = {"type": "integer", "minimum": 0, "maximum": MAX_RESULT_WINDOW}
    return Limit(
        problems=problems,
        admits=admits,
        fragment={
            "properties": {"size": bound, "from": bound},
            "allOf": [
                {
                    "anyOf": [
                        {"not": {"required": ["from"]}},
                        {"properties": {"from": {"maximum": 5000}, "size": {"maximum": 5000}}},
                    ]
                }
            ],
        },
        ints=("size", "from"),
        kind="window()",
    )


MAX_SOURCE_STARS = 4
"""The most `*` one `source` pattern may hold. XERJ matches a dotted pattern by backtracking
(index.rs:15737-15771 `glob_match` at e6e8e6a, used when any pattern has a dot), at a cost that
grows with a field name's length to the power of the number of `*`: 11 of them against a
26-letter name take XERJ minutes. Four cover any pattern a person writes (`meta.*.id`, `*name*`)."""

_SOURCE_KEYS = ("includes", "excludes", "include", "exclude")


def source() -> Limit:
    """`source` as XERJ reads it (es_compat.rs:4561-4605 at e6e8e6a): a string is a
    comma-separated list, a list holds field names, an object holds `includes`/`include` and
    `excludes`/`exclude`; no pattern with more than `MAX_SOURCE_STARS` `*`, no empty list."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        value = args.get("source")
        yield from _star_problems(value)
        if isinstance(value, list) and not all(isinstance(f, str) and f for f in value):
            yield Problem("$.source", "an array of source fields must hold non-empty field names")
        if isinstance(value, dict):
            yield from _object_problems(value)
        if value == []:
            # XERJ reads [] as an empty include list (es_compat.rs:4570-4576 at e6e8e6a), and an
            # empty include list keeps every field, embeddings too (index.rs:15717-15721).
            yield Problem(
                "$.source",
                "must name at least one field; an empty list returns every field. "
                "Omit source for the default, or use false for none",
            )

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get("source")
        if isinstance(value, list):
            return bool(value) and _names_ok(value)
        if isinstance(value, str):
            return value.count("*") <= MAX_SOURCE_STARS  # (all patterns' `*` together)
        if isinstance(value, dict):
            if not value:
                return False
            for key, names in value.items():
                if key not in _SOURCE_KEYS:
                    return False
                names = [names] if type(names) is str else names
                if type(names) is not list or not names or not _names_ok(names):
                    return False
        return True

    # A `source` text holds at most MAX_SOURCE_STARS `*` in all (the quick yes counts them
    # together, the problems pattern by pattern).
    stars = {"not": {"type": "string", "pattern": f"(\\*[^*]*){{{MAX_SOURCE_STARS + 1}}}"}}
    pattern = {"type": "string", "minLength": 1, **stars}
    return Limit(
        problems=problems,
        admits=admits,
        fragment={
            "properties": {
                "source": {
                    **stars,
                    "minItems": 1,
                    "items": pattern,
                    "minProperties": 1,
                    "propertyNames": {"enum": list(_SOURCE_KEYS)},
                    "additionalProperties": {
                        "type": ["string", "array"],
                        **stars,
                        "minLength": 1,
                        "minItems": 1,
                        "items": pattern,
                    },
                }
            }
        },
        given="source",
        kind="source()",
    )


def _names_ok(names: list[Any]) -> bool:
    for name in names:
        if type(name) is not str or not name or name.count("*") > MAX_SOURCE_STARS:
            return False
    return True


def _star_problems(source: Any) -> Iterator[Problem]:
    if isinstance(source, str) and source not in ("true", "false"):
        patterns: list[str] = source.split(",")
    elif isinstance(source, list):
        patterns = [p for p in source if isinstance(p, str)]
    elif isinstance(source, dict):
        patterns = []
        for plural, singular in (("includes", "include"), ("excludes", "exclude")):
            value = source.get(plural, source.get(singular))
            if isinstance(value, str):
                patterns.append(value)
            elif isinstance(value, list):
                patterns += [p for p in value if isinstance(p, str)]
    else:
        return
    for pattern in patterns:
        if pattern.count("*") > MAX_SOURCE_STARS:
            shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
            yield Problem(
                "$.source",
                f"the pattern {shown!r} holds {pattern.count('*')} `*`; at most "
                f'{MAX_SOURCE_STARS} are allowed (e.g. "meta.*.id")',
            )
            return


def _object_problems(source: Mapping[str, Any]) -> Iterator[Problem]:
    """`source` as an object: XERJ reads `includes` (or `include`) and `excludes` (or `exclude`),
    each a field name or a list of them (es_compat.rs:4577-4604 at e6e8e6a), and ignores any
    other key or value, which would then filter nothing: refused, with the form to use."""
    form = '{"includes": ["title"], "excludes": ["body_vector"]}'
    if not source or any(key not in _SOURCE_KEYS for key in source):
        unknown = sorted(k for k in source if k not in _SOURCE_KEYS)
        said = f"has {', '.join(unknown)}, which XERJ ignores" if unknown else "is empty"
        yield Problem(
            "$.source", f"as an object {said}; it takes includes and excludes, e.g. {form}"
        )
        return
    for key, value in source.items():
        names = [value] if isinstance(value, str) else value
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            yield Problem(
                f"$.source.{key}",
                "must be a field name or a non-empty array of field names; an empty list of "
                "includes returns every field",
            )


def sort_entries() -> Limit:
    """Each entry of a `sort` list is a field name or an object."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        sort = args.get("sort")
        if isinstance(sort, list) and not all(isinstance(s, (str, dict)) for s in sort):
            yield Problem(
                "$.sort", 'each sort entry is a field name or an object like {"date": "desc"}'
            )

    def admits(args: Mapping[str, Any]) -> bool:
        sort = args.get("sort")
        return not isinstance(sort, list) or all(isinstance(s, (str, dict)) for s in sort)

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {"sort": {"items": {"type": ["string", "object"]}}}},
        given="sort",
        kind="sort_entries()",
    )


def total_hits() -> Limit:
    """`track_total_hits`, where it is an integer, is -1 or more."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        tth = args.get("track_total_hits")
        if _is_int(tth) and tth < -1:
            yield Problem(
                "$.track_total_hits", f"must be true, false, -1 or a non-negative cap; got {tth}"
            )

    def admits(args: Mapping[str, Any]) -> bool:
        tth = args.get("track_total_hits")
        return not isinstance(tth, int) or tth >= -1

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {"track_total_hits": {"minimum": -1}}},
        given="track_total_hits",
        kind="total_hits()",
    )


def sub_queries() -> Limit:
    """The hybrid search's `queries`: at least one, each `{"query": <one clause>, "weight":
    <a finite number>}`."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        queries = args.get("queries")
        if not isinstance(queries, list):
            return
        if not queries:
            yield Problem("$.queries", 'must hold at least one {"query": {...}} sub-query')
        for i, sub in enumerate(queries):
            if isinstance(sub, dict):
                yield from _clause_problems(sub.get("query"), f"$.queries[{i}].query")
                for key in sub:
                    if key not in ("query", "weight"):
                        yield Problem(
                            f"$.queries[{i}].{key}",
                            "unknown key; a sub-query has `query` and `weight`",
                        )
                weight = sub.get("weight")
                if _is_number(weight) and not math.isfinite(weight):
                    yield Problem(f"$.queries[{i}].weight", "must be a finite number")

    def admits(args: Mapping[str, Any]) -> bool:
        queries = args.get("queries")
        if not isinstance(queries, list):
            return True
        if not queries:
            return False
        for sub in queries:
            if isinstance(sub, dict):
                if not sub.keys() <= {"query", "weight"}:
                    return False
                query, weight = sub.get("query"), sub.get("weight")
                if isinstance(query, dict) and len(query) > 1:
                    return False
                if (
                    weight is not None
                    and type(weight) is not int
                    and not (type(weight) is float and weight - weight == 0.0)
                ):
                    return False
        return True

    clause = {"maxProperties": 1}
    return Limit(
        problems=problems,
        admits=admits,
        fragment={
            "properties": {
                "queries": {
                    "minItems": 1,
                    "items": {
                        "properties": {"query": clause, "weight": {"type": "number"}},
                        "propertyNames": {"enum": ["query", "weight"]},
                    },
                }
            }
        },
        given="queries",
        kind="sub_queries()",
    )


def rrf_only() -> Limit:
    """`rrf_k` only with the rrf fusion (the default)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        if "rrf_k" in args and args.get("fusion", "rrf") != "rrf":
            yield Problem("$.rrf_k", 'applies only to fusion "rrf"; drop it or use fusion "rrf"')

    return Limit(
        problems=problems,
        admits=lambda args: "rrf_k" not in args or args.get("fusion", "rrf") == "rrf",
        fragment={
            "allOf": [
                {
                    "anyOf": [
                        {"not": {"required": ["rrf_k"]}},
                        {"properties": {"fusion": {"const": "rrf"}}},
                    ]
                }
            ]
        },
        given="rrf_k",
        kind="rrf_only()",
    )
