"""The stand-in's aggregations: the dispatch of XERJ's `aggs.rs` and the too-many-buckets refusal
(the aggregations themselves are in `_agg_buckets`, `_agg_time`, `_agg_composite` and
`_agg_metrics`).

Citations are `engine/crates/xerj-engine/src/aggs.rs` at e6e8e6a (see ``CONTRACT.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import _agg_buckets as buckets
from . import _agg_metrics as metrics
from ._agg_buckets import MAX_BUCKETS
from ._agg_composite import composite
from ._agg_fields import Doc
from ._agg_pipeline import SIBLING_PIPELINES, resolve
from ._agg_range import range_agg
from ._agg_time import date_histogram

__all__ = ["MAX_BUCKETS", "run_aggs", "too_many_buckets"]


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


# Types `execute_agg_with_all_cached` dispatches (aggs.rs:2081-2170) that this stand-in does not
# run: refused in the slot with a reason naming the stand-in, not reported as unknown to XERJ.
_NOT_SERVED = frozenset(
    "variable_width_histogram significant_terms significant_text sampler random_sampler "
    "adjacency_matrix geohash_grid geo_distance multi_terms rare_terms ip_prefix geotile_grid "
    "diversified_sampler time_series auto_date_histogram geo_bounds geo_centroid "
    "median_absolute_deviation matrix_stats string_stats boxplot top_metrics nested "
    "reverse_nested derivative moving_avg "
    "cumulative_sum bucket_selector bucket_sort bucket_script percentiles_bucket "
    "serial_diff moving_fn extended_stats_bucket date_range percentile_ranks ip_range "
    "scripted_metric".split()
)


def _kind(spec: Mapping[str, Any]) -> str | None:
    return next((k for k in spec if k not in ("aggs", "aggregations", "meta")), None)


def _one(name: str, spec: Any, docs: list[Doc], all_docs: list[Doc]) -> dict[str, Any]:
    """`execute_agg_with_all_cached` (aggs.rs:2051-2172) for one named aggregation."""
    if not isinstance(spec, Mapping):
        return {"error": "aggregation body must be an object"}
    kind = _kind(spec)
    if kind is None:
        return {"error": f"no aggregation type found in '{name}'"}
    body = spec[kind]
    nested = spec.get("aggs", spec.get("aggregations"))
    has_sub = isinstance(nested, Mapping)

    def sub(bucket_docs: list[Doc]) -> dict[str, Any]:
        return run_aggs(nested, bucket_docs, all_docs) if has_sub else {}

    params = body if isinstance(body, Mapping) else {}
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "terms": lambda: buckets.terms(params, docs, all_docs, sub, has_sub),
        "date_histogram": lambda: date_histogram(params, docs, sub),
        "histogram": lambda: buckets.histogram(params, docs, sub),
        "range": lambda: range_agg(params, docs, sub),
        "filter": lambda: buckets.filter_agg(body, docs, sub),
        "filters": lambda: buckets.filters(params, docs, sub),
        "composite": lambda: composite(params, docs, sub),
        "global": lambda: buckets.global_agg(all_docs, sub),
        "missing": lambda: buckets.missing(params, docs),
        "stats": lambda: metrics.stats(params, docs),
        "extended_stats": lambda: metrics.extended_stats(params, docs),
        "cardinality": lambda: metrics.cardinality(params, docs),
        "percentiles": lambda: metrics.percentiles(params, docs),
        "top_hits": lambda: metrics.top_hits(params, docs),
    }
    if kind in runners:
        return runners[kind]()
    if kind in ("avg", "min", "max", "sum", "value_count"):
        return metrics.metric(kind, params, docs)
    if kind in _NOT_SERVED:
        return {"error": f"the stand-in does not implement aggregation type '{kind}'"}
    # aggs.rs:2172: an unknown type is not a 400; its slot carries the error, under 200.
    return {"error": f"unsupported aggregation type '{kind}'"}


def run_aggs(aggs: Mapping[str, Any], docs: list[Doc], all_docs: list[Doc]) -> dict[str, Any]:
    """`aggregations` for `aggs` over the matching documents (`run_aggs_with_all`,
    aggs.rs:165-196): each named aggregation in order, its `meta` echoed into its result.
    `all_docs` is every document of the indices searched (`global`, `min_doc_count: 0`);
    the documents carry `_id`, `_index` and `_score` as XERJ's do (index.rs:9818-9830)."""
    out: dict[str, Any] = {}
    pipelines: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for name, spec in aggs.items():
        kind = _kind(spec) if isinstance(spec, Mapping) else None
        if kind in SIBLING_PIPELINES:
            body = spec[kind]
            pipelines[name] = (kind, body if isinstance(body, Mapping) else {})
            out[name] = {}  # resolved after its siblings, in its place (aggs.rs:199-245)
            continue
        out[name] = _one(name, spec, docs, all_docs)
    for name, (kind, body) in pipelines.items():
        out[name] = resolve(kind, body, out)
    for name, spec in aggs.items():
        if isinstance(spec, Mapping) and "meta" in spec and isinstance(out[name], dict):
            out[name]["meta"] = spec["meta"]  # echoed into the result (aggs.rs:180-184)
    return out
