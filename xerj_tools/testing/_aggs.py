"""The stand-in's aggregations: the ones XERJ's `aggs.rs` dispatches that the tools are likely to ask.

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_BUCKETS", "run_aggs", "too_many_buckets"]

# `search.max_buckets`, 65 536 unless the node is configured otherwise (aggs.rs:100-124).
MAX_BUCKETS = 65_536


def _too_many(cap: int) -> dict[str, Any]:
    # The slot marker a runner embeds (aggs.rs:5701-5708 histogram, 9040-9058 multi_terms).
    return {
        "error": f"Trying to create too many buckets. Must be less than or equal to: [{cap}] but "
        "this number of buckets was exceeded. This limit can be set by changing the "
        "[search.max_buckets] cluster level setting.",
        "__error_status__": 400,
    }


def too_many_buckets(aggs: Any) -> dict[str, Any] | None:
    """The 400 XERJ answers when a slot carries the too-many-buckets marker, or None.

    es_compat.rs:10527-10580: the first `{error, __error_status__}` in the tree; when its reason
    says "Trying to create too many buckets" the whole search is a 400 whose `reason` is empty,
    `root_cause` empty, and the cause in `caused_by` with `max_buckets` read from the reason.
    """
    reason = _embedded_error(aggs)
    if reason is None or "Trying to create too many buckets" not in reason:
        return None
    digits = reason.split("[", 1)[1].split("]", 1)[0] if "[" in reason else ""
    caused_by = {
        "type": "too_many_buckets_exception",
        "reason": reason,
        "max_buckets": int(digits) if digits.isdigit() else MAX_BUCKETS,
    }
    error = {
        "root_cause": [],
        "type": "search_phase_execution_exception",
        "reason": "",
        "phase": "fetch",
        "grouped": True,
        "failed_shards": [],
        "caused_by": caused_by,
    }
    return {"error": error, "status": 400}


def _embedded_error(value: Any) -> str | None:
    if isinstance(value, Mapping):
        message, status = value.get("error"), value.get("__error_status__")
        if isinstance(message, str) and isinstance(status, (int, float)):
            return message
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            if (found := _embedded_error(item)) is not None:
                return found
    return None


def _values(sources: list[Mapping[str, Any]], field: str) -> list[Any]:
    out: list[Any] = []
    for source in sources:
        value: Any = source
        for part in field.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            continue
        out += value if isinstance(value, list) else [value]
    return out


def _numbers(sources: list[Mapping[str, Any]], field: str, missing: Any = None) -> list[float]:
    """The numbers of `field`; a document with none counts `missing` when it is a number
    (`get_missing_value`, aggs.rs:4738-4740, used by avg/sum/min/max/stats)."""
    out: list[float] = []
    for source in sources:
        nums = [
            float(v)
            for v in _values([source], field)
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        if not nums and isinstance(missing, (int, float)) and not isinstance(missing, bool):
            nums = [float(missing)]
        out += nums
    return out


def _terms(body: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    counts: dict[Any, int] = {}
    for v in _values(sources, str(body.get("field", ""))):
        # Past the bucket cap a new term is dropped, an existing one still counted; no error
        # (aggs.rs:2561-2580).
        if v in counts or len(counts) < MAX_BUCKETS:
            counts[v] = counts.get(v, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    size = body.get("size", 10)
    # aggs.rs:2534-2544: `size: 0` means every bucket; absent means 10.
    cap = None if size == 0 else int(size)
    shown = ordered if cap is None else ordered[:cap]
    return {
        "doc_count_error_upper_bound": 0,
        "sum_other_doc_count": sum(c for _, c in ordered[len(shown) :]),
        "buckets": [{"key": k, "doc_count": c} for k, c in shown],
    }


def _stats(body: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    # aggs.rs:4852-4894: count/min/max/avg/sum; with no values min/max/avg are null, sum 0.0.
    nums = _numbers(sources, str(body.get("field", "")), body.get("missing"))
    if not nums:
        return {"count": 0, "min": None, "max": None, "avg": None, "sum": 0.0}
    total = sum(nums)
    return {
        "count": len(nums),
        "min": min(nums),
        "max": max(nums),
        "avg": total / len(nums),
        "sum": total,
    }


def _bound(body: Mapping[str, Any], name: str, end: str) -> float | None:
    bounds = body.get(name)
    value = bounds.get(end) if isinstance(bounds, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _histogram(body: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    """`run_histogram` (aggs.rs:5590-5793): buckets keyed floor((v - offset) / interval), a
    document without the field counted at `missing` (5621-5640); with `min_doc_count` 0 (the
    default) or `extended_bounds`, every key from the lowest to the highest, the extended bound
    replacing the data's end where given (5681-5716); `hard_bounds` then clip (5719-5723),
    `min_doc_count` filters (5725-5732); an integral key is printed as an int."""
    field = body.get("field")
    if not isinstance(field, str):
        return {"buckets": []}
    interval = body.get("interval")
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        return {"error": "histogram requires a positive `interval`"}
    offset = float(body.get("offset", 0.0))
    min_doc_count = int(body.get("min_doc_count", 0))
    counts: dict[int, int] = {}
    for source in sources:
        nums = _numbers([source], field, body.get("missing"))
        for key in {math.floor((n - offset) / interval) for n in nums}:
            counts[key] = counts.get(key, 0) + 1
    ext_min, ext_max = (
        _bound(body, "extended_bounds", "min"),
        _bound(body, "extended_bounds", "max"),
    )
    if not counts and ext_min is None:
        keys: list[int] = []
    elif min_doc_count > 0 and ext_min is None:
        keys = sorted(counts)
    else:
        low = (
            math.floor((ext_min - offset) / interval)
            if ext_min is not None
            else min(counts, default=0)
        )
        high = (
            math.floor((ext_max - offset) / interval)
            if ext_max is not None
            else max(counts, default=0)
        )
        if high - low > MAX_BUCKETS:
            return _too_many(MAX_BUCKETS)  # filling the gaps would pass the cap (5681-5708)
        keys = list(range(low, high + 1))
    hard_min, hard_max = _bound(body, "hard_bounds", "min"), _bound(body, "hard_bounds", "max")
    if hard_min is not None and hard_max is not None:
        lo, hi = (
            math.floor((hard_min - offset) / interval),
            math.floor((hard_max - offset) / interval),
        )
        keys = [k for k in keys if lo <= k <= hi]
    buckets = []
    for key in keys:
        if min_doc_count > 0 and counts.get(key, 0) < min_doc_count:
            continue
        actual = key * interval + offset
        buckets.append(
            {
                "key": int(actual) if float(actual).is_integer() else actual,
                "doc_count": counts.get(key, 0),
            }
        )
    return {"buckets": buckets}


def _metric(kind: str, body: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> Any:
    field = str(body.get("field", ""))
    if kind == "value_count":
        # aggs.rs:4715-4736: the number of values, not of documents; with `missing`, a document
        # without one counts 1.
        empty = sum(1 for s in sources if not _values([s], field)) if "missing" in body else 0
        return {"value": len(_values(sources, field)) + empty}
    nums = _numbers(sources, field, body.get("missing"))
    if kind == "sum":
        return {"value": float(sum(nums))}  # aggs.rs:4766-4788: 0.0 when nothing matched
    if not nums:
        return {"value": None}
    value = {"avg": sum(nums) / len(nums), "min": min(nums), "max": max(nums)}[kind]
    return {"value": value}


def run_aggs(aggs: Mapping[str, Any], sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    """`aggregations` for `aggs` over the matching documents (aggs.rs:2051-2172)."""
    out: dict[str, Any] = {}
    for name, spec in aggs.items():
        if not isinstance(spec, Mapping):
            out[name] = {"error": "aggregation body must be an object"}
            continue
        kinds = [k for k in spec if k not in ("aggs", "aggregations", "meta")]
        if not kinds:
            out[name] = {"error": f"no aggregation type found in '{name}'"}
            continue
        kind, body = kinds[0], spec[kinds[0]]
        body = body if isinstance(body, Mapping) else {}
        if kind == "terms":
            out[name] = _terms(body, sources)
        elif kind == "stats":
            out[name] = _stats(body, sources)
        elif kind == "histogram":
            out[name] = _histogram(body, sources)
        elif kind in ("avg", "min", "max", "sum", "value_count"):
            out[name] = _metric(kind, body, sources)
        else:
            # aggs.rs:2172: an unknown type is not a 400; its slot carries the error, under 200.
            out[name] = {"error": f"unsupported aggregation type '{kind}'"}
        if "meta" in spec and isinstance(out[name], dict):
            out[name]["meta"] = spec["meta"]  # echoed into the result (aggs.rs:180-184)
    return out
