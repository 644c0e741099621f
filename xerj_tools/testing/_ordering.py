"""How the stand-in orders hits and counts them: XERJ's `sort` clauses and `hits.total`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._engine import Index
from ._numbers import number

__all__ = ["hits_total", "sort_specs", "sort_value", "sorted_hits"]

Hit = tuple[float, str, Index]


def _sort_key(value: Any) -> tuple[int, float, str]:
    if (found := number(value)) is not None:
        return (0, found, "")
    return (1, 0.0, "" if value is None else str(value))


def sort_specs(sort: Any) -> list[tuple[str, bool]]:
    """`parse_sort` (es_compat.rs:4966-5071): (field, descending) per clause, in order.

    A string, an object or an array of them; `_score` defaults to descending, anything else to
    ascending; other JSON types are ignored.
    """
    items = sort if isinstance(sort, list) else [sort] if isinstance(sort, (str, Mapping)) else []
    specs: list[tuple[str, bool]] = []
    for item in items:
        if isinstance(item, str):
            specs.append((item, item == "_score"))
        elif isinstance(item, Mapping):
            for name, spec in item.items():
                order = spec.get("order", "asc") if isinstance(spec, Mapping) else spec
                specs.append((name, order == "desc"))
    return specs


def sort_value(hit: Hit, name: str, desc: bool) -> Any:
    if name == "_score":
        return hit[0]
    if name == "_doc":
        return list(hit[2].docs).index(hit[1])
    value = hit[2].docs[hit[1]].get(name)
    if isinstance(value, list):  # the default mode: min ascending, max descending
        values = [v for v in value if v is not None]
        return (max if desc else min)(values, key=_sort_key) if values else None
    return value


def sorted_hits(ranked: list[Hit], specs: list[tuple[str, bool]]) -> list[Hit]:
    """Order by each clause in turn; a document without the field sorts last either way."""
    for name, desc in reversed(specs):
        present = [h for h in ranked if sort_value(h, name, desc) is not None]
        missing = [h for h in ranked if sort_value(h, name, desc) is None]
        present.sort(key=lambda h: _sort_key(sort_value(h, name, desc)), reverse=desc)
        ranked = present + missing
    return ranked


def hits_total(tth: Any, total: int) -> dict[str, Any] | None:
    """`hits.total` (parser.rs:190-206; es_compat.rs:5524-5531, 10356-10440)."""
    if tth is None:
        tth = 10_000  # absent → counted up to 10000, then `gte`
    if tth is False or (type(tth) is int and tth == 0):
        return None  # omitted, not approximated
    cap = tth if type(tth) is int and tth > 0 else None
    if cap is not None and total > cap:
        return {"value": cap, "relation": "gte"}
    return {"value": total, "relation": "eq"}
