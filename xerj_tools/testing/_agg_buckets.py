"""The stand-in's bucket aggregations: terms, histogram, range, filter(s), global and missing,
each with its sub-aggregations per bucket (`date_histogram` is in `_agg_time`, `composite` in
`_agg_composite`).

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``). A
bucket's sub-aggregations are merged into the bucket object after its own keys, as XERJ does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ._agg_fields import (
    Doc,
    as_string,
    field_value,
    matches_filter,
    numbers,
    strings,
    typed_key,
)
from ._numbers import count, number

__all__ = [
    "MAX_BUCKETS",
    "Sub",
    "doc_count",
    "filter_agg",
    "filters",
    "global_agg",
    "histogram",
    "missing",
    "terms",
    "too_many",
]

# `search.max_buckets`, 65 536 unless the node is configured otherwise (aggs.rs:100-124).
MAX_BUCKETS = 65_536

Sub = Callable[[list[Doc]], dict[str, Any]]
"""The sub-aggregations' results over a bucket's documents (`{}` when there are none)."""


def too_many(cap: int) -> dict[str, Any]:
    # The slot marker a runner embeds (aggs.rs:5701-5708 histogram, 4630-4641 date_histogram).
    return {
        "error": f"Trying to create too many buckets. Must be less than or equal to: [{cap}] but "
        "this number of buckets was exceeded. This limit can be set by changing the "
        "[search.max_buckets] cluster level setting.",
        "__error_status__": 400,
    }


def _weight(doc: Doc) -> int:
    # aggs.rs:3706-3716 `doc_count_weight`: a positive `_doc_count` counts that many documents.
    value = doc.get("_doc_count")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def doc_count(docs: list[Doc]) -> int:
    return sum(_weight(d) for d in docs)


def _bucket(head: dict[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    return {**head, **sub(docs)}


# ── terms ──────────────────────────────────────────────────────────────────────


def _order(body: Mapping[str, Any]) -> list[tuple[str, bool]]:
    order = body.get("order")
    items = order if isinstance(order, list) else [order] if isinstance(order, Mapping) else []
    return [(k, v == "asc") for item in items if isinstance(item, Mapping) for k, v in item.items()]


def _metric(sub: Mapping[str, Any] | None, path: str) -> float:
    # aggs.rs:2970-2990 `lookup_agg_metric`: `name`, `name.value`, `a>b`; missing is -inf.
    node: Any = sub
    for part in (p for p in path.replace(">", ".").split(".") if p):
        node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return -math.inf
    if isinstance(node, Mapping):
        node = node.get("value")
    return found if (found := number(node)) is not None else -math.inf


def _terms_sort_key(orders: list[tuple[str, bool]]) -> Callable[[tuple[str, int, Any]], Any]:
    """`cmp_terms_by_orders` (aggs.rs:2936-2968): count descending then key by default; each
    `order` entry in turn (`_count`, `_key` as a string, or a sub-aggregation's value), the key
    last."""
    orders = orders or [("_count", False)]

    class Key:
        def __init__(self, row: tuple[str, int, Any]) -> None:
            self.row = row

        def __lt__(self, other: Key) -> bool:
            a, b = self.row, other.row
            for path, asc in orders:
                if path == "_count":
                    x, y = a[1], b[1]
                elif path == "_key":
                    x, y = a[0], b[0]  # type: ignore[assignment]
                else:
                    x, y = _metric(a[2], path), _metric(b[2], path)  # type: ignore[assignment]
                if x != y:
                    return (x < y) if asc else (x > y)
            return a[0] < b[0]

    return Key


def _size_pipeline(
    rows: list[tuple[str, int, Any]], cap: int | None, shard_size: int | None, min_count: int
) -> tuple[list[tuple[str, int, Any]], int]:
    """`apply_terms_size_pipeline` (aggs.rs:2862-2897): the shard keeps `shard_size` (default
    size·1.5 + 10) buckets, the cut ones counted as other; those under `min_doc_count` dropped
    silently; past `size`, counted as other. `size: 0` keeps all."""
    if cap is None:
        return [r for r in rows if r[1] >= min_count], 0
    keep = max(shard_size if shard_size is not None else cap + cap // 2 + 10, cap)
    other = sum(r[1] for r in rows[keep:])
    final: list[tuple[str, int, Any]] = []
    for row in rows[:keep]:
        if row[1] < min_count:
            continue
        if len(final) >= cap:
            other += row[1]
        else:
            final.append(row)
    return final, other


def terms(
    body: Mapping[str, Any], docs: list[Doc], all_docs: list[Doc], sub: Sub, has_sub: bool
) -> dict[str, Any]:
    """`run_terms` (aggs.rs:2524-2860): values counted as strings (`_doc_count` weighting),
    `missing` a placeholder key, `min_doc_count: 0` adding the other documents' terms at 0,
    `include`/`exclude` as a list of terms, `order`, `size` (10; 0 is all), `shard_size`; keys
    typed by `typed_key`."""
    field = body.get("field")
    if not isinstance(field, str):
        return {"buckets": []}
    cap = count(body, "size", 10) or None
    missing = body.get("missing")
    placeholder = (
        None if isinstance(missing, dict | list) or missing is None else as_string(missing)
    )
    counts: dict[str, int] = {}

    def add(term: str, weight: int) -> None:
        if term in counts or len(counts) < MAX_BUCKETS:  # aggs.rs:2561-2580
            counts[term] = counts.get(term, 0) + weight

    for doc in docs:
        values = strings(doc, field)
        if not values and placeholder is not None:
            add(placeholder, _weight(doc))
        for term in values:
            add(term, _weight(doc))
    min_count = count(body, "min_doc_count", 1)
    if min_count == 0:
        for doc in all_docs:
            for term in strings(doc, field):
                add(term, 0)
    include, exclude = body.get("include"), body.get("exclude")
    listed = {as_string(v) for v in include} if isinstance(include, list) else None
    barred = {as_string(v) for v in exclude} if isinstance(exclude, list) else set()
    candidates = [
        (k, c) for k, c in counts.items() if (listed is None or k in listed) and k not in barred
    ]

    def members(key: str) -> list[Doc]:
        if key == placeholder:
            return [d for d in docs if not strings(d, field)]
        return [d for d in docs if key in strings(d, field)]

    orders = _order(body)
    needs_sub = has_sub or any(p not in ("_count", "_key") for p, _ in orders)
    rows = [(k, c, sub(members(k)) if needs_sub else None) for k, c in candidates]
    rows.sort(key=_terms_sort_key(orders))
    shard = body.get("shard_size")
    shard_size = shard if isinstance(shard, int) and not isinstance(shard, bool) else None
    kept, other = _size_pipeline(rows, cap, shard_size, min_count)
    buckets = []
    for key, n, subs in kept:
        typed, as_text = typed_key(key)
        head: dict[str, Any] = {"key": typed, "doc_count": n}
        if as_text is not None:
            head["key_as_string"] = as_text
        buckets.append({**head, **(subs if subs is not None else sub(members(key)))})
    return {"doc_count_error_upper_bound": 0, "sum_other_doc_count": other, "buckets": buckets}


# ── histogram ──────────────────────────────────────────────────────────────────


def _bound(body: Mapping[str, Any], name: str, end: str) -> float | None:
    bounds = body.get(name)
    return number(bounds.get(end)) if isinstance(bounds, Mapping) else None


def histogram(body: Mapping[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_histogram` (aggs.rs:5590-5793): buckets keyed floor((v - offset) / interval), a
    document without the field counted at `missing` (5621-5640); with `min_doc_count` 0 (the
    default) or `extended_bounds`, every key from the lowest to the highest, the extended bound
    replacing the data's end where given (5681-5716); `hard_bounds` then clip (5719-5723),
    `min_doc_count` filters (5725-5732); an integral key is printed as an int; `keyed` makes
    the buckets an object."""
    field = body.get("field")
    if not isinstance(field, str):
        return {"buckets": []}
    interval = number(body.get("interval"))
    if interval is None or interval <= 0:
        return {"error": "histogram requires a positive `interval`"}
    offset = number(body.get("offset")) or 0.0
    min_doc_count = count(body, "min_doc_count", 0)
    missing = number(body.get("missing"))
    members: dict[int, list[Doc]] = {}
    for doc in docs:
        nums = numbers(doc, field)
        if not nums and missing is not None:
            nums = [missing]
        for key in {math.floor((n - offset) / interval) for n in nums}:
            members.setdefault(key, []).append(doc)
    ext_min, ext_max = (_bound(body, "extended_bounds", end) for end in ("min", "max"))
    if not members and ext_min is None:
        keys: list[int] = []
    elif min_doc_count > 0 and ext_min is None:
        keys = sorted(members)
    else:
        low = math.floor((ext_min - offset) / interval) if ext_min is not None else min(members)
        high = math.floor((ext_max - offset) / interval) if ext_max is not None else max(members)
        if high - low > MAX_BUCKETS:
            return too_many(MAX_BUCKETS)  # filling the gaps would pass the cap (5681-5708)
        keys = list(range(low, high + 1))
    hard_min, hard_max = (_bound(body, "hard_bounds", end) for end in ("min", "max"))
    if hard_min is not None and hard_max is not None:
        lo = math.floor((hard_min - offset) / interval)
        hi = math.floor((hard_max - offset) / interval)
        keys = [k for k in keys if lo <= k <= hi]
    buckets: list[tuple[str, dict[str, Any]]] = []
    for key in keys:
        inside = members.get(key, [])
        if min_doc_count > 0 and len(inside) < min_doc_count:
            continue
        actual = key * interval + offset
        shown: Any = int(actual) if float(actual).is_integer() else actual
        bucket = _bucket({"key": shown, "doc_count": doc_count(inside)}, inside, sub)
        buckets.append((as_string(shown), bucket))
    if body.get("keyed") is True:
        return {"buckets": dict(buckets)}
    return {"buckets": [b for _, b in buckets]}


# ── filter, filters, global, missing ───────────────────────────────────────────


def filter_agg(query: Any, docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_filter` (aggs.rs:4942-4984): `{doc_count, …sub-aggregations}` over the documents
    `matches_filter` admits."""
    inside = [d for d in docs if matches_filter(d, query)]
    return _bucket({"doc_count": doc_count(inside)}, inside, sub)


def filters(body: Mapping[str, Any], docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_filters` (aggs.rs:4986-5077): named filters give an object of buckets (`keyed`
    defaults to true; false gives an array with `key`), an array gives an array."""
    named = body.get("filters")
    keyed = body.get("keyed") if isinstance(body.get("keyed"), bool) else True
    if isinstance(named, Mapping):
        out = {name: filter_agg(query, docs, sub) for name, query in named.items()}
        if keyed:
            return {"buckets": out}
        return {"buckets": [{"key": name, **bucket} for name, bucket in out.items()]}
    if isinstance(named, list):
        return {"buckets": [filter_agg(query, docs, sub) for query in named]}
    return {"buckets": {}}


def global_agg(all_docs: list[Doc], sub: Sub) -> dict[str, Any]:
    """`run_global` (aggs.rs:10145-10160): every document, whatever the query matched (its
    `doc_count` counts documents, not `_doc_count`)."""
    return {"doc_count": len(all_docs), **sub(all_docs)}


def missing(body: Mapping[str, Any], docs: list[Doc]) -> dict[str, Any]:
    """`run_missing` (aggs.rs:5563-5588): documents whose field is absent or null; 0 when the
    aggregation sets its own `missing`; no sub-aggregations."""
    field = body.get("field")
    if not isinstance(field, str) or "missing" in body:
        return {"doc_count": 0}
    return {"doc_count": sum(1 for d in docs if field_value(d, field) is None)}
