"""Aggregation buckets kept to a number, the rest counted (a tool message's bucket cap)."""

from __future__ import annotations

from typing import Any

__all__ = ["cap_buckets"]


def cap_buckets(aggregations: Any, max_buckets: int) -> Any:
    """Keep the first `max_buckets` buckets of every bucket list or keyed bucket object (nested
    too); count the rest in `buckets_omitted`.

    A composite's `after_key` names the last bucket XERJ sent (aggs.rs:6736-6748 at e6e8e6a),
    and its next page starts after that key (6509-6593): once buckets are cut it is set to the
    last bucket kept, so paging with it resumes at the first bucket the model did not see."""
    if isinstance(aggregations, list):
        return [cap_buckets(v, max_buckets) for v in aggregations]
    if not isinstance(aggregations, dict):
        return aggregations
    out = {k: cap_buckets(v, max_buckets) for k, v in aggregations.items()}
    buckets = aggregations.get("buckets")
    if isinstance(buckets, (list, dict)) and len(buckets) > max_buckets:
        if isinstance(buckets, list):
            kept: Any = [cap_buckets(b, max_buckets) for b in buckets[:max_buckets]]
            last = kept[-1] if kept else None
            if "after_key" in out and isinstance(last, dict) and "key" in last:
                out["after_key"] = last["key"]
        else:
            kept = {k: cap_buckets(v, max_buckets) for k, v in list(buckets.items())[:max_buckets]}
        out["buckets"] = kept
        already = aggregations.get("buckets_omitted", 0)
        out["buckets_omitted"] = (
            len(buckets) - max_buckets + (already if isinstance(already, int) else 0)
        )
    return out
