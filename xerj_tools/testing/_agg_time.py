"""The stand-in's `date_histogram` (aggs.rs:4262-4713 at e6e8e6a, see ``CONTRACT.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._agg_buckets import MAX_BUCKETS, Sub, _bucket, doc_count, too_many
from ._agg_dates import (
    calendar_floor,
    calendar_next,
    interval_ms,
    is_calendar,
    parse_date_ms,
    render,
    tz_offset_ms,
)
from ._agg_fields import Doc, date_values
from ._numbers import count

__all__ = ["date_histogram"]


def date_histogram(body: Mapping[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_date_histogram` (aggs.rs:4262-4713), with a fixed-offset `time_zone` only.

    `fixed_interval`, `calendar_interval` or `interval` (default `1d`; an unknown one is the
    slot error `unknown interval '…'`); calendar units floor to the minute, hour, day, Monday,
    month, quarter or year, fixed ones to multiples of the width. `offset`, `missing`,
    `min_doc_count` (0: gaps filled between the first and last bucket, or the
    `extended_bounds`), `hard_bounds` (inclusive), `format`, `keyed`. Each bucket is
    `{key: epoch ms, key_as_string, doc_count}`."""
    field = body.get("field")
    if not isinstance(field, str):
        return {"buckets": []}
    raw = next(
        (body[k] for k in ("fixed_interval", "calendar_interval", "interval") if k in body), "1d"
    )
    interval = raw if isinstance(raw, str) else "1d"
    width = interval_ms(interval)
    if width is None:
        return {"error": f"unknown interval '{interval}'"}
    calendar = is_calendar(interval)
    zone = body.get("time_zone") if isinstance(body.get("time_zone"), str) else ""
    tz = tz_offset_ms(zone) if zone else None
    if zone and tz is None:
        return {"error": f"the stand-in does not resolve the time zone '{zone}'"}
    shift = tz or 0
    offset_text = body.get("offset")
    offset = 0
    if isinstance(offset_text, str) and offset_text.strip():
        text = offset_text.strip()
        sign = -1 if text.startswith("-") else 1
        offset = sign * (interval_ms(text.lstrip("+-")) or 0)

    def floor(local: int) -> int:
        return calendar_floor(local, interval) if calendar else local // width * width

    def step(key: int) -> int:
        if not calendar:
            return key + width
        following = calendar_next(key + shift - offset, interval) - shift + offset
        return following if following > key else key + width

    def key_of(ms: int) -> int:
        return floor(ms + shift - offset) - shift + offset

    hard: Mapping[str, Any] = body.get("hard_bounds") or {}
    hard = hard if isinstance(hard, Mapping) else {}
    hard_min, hard_max = parse_date_ms(hard.get("min")), parse_date_ms(hard.get("max"))
    missing = parse_date_ms(body.get("missing"))
    members: dict[int, list[Doc]] = {}
    for doc in docs:
        stamps = date_values(doc, field) or ([missing] if missing is not None else [])
        for key in dict.fromkeys(key_of(ms) for ms in stamps):
            if (hard_min is None or key >= hard_min) and (hard_max is None or key <= hard_max):
                members.setdefault(key, []).append(doc)
    low, high = (min(members), max(members)) if members else (None, None)
    ext: Mapping[str, Any] = body.get("extended_bounds") or {}
    ext = ext if isinstance(ext, Mapping) else {}
    for end in ("min", "max"):
        if (bound := parse_date_ms(ext.get(end))) is not None:
            key = floor(bound) - shift + offset  # aggs.rs:4500-4540: the bound is local time
            low, high = (
                min(low, key) if low is not None else key,
                max(high, key) if high is not None else key,
            )
    if hard_min is not None and low is not None:
        low = max(low, key_of(hard_min))
    if hard_max is not None and high is not None:
        high = min(high, key_of(hard_max))
    min_doc_count = count(body, "min_doc_count", 0)
    if min_doc_count > 0 or low is None or high is None:
        keys = sorted(k for k, v in members.items() if len(v) >= max(min_doc_count, 1))
    else:
        keys, key = [], low
        while key <= high:
            if len(keys) >= MAX_BUCKETS:
                return too_many(MAX_BUCKETS)  # aggs.rs:4586-4600
            keys.append(key)
            key = step(key)
    fmt = body.get("format") if isinstance(body.get("format"), str) else None
    buckets = []
    for key in keys:
        inside = members.get(key, [])
        head = {"key": key, "key_as_string": render(key, fmt, tz), "doc_count": doc_count(inside)}
        buckets.append(_bucket(head, inside, sub))
    if body.get("keyed") is True:
        return {"buckets": {b["key_as_string"]: b for b in buckets}}
    return {"buckets": buckets}
