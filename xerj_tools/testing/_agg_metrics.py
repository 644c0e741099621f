"""The stand-in's metric aggregations: value_count, avg, sum, min, max, stats, extended_stats,
cardinality, percentiles and top_hits.

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._agg_dates import iso_utc, parse_date_ms
from ._agg_fields import NUMERIC, Doc, first_number, strings
from ._numbers import count, number

__all__ = [
    "cardinality", "extended_stats", "metric", "percentiles", "stats", "stats_of", "top_hits",
]  # fmt: skip


def _field(body: Mapping[str, Any]) -> str | None:
    field = body.get("field")
    return field if isinstance(field, str) else None


def _per_doc(body: Mapping[str, Any], docs: list[Doc]) -> list[float]:
    """One number per document (`extract_numeric`, the first value), a numeric `missing` for
    the rest (`get_missing_value`, aggs.rs:4738-4740): what avg, sum, min, max, stats,
    extended_stats and percentiles read (aggs.rs:4742-4894, 5890-6055, 9783-9870)."""
    field, missing = _field(body), number(body.get("missing"))
    if field is None:
        return []
    read = (first_number(doc, field) for doc in docs)
    return [v for value in read if (v := missing if value is None else value) is not None]


def _date_shaped(docs: list[Doc], field: str) -> bool:
    # aggs.rs:4837-4850 `field_is_date_shape`: some value is a date string that is no number.
    def dated(value: Any) -> bool:
        return (
            isinstance(value, str)
            and parse_date_ms(value) is not None
            and not NUMERIC.fullmatch(value)
        )

    for doc in docs:
        value: Any = doc
        for part in field.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        items = value if isinstance(value, list) else [value]
        if any(dated(v) for v in items):
            return True
    return False


def metric(kind: str, body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`value_count` (values, not documents; with `missing` a document without one counts 1,
    aggs.rs:4715-4736), `sum` (0.0 when nothing, 4766-4788), `avg`/`min`/`max` (null when
    nothing; a date field adds `value_as_string`, 4742-4835)."""
    field = _field(body)
    if kind == "value_count":
        if field is None:
            return {"value": 0}
        per_doc = [strings(d, field) for d in docs]
        extra = sum(1 for v in per_doc if not v) if "missing" in body else 0
        return {"value": sum(len(v) for v in per_doc) + extra}
    if field is None:
        return {"value": 0.0 if kind == "sum" else None}
    nums = _per_doc(body, docs)
    if kind == "sum":
        return {"value": float(sum(nums))}
    if not nums:
        return {"value": None}
    value = {"avg": sum(nums) / len(nums), "min": min(nums), "max": max(nums)}[kind]
    if _date_shaped(docs, field):
        return {"value": value, "value_as_string": iso_utc(int(value))}
    return {"value": value}


