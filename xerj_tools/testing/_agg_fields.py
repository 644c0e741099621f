"""How XERJ's aggregations read a document: field values as strings, numbers and dates, and
the small filter matcher the `filter`/`filters` aggregations use.

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from ._agg_dates import iso_utc, parse_date_ms
from ._numbers import number

__all__ = [
    "NUMERIC",
    "RANGE_CHECKS",
    "Doc",
    "as_string",
    "date_values",
    "field_value",
    "first_number",
    "matches_filter",
    "numbers",
    "strings",
    "typed_key",
]

Doc = Mapping[str, Any]
_NULL = object()
_INT = re.compile(r"[+-]?\d+")
NUMERIC = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.I)


def as_string(value: Any) -> str:
    """A scalar as serde_json prints it: `true`, `5`, `5.0`, `1e20`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value).replace("e+", "e")
    return str(value)


def _walk(doc: Any, field: str) -> Any:
    for part in field.split("."):
        if not isinstance(doc, Mapping) or part not in doc:
            return _NULL
        doc = doc[part]
    return doc


def field_value(doc: Doc, field: str) -> Any:
    """`get_nested_field` (aggs.rs:2335-2368): the dotted path; else the path as one literal
    key; else the parent of its last segment (`title.keyword` reads `title`); else null."""
    value = _walk(doc, field)
    if value is _NULL:
        value = doc.get(field, _NULL)
    if value is _NULL and "." in field:
        value = _walk(doc, field.rsplit(".", 1)[0])
    return None if value is _NULL else value


def _flatten(value: Any) -> list[str]:
    # aggs.rs:2370-2379 `flatten_to_strings`: objects and nulls give nothing.
    if isinstance(value, list):
        return [s for item in value for s in _flatten(item)]
    if value is None or isinstance(value, Mapping):
        return []
    return [as_string(value)]


def _through_arrays(value: Any, parts: list[str]) -> list[str]:
    # aggs.rs:2285-2333: a segment that is an array applies the rest to each element.
    if not parts:
        return _flatten(value)
    if isinstance(value, list):
        return [s for item in value for s in _through_arrays(item, parts)]
    if isinstance(value, Mapping):
        if parts[0] in value:
            return _through_arrays(value[parts[0]], parts[1:])
        joined = ".".join(parts)
        if len(parts) > 1 and joined in value:
            return _flatten(value[joined])
    return []


def strings(doc: Doc, field: str) -> list[str]:
    """`extract_field_values` (aggs.rs:2267-2283): every value as a string, through arrays of
    objects too, `.keyword` falling back to the field itself."""
    out = _flatten(field_value(doc, field))
    if not out:
        out = _through_arrays(doc, field.split("."))
        if not out and field.endswith(".keyword"):
            out = _through_arrays(doc, field.removesuffix(".keyword").split("."))
    return out


def _number(value: Any, dates: bool) -> float | None:
    if not isinstance(value, str):
        return number(value)
    if NUMERIC.fullmatch(value):
        return float(value)
    if dates and (ms := parse_date_ms(value)) is not None:
        return float(ms)
    return None


def first_number(doc: Doc, field: str) -> float | None:
    """`extract_numeric` (aggs.rs:2382-2403): the value, or an array's first numeric item; a
    numeric string counts, and a date string as its epoch milliseconds. The metric
    aggregations read one value per document this way."""
    value = field_value(doc, field)
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, list | Mapping):
            continue
        if (n := _number(item, dates=True)) is not None:
            return n
    return None


def numbers(doc: Doc, field: str) -> list[float]:
    """`extract_numeric_values` (aggs.rs:2405-2430): every number and numeric string."""
    out: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif (n := _number(value, dates=False)) is not None:
            out.append(n)

    walk(field_value(doc, field))
    return out


def date_values(doc: Doc, field: str) -> list[int]:
    """`extract_date_ms_values` (aggs.rs:2432-2454): every value that parses as a date."""
    value = field_value(doc, field)
    items = value if isinstance(value, list) else [value]
    return [ms for item in items if (ms := parse_date_ms(item)) is not None]


def typed_key(key: str) -> tuple[Any, str | None]:
    """`typed_term_key` (aggs.rs:2908-2934): a `terms` bucket's key and `key_as_string`.
    `true`/`false` are 1/0 with the word as `key_as_string`; an integer or float string is the
    number; a date string is its epoch milliseconds with the ISO form as `key_as_string`;
    anything else stays the string."""
    if key in ("true", "false"):
        return (1 if key == "true" else 0), key
    if _INT.fullmatch(key) and -(2**63) <= int(key) < 2**63:
        return int(key), None
    if NUMERIC.fullmatch(key):
        value = float(key)
        return (value if math.isfinite(value) else key), None
    if (ms := parse_date_ms(key)) is not None:
        return ms, iso_utc(ms)
    return key, None


