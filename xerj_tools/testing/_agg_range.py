"""The stand-in's `range` aggregation (aggs.rs:5360-5561 at e6e8e6a, see ``CONTRACT.md``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ._agg_buckets import Sub, _bucket
from ._agg_dates import iso_utc, parse_date_ms
from ._agg_fields import Doc, date_values, first_number
from ._numbers import number

__all__ = ["range_agg"]


def _range_text(value: float) -> str:
    """`format_range_val` (aggs.rs:5360-5383): Java's `Double.toString`: `100.0`, `0.5`,
    `1.0E7`."""
    if not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "NaN"
    if value == 0:
        return "0.0"
    if not 1e-3 <= abs(value) < 1e7:
        # The shortest digits that read back as `value` (as Rust and Java print), one before
        # the point: -9.223372036854776E18, 1.0E7.
        sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
        text = "".join(map(str, digits))
        power = len(digits) - 1 + int(exponent)
        return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"
    return f"{value:.1f}" if value.is_integer() else repr(value)


def range_agg(body: Mapping[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_range` (aggs.rs:5402-5561): each range `[from, to)` over the document's first
    value; a string bound makes it a date range (epoch-ms bounds, ISO keys and
    `from_as_string`/`to_as_string`); `missing`; a bucket's `key` is the range's own or
    `from-to` with `*` for an open end; `keyed` makes the buckets an object."""
    field, ranges = body.get("field"), body.get("ranges")
    if not isinstance(field, str) or not isinstance(ranges, list):
        return {"buckets": []}
    dated = any(
        isinstance(r, Mapping) and (isinstance(r.get("from"), str) or isinstance(r.get("to"), str))
        for r in ranges
    )

    def read(value: Any) -> float | None:
        if isinstance(value, str):
            if dated:
                ms = parse_date_ms(value)
                return float(ms) if ms is not None else None
            try:
                return float(value)
            except ValueError:
                return None
        return number(value)

    missing = read(body.get("missing"))
    if missing is None and dated and isinstance(body.get("missing"), str):
        try:
            missing = float(body["missing"])
        except ValueError:
            missing = None

    def value_of(doc: Doc) -> float | None:  # its first value (or date), else `missing`
        if dated:
            stamps = date_values(doc, field)
            return float(stamps[0]) if stamps else missing
        found = first_number(doc, field)
        return missing if found is None else found

    def text(bound: float | None) -> str:
        if bound is None:
            return "*"
        return iso_utc(int(bound)) if dated else _range_text(bound)

    valued = [(doc, v) for doc in docs if (v := value_of(doc)) is not None]
    buckets: list[dict[str, Any]] = []
    for spec in ranges:
        spec = spec if isinstance(spec, Mapping) else {}
        start, end = read(spec.get("from")), read(spec.get("to"))
        inside = [
            d for d, v in valued if (start is None or v >= start) and (end is None or v < end)
        ]
        key = spec.get("key") if isinstance(spec.get("key"), str) else f"{text(start)}-{text(end)}"
        head: dict[str, Any] = {"key": key, "doc_count": len(inside)}
        for name, bound in (("from", start), ("to", end)):
            if bound is not None:
                head[name] = int(bound) if dated else bound
                if dated:
                    head[f"{name}_as_string"] = iso_utc(int(bound))
        buckets.append(_bucket(head, inside, sub))
    if body.get("keyed") is True:
        return {"buckets": {b["key"]: {k: v for k, v in b.items() if k != "key"} for b in buckets}}
    return {"buckets": buckets}