def stats(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    # aggs.rs:4852-4894: count/min/max/avg/sum; with no values min/max/avg are null, sum 0.0.
    nums = _per_doc(body, docs)
    if not nums:
        return {"count": 0, "min": None, "max": None, "avg": None, "sum": 0.0}
    return stats_of(nums)


def stats_of(nums: list[float]) -> dict[str, Any]:
    """count/min/max/avg/sum of values, at least one (also `stats_bucket`'s, aggs.rs)."""
    total = sum(nums)
    return {
        "count": len(nums),
        "min": min(nums),
        "max": max(nums),
        "avg": total / len(nums),
        "sum": total,
    }


def extended_stats(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`run_extended_stats` (aggs.rs:9783-9870): stats plus sum of squares, the population
    variance by raw moments, the sampling one by Bessel's correction, standard deviations and
    bounds at `sigma` (2.0)."""
    nums = _per_doc(body, docs)
    if not nums:
        nulls = dict.fromkeys(["upper", "lower", "upper_population", "lower_population"])
        nulls |= dict.fromkeys(["upper_sampling", "lower_sampling"])
        return {
            **stats(body, docs),
            "sum_of_squares": None,
            "variance": None,
            "variance_population": None,
            "variance_sampling": None,
            "std_deviation": None,
            "std_deviation_population": None,
            "std_deviation_sampling": None,
            "std_deviation_bounds": nulls,
        }
    n, total = len(nums), sum(nums)
    squares, avg = sum(x * x for x in nums), total / n
    var_pop = max(squares / n - avg * avg, 0.0)
    var_samp = var_pop * n / (n - 1) if n > 1 else 0.0
    std, std_samp = math.sqrt(var_pop), math.sqrt(max(var_samp, 0.0))
    sigma = number(body.get("sigma"))
    sigma = 2.0 if sigma is None else sigma
    return {
        **stats(body, docs),
        "sum_of_squares": squares,
        "variance": var_pop,
        "variance_population": var_pop,
        "variance_sampling": var_samp,
        "std_deviation": std,
        "std_deviation_population": std,
        "std_deviation_sampling": std_samp,
        "std_deviation_bounds": {
            "upper": avg + sigma * std,
            "lower": avg - sigma * std,
            "upper_population": avg + sigma * std,
            "lower_population": avg - sigma * std,
            "upper_sampling": avg + sigma * std_samp,
            "lower_sampling": avg - sigma * std_samp,
        },
    }


def cardinality(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`run_cardinality` (aggs.rs:4896-4938): the exact number of distinct values (as strings),
    `missing` one more value for documents without the field."""
    field = _field(body)
    if field is None:
        return {"value": 0}
    missing = body.get("missing")
    placeholder = None if missing is None or isinstance(missing, dict | list) else str(missing)
    distinct: set[str] = set()
    for doc in docs:
        values = strings(doc, field)
        if not values and placeholder is not None:
            distinct.add(placeholder)
        distinct.update(values)
    return {"value": len(distinct)}


def _percent_key(percent: float) -> str:
    # Java's `String.valueOf(double)`: "25.0", "99.9" (aggs.rs:5998-6002).
    return repr(float(percent))


def percentiles(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`run_percentiles` (aggs.rs:5890-6055): one number per document; the default (TDigest)
    interpolates linearly between the sorted values at rank p/100·(n-1); `hdr` takes the
    nearest rank and quantizes as HdrHistogram does. `percents` default 1, 5, 25, 50, 75, 95,
    99; `keyed` (default true) gives `values` as `{"50.0": v}`, false as `[{key, value}]`;
    null values when nothing matched."""
    field = _field(body)
    if field is None:
        return {"values": {}}
    raw = body.get("percents")
    percents = (
        [n for p in raw if (n := number(p)) is not None]
        if isinstance(raw, list)
        else [1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]
    )
    nums = sorted(_per_doc(body, docs))
    hdr = body.get("hdr")

    def at(percent: float) -> float | None:
        if not nums:
            return None
        if hdr is not None:
            return _hdr(nums, percent, hdr)
        rank = percent / 100 * (len(nums) - 1)
        lo = math.floor(rank)
        hi = min(lo + 1, len(nums) - 1)
        frac = rank - lo
        return nums[lo] * (1 - frac) + nums[hi] * frac

    if body.get("keyed", True) is not False:
        return {"values": {_percent_key(p): at(p) for p in percents}}
    return {"values": [{"key": p, "value": at(p)} for p in percents]}


def _hdr(nums: list[float], percent: float, hdr: Any) -> float:
    """The `hdr` branch of `run_percentiles` (aggs.rs:5919-5994): nearest rank, then the
    highest value equivalent to it in an auto-ranged HdrHistogram."""
    digits = hdr.get("number_of_significant_value_digits") if isinstance(hdr, Mapping) else None
    digits = digits if isinstance(digits, int) and not isinstance(digits, bool) else 3
    sub_count = 1
    while sub_count < 2 * 10**digits:
        sub_count <<= 1
    half = sub_count // 2
    magnitude = max(sub_count.bit_length() - 2, 0)
    ratio = 1.0
    if nums[0] > 0 and math.isfinite(nums[0]):
        lowest = 2.0 ** math.floor(math.log2(nums[0]))
        ratio = half / lowest if lowest > 0 else 1.0
    wanted = max(int(percent / 100 * len(nums) + 0.5), 1)
    pick = nums[min(wanted, len(nums)) - 1]
    if pick <= 0 or not math.isfinite(pick):
        return pick
    whole = math.floor(pick * ratio)
    if whole <= 0:
        return pick
    index = 0 if whole < sub_count else max(whole.bit_length() - 1 - magnitude, 0)
    width = 1 << index
    return ((whole & ~(width - 1)) + width - 1) / ratio


def _sort_items(sort: Any) -> list[tuple[str, bool]]:
    items = sort if isinstance(sort, list) else [sort] if isinstance(sort, Mapping | str) else []
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, False))
        elif isinstance(item, Mapping):
            for name, spec in item.items():
                order = spec.get("order") if isinstance(spec, Mapping) else spec
                out.append((name, order == "desc"))
    return out


# aggs.rs:8003-8013: the metadata a top_hits `_source` leaves out.
_HIT_META = frozenset(
    "_id _index _score _version _nested _matched_queries _seq_no _primary_term _ignored".split()
)


def top_hits(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`run_top_hits` (aggs.rs:7553-8085): `size` (3) from `from`; by `_score` descending, or by
    `sort` (numbers, then strings, a missing value last either way); each hit `_id`, `_index`,
    `_score` (null under a sort without `_score` or `track_scores`), `sort`, `_source` (a list
    or a string keeps those top-level fields, `false` drops it); `hits.total` every document in
    the bucket, `max_score` null."""
    size, start = count(body, "size", 3), count(body, "from", 0)
    specs = _sort_items(body.get("sort"))
    ordered = list(docs)
    if not specs:
        ordered.sort(key=lambda d: -float(d.get("_score") or 0.0))
    for name, desc in reversed(specs):
        numbered = [(n, d) for d in ordered if (n := first_number(d, name)) is not None]
        numbered.sort(key=lambda pair: -pair[0] if desc else pair[0])
        textual = [d for d in ordered if first_number(d, name) is None and strings(d, name)]
        absent = [d for d in ordered if first_number(d, name) is None and not strings(d, name)]
        textual.sort(key=lambda d: strings(d, name)[0], reverse=desc)
        ordered = [d for _, d in numbered] + textual + absent
    source = body.get("_source")
    fields = [source] if isinstance(source, str) else source if isinstance(source, list) else None
    scored = not specs or any(n == "_score" for n, _ in specs) or body.get("track_scores") is True
    hits = []
    for doc in ordered[start : start + size]:
        hit: dict[str, Any] = {"_id": doc.get("_id"), "_index": doc.get("_index")}
        hit["_score"] = (doc.get("_score") or 1.0) if scored else None
        if specs:
            hit["sort"] = [
                n
                if (n := first_number(doc, name)) is not None
                else next(iter(strings(doc, name)), None)
                for name, _ in specs
            ]
        if body.get("version") is True:
            hit["_version"] = 1  # aggs.rs:7852-7871, with `_seq_no` and `_primary_term`
        if body.get("seq_no_primary_term") is True:
            seq = doc.get("_seq_no")
            hit["_seq_no"] = seq if isinstance(seq, int) else 0
            hit["_primary_term"] = 1
        named = body.get("docvalue_fields")
        values = {}
        for entry in named if isinstance(named, list) else []:
            wanted = entry.get("field") if isinstance(entry, Mapping) else entry
            value = doc.get(wanted) if isinstance(wanted, str) else None
            if isinstance(wanted, str) and value is not None:  # aggs.rs:7935-7948: as a list
                values[wanted] = value if isinstance(value, list) else [value]
        kept = {k: v for k, v in doc.items() if k not in _HIT_META}
        if fields is not None:
            kept = {f: kept[f] for f in fields if isinstance(f, str) and f in kept}
        if source is not False:
            hit["_source"] = kept
        if values:
            hit["fields"] = values
        hits.append(hit)
    return {
        "hits": {"total": {"value": len(docs), "relation": "eq"}, "max_score": None, "hits": hits}
    }
