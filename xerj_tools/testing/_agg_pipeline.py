"""The sibling pipeline aggregations the stand-in runs: avg_bucket, max_bucket, min_bucket,
sum_bucket and stats_bucket, resolved after their siblings as XERJ resolves them.

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._agg_metrics import stats_of
from ._numbers import number

__all__ = ["SIBLING_PIPELINES", "resolve"]

SIBLING_PIPELINES = frozenset(
    ["avg_bucket", "max_bucket", "min_bucket", "sum_bucket", "stats_bucket"]
)


def _number(value: Any) -> float | None:
    found = number(value)
    return found if found is not None and math.isfinite(found) else None


def _metric(bucket: Mapping[str, Any], path: str) -> float | None:
    """`resolve_metric_path` (aggs.rs:1364-1474), for the forms a model writes: `name` (its
    `value`, or a one-entry `values`), `name.key` and `name[key]` (a percentile or a stats
    field)."""
    if "[" in path and path.endswith("]"):
        base, key = path[:-1].split("[", 1)
        named = bucket.get(base)
        values = named.get("values") if isinstance(named, Mapping) else None
        if isinstance(values, Mapping) and (found := _number(values.get(key))) is not None:
            return found
        return _number(named.get(key)) if isinstance(named, Mapping) else None
    node: Any = bucket
    if "." in path:
        first, rest = path.split(".", 1)
        values = (
            bucket.get(first, {}).get("values") if isinstance(bucket.get(first), Mapping) else None
        )
        if isinstance(values, Mapping):
            for key, value in values.items():
                try:
                    if abs(float(key) - float(rest)) < 1e-6:
                        return _number(value)
                except ValueError:
                    break
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return _number(node)
    node = bucket.get(path)
    if not isinstance(node, Mapping):
        return _number(node)
    if (value := _number(node.get("value"))) is not None:
        return value
    values = node.get("values")
    if isinstance(values, Mapping) and len(values) == 1:
        return _number(next(iter(values.values())))
    return None


def _values(sibling: Any, metric: str | None, gap_policy: str) -> list[tuple[float, Any]]:
    """`collect_bucket_values_with_policy` (aggs.rs:1319-1362): each bucket's metric (its
    `doc_count` without one); an empty bucket's metric is missing; a missing one is skipped,
    or 0 with `insert_zeros`. With the key each came from (`key_as_string`, else `key`)."""
    buckets = sibling.get("buckets") if isinstance(sibling, Mapping) else None
    out: list[tuple[float, Any]] = []
    for bucket in buckets if isinstance(buckets, list) else []:
        if not isinstance(bucket, Mapping):
            continue
        key = bucket.get("key_as_string", bucket.get("key"))
        count = bucket.get("doc_count")
        if metric is None:
            value = _number(count)
        elif not count:
            value = None
        else:
            value = _metric(bucket, metric)
        if value is not None:
            out.append((value, key))
        elif gap_policy == "insert_zeros":
            out.append((0.0, key))
    return out


def resolve(kind: str, body: Mapping[str, Any], siblings: Mapping[str, Any]) -> dict[str, Any]:
    """`resolve_pipeline_agg_with_gap` (aggs.rs:1515-1690): `buckets_path` is `sibling>metric`
    (or `sibling.metric`, or the sibling alone for its doc counts); max and min also name the
    `keys` of the buckets that hold the value; an empty set is null (sum 0.0)."""
    path = body.get("buckets_path")
    if isinstance(path, Mapping):
        path = next(iter(path.values()), "")
    path = path if isinstance(path, str) else ""
    cut = path.find(">") if ">" in path else path.find(".")  # `split_buckets_path`, 1291-1305
    name, metric = (path[:cut], path[cut + 1 :]) if cut >= 0 else (path, None)
    if name not in siblings:
        return {"value": None}
    gap = body.get("gap_policy") if isinstance(body.get("gap_policy"), str) else "skip"
    found = _values(siblings[name], metric, str(gap))
    numbers = [v for v, _ in found]
    if not numbers:
        return {"value": 0.0} if kind == "sum_bucket" else {"value": None}
    if kind == "stats_bucket":
        return stats_of(numbers)
    if kind in ("max_bucket", "min_bucket"):
        value = max(numbers) if kind == "max_bucket" else min(numbers)
        return {"value": value, "keys": [k for v, k in found if abs(v - value) < 1e-9]}
    value = sum(numbers) / len(numbers) if kind == "avg_bucket" else sum(numbers)
    return {"value": value}