def _clauses(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _text(value: Any) -> str:
    # aggs.rs:5349-5356 `value_to_string`: a scalar's text; null, arrays and objects are "".
    return "" if value is None or isinstance(value, list | Mapping) else as_string(value)


def _expected(spec: Any, key: str) -> str:
    return _text(spec.get(key)) if isinstance(spec, Mapping) else _text(spec)


# A `range`'s bounds, as the query and the aggregations' filter both compare them.
RANGE_CHECKS: dict[str, Callable[[Any, Any], bool]] = {
    "gte": operator.ge,
    "gt": operator.gt,
    "lte": operator.le,
    "lt": operator.lt,
}


def _range_holds(values: list[str], bounds: Any) -> bool:
    # aggs.rs:5220-5300: the first value only, numerically; else as dates; else as strings.
    if not values or not isinstance(bounds, Mapping):
        return bool(values)
    first = values[0]
    if NUMERIC.fullmatch(first):
        value = float(first)
        return all(
            check(value, bound)
            for op, check in RANGE_CHECKS.items()
            if (bound := number(bounds.get(op))) is not None
        )
    if (ms := parse_date_ms(first)) is not None:
        return all(
            check(ms, bound)
            for op, check in RANGE_CHECKS.items()
            if (bound := parse_date_ms(bounds.get(op))) is not None
        )
    return all(
        check(first, bounds[op])
        for op, check in RANGE_CHECKS.items()
        if isinstance(bounds.get(op), str)
    )


def _field_map(body: Any) -> list[tuple[str, Any]]:
    return list(body.items()) if isinstance(body, Mapping) else []


def _wildcard(value: str, pattern: str) -> bool:
    if pattern == "*":
        return True
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return value == pattern


_VALUE_TESTS: dict[str, Callable[[str, str], bool]] = {
    "prefix": str.startswith,
    "wildcard": _wildcard,
}


def matches_filter(doc: Doc, query: Any) -> bool:
    """`doc_matches_filter` (aggs.rs:5079-5347), the matcher of `filter` and `filters`: not the
    search's query engine. `term`/`terms` compare strings, `match` is a lower-cased substring
    test (every word for several), `prefix`, a one-`*` `wildcard`, `exists`, `range` on the first
    value, `bool` (must, filter, must_not; should when alone); any other type matches all."""
    if not isinstance(query, Mapping):
        return True
    for kind, body in query.items():
        if kind == "match_all":
            return True
        fields = _field_map(body)
        if kind == "term":
            for field, spec in fields:
                checked = not isinstance(spec, Mapping) or "value" in spec
                if checked and _expected(spec, "value") not in strings(doc, field):
                    return False
        elif kind == "terms":
            for field, wanted in fields:
                if isinstance(wanted, list):
                    expected = {_text(w) for w in wanted}
                    if not expected & set(strings(doc, field)):
                        return False
        elif kind in ("match", "match_phrase"):
            for field, spec in fields:
                text = _expected(spec, "query")
                lowered = text.lower()
                words = lowered.split()
                if not any(
                    (lowered in v.lower() or v == text)
                    if len(words) <= 1
                    else all(w in v.lower() for w in words)
                    for v in strings(doc, field)
                ):
                    return False
        elif kind in _VALUE_TESTS:  # prefix, wildcard
            for field, spec in fields:
                wanted = _expected(spec, "value")
                if not any(_VALUE_TESTS[kind](v, wanted) for v in strings(doc, field)):
                    return False
        elif kind == "exists":
            name = body.get("field") if isinstance(body, Mapping) else None
            if isinstance(name, str) and not strings(doc, name):
                return False
        elif kind == "range":
            for field, bounds in fields:
                if not _range_holds(strings(doc, field), bounds):
                    return False
        elif kind == "bool" and isinstance(body, Mapping):
            for key in ("must", "filter"):
                if key in body and not all(matches_filter(doc, c) for c in _clauses(body[key])):
                    return False
            if "must_not" in body and any(
                matches_filter(doc, c) for c in _clauses(body["must_not"])
            ):
                return False
            should = _clauses(body["should"]) if "should" in body else []
            alone = "must" not in body and "filter" not in body
            if alone and should and not any(matches_filter(doc, c) for c in should):
                return False
    return True
