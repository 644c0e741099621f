"""The stand-in's `composite` aggregation (aggs.rs:6071-6750 at e6e8e6a, see ``CONTRACT.md``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from ._agg_buckets import Sub, _bucket, doc_count
from ._agg_dates import (
    calendar_floor,
    interval_ms,
    is_calendar,
    parse_date_ms,
    render,
    tz_offset_ms,
)
from ._agg_fields import Doc, as_string, date_values, numbers, strings
from ._numbers import count, number, number_or_text

__all__ = ["composite"]

_NULL = "\x00null"  # the `__null__` sentinel of a missing bucket


def _number_text(value: float) -> str:
    # aggs.rs:3987-3995 `format_histogram_key`: an integral value without `.0`.
    return str(int(value)) if value.is_integer() and abs(value) < 1e18 else repr(value)


def _source_parts(kind: str, spec: Mapping[str, Any], doc: Doc, field: str) -> list[str]:
    if kind == "terms":
        return strings(doc, field)
    if kind == "histogram":
        interval = number(spec.get("interval")) or 1.0
        offset = number(spec.get("offset")) or 0.0
        keys = {
            _number_text(math.floor((n - offset) / interval) * interval + offset)
            for n in numbers(doc, field)
        }
        return sorted(keys)
    if kind == "date_histogram":
        raw = next(
            (spec[k] for k in ("calendar_interval", "fixed_interval", "interval") if k in spec),
            None,
        )
        unit = raw if isinstance(raw, str) else None
        width = (interval_ms(unit) if unit else None) or 86_400_000
        zone = spec.get("time_zone")
        shift = (tz_offset_ms(zone) or 0) if isinstance(zone, str) else 0
        keys = set()
        for ms in date_values(doc, field):
            local = ms + shift
            floor = (
                calendar_floor(local, unit)
                if unit and is_calendar(unit)
                else local // width * width
            )
            keys.add(str(floor - shift))
        return sorted(keys)
    return []


def _typed_part(kind: str, spec: Mapping[str, Any], value: str) -> Any:
    # aggs.rs:6640-6720: null for the missing bucket; a date_histogram's key is epoch ms (a
    # string under `format`); terms and histogram keys numbers where they parse (an unmapped
    # field's heuristic, aggs.rs:6095-6128).
    if value == _NULL:
        return None
    if kind == "date_histogram":
        fmt = spec.get("format")
        if not isinstance(fmt, str):
            return int(value)
        zone = spec.get("time_zone")
        return render(int(value), fmt, tz_offset_ms(zone) if isinstance(zone, str) else None)
    return number_or_text(value) if kind in ("terms", "histogram") else value


def _part_order(kind: str, a: str, b: str) -> int:
    """`composite_part_cmp` (aggs.rs:6130-6162), unmapped: numbers numerically (histograms
    always), else strings; the missing bucket first."""
    if a == b:
        return 0
    if a == _NULL or b == _NULL:
        return -1 if a == _NULL else 1
    try:
        x, y = float(a), float(b)
    except ValueError:
        if kind != "terms":
            return 0
        return -1 if a < b else 1
    return -1 if x < y else 1 if x > y else 0


def composite(body: Mapping[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_composite` (aggs.rs:6164-6750): `terms`, `histogram` and `date_histogram` sources;
    every combination of a document's values is a bucket, sorted ascending per source (`order:
    desc` reverses one); `missing_bucket` gives a null part; `after` drops every key up to and
    including it; `size` (10) buckets; `after_key` (the last bucket's key) comes first, and only
    when there is a bucket."""
    sources = body.get("sources")
    if not isinstance(sources, list):
        return {"buckets": []}
    defs: list[tuple[str, str, str, Mapping[str, Any]]] = []
    for source in sources:
        if not isinstance(source, Mapping) or not source:
            continue
        name, spec = next(iter(source.items()))
        if not isinstance(spec, Mapping) or not spec:
            continue
        kind, params = next(iter(spec.items()))
        if isinstance(params, Mapping) and isinstance(params.get("field"), str):
            defs.append((name, kind, params["field"], params))
    if not defs:
        return {"buckets": []}
    members: dict[tuple[str, ...], list[Doc]] = {}
    for doc in docs:
        combos: list[tuple[str, ...]] = [()]
        for _, kind, field, params in defs:
            parts = _source_parts(kind, params, doc, field)
            if not parts and (
                params.get("missing_bucket") is True or body.get("missing_bucket") is True
            ):
                parts = [_NULL]
            combos = [(*c, p) for c in combos for p in parts]
        for combo in combos:
            members.setdefault(combo, []).append(doc)

    def compare(a: tuple[str, ...], b: tuple[str, ...], sorting: bool = False) -> int:
        for (_, kind, _, params), x, y in zip(defs, a, b, strict=True):
            order = _part_order(kind, x, y)
            if sorting and _NULL in (x, y) and params.get("missing_order") == "last":
                order = -order  # aggs.rs:6417-6477: the missing bucket last, then `order` applies
            if order:
                return -order if params.get("order") == "desc" else order
        return 0

    keys = sorted(members, key=functools.cmp_to_key(functools.partial(compare, sorting=True)))
    after = body.get("after")
    if isinstance(after, Mapping):
        cursor = tuple(_after_part(kind, params, after.get(name)) for name, kind, _, params in defs)
        keys = [k for k in keys if compare(k, cursor) > 0]
    size = count(body, "size", 10)
    buckets = []
    for key in keys[:size]:
        inside = members[key]
        shown = {
            name: _typed_part(kind, params, part)
            for (name, kind, _, params), part in zip(defs, key, strict=True)
        }
        buckets.append(_bucket({"key": shown, "doc_count": doc_count(inside)}, inside, sub))
    out: dict[str, Any] = {"after_key": buckets[-1]["key"]} if buckets else {}
    out["buckets"] = buckets
    return out


def _after_part(kind: str, params: Mapping[str, Any], value: Any) -> str:
    # aggs.rs:6509-6585: the cursor in the key's internal form.
    if value is None:
        return _NULL
    if kind == "date_histogram" and isinstance(value, str):
        ms = parse_date_ms(value)
        return str(ms) if ms is not None else value
    if kind == "histogram" and (found := number(value)) is not None:
        return _number_text(found)
    return as_string(value) if not isinstance(value, dict | list) else ""
