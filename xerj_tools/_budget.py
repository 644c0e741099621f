"""Fitting a tool message into a character budget: cut long fields, drop trailing hits, say so.

The order of sacrifice: hits are kept whole while they fit; then long strings inside hits are
cut (to the longest length that lets every hit fit, never below `MIN_CUT`) with a visible marker
``…[+N chars]``; then whole hits are dropped from the end. The ``truncated`` block says what was
cut and how to get the rest. Whatever the response, the serialized message never exceeds the
budget (a property test checks it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DEFAULT_BUDGET", "MIN_BUDGET", "cap_buckets", "fit_error", "fit_payload"]

DEFAULT_BUDGET = 12_000
MIN_BUDGET = 1_000
MIN_CUT = 200  # a cut field keeps at least this many characters
_NEXT_RESERVE = 220  # room kept for the `truncated` block while choosing what to keep


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


def _cut_strings(value: Any, cap: int, path: str, cut: list[str]) -> Any:
    """Copy `value` with every string longer than `cap` cut and marked; record each path cut."""
    if isinstance(value, str):
        if len(value) > cap:
            cut.append(path)
            return value[:cap] + f"…[+{len(value) - cap} chars]"
        return value
    if isinstance(value, dict):
        return {
            k: _cut_strings(v, cap, f"{path}.{k}" if path else k, cut) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_cut_strings(v, cap, path, cut) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def cap_buckets(aggregations: Any, max_buckets: int) -> Any:
    """Keep the first `max_buckets` buckets of every bucket list (nested too); count the rest."""
    if isinstance(aggregations, list):
        return [cap_buckets(v, max_buckets) for v in aggregations]
    if not isinstance(aggregations, dict):
        return aggregations
    out = {k: cap_buckets(v, max_buckets) for k, v in aggregations.items()}
    buckets = aggregations.get("buckets")
    if isinstance(buckets, list) and len(buckets) > max_buckets:
        out["buckets"] = [cap_buckets(b, max_buckets) for b in buckets[:max_buckets]]
        already = aggregations.get("buckets_omitted", 0)
        out["buckets_omitted"] = (
            len(buckets) - max_buckets + (already if isinstance(already, int) else 0)
        )
    return out


def _field_names(paths: list[str]) -> list[str]:
    # "_source.body" -> "body"; "text" (a memory) -> "text"
    names = {
        p.split(".", 1)[1] if p.startswith(("_source.", "highlight.", "fields.")) else p
        for p in paths
    }
    return sorted(names)


def _keep(hits: list[Any], cap: int | None, room: int) -> tuple[list[Any], list[str]]:
    """The longest prefix of `hits` (cut at `cap`) whose serialized size fits in `room`."""
    kept: list[Any] = []
    cut: list[str] = []
    used = 0
    for hit in hits:
        hit_cut: list[str] = []
        shaped = hit if cap is None else _cut_strings(hit, cap, "", hit_cut)
        used += _size(shaped) + (1 if kept else 0)
        if used > room:
            break
        kept.append(shaped)
        cut += hit_cut
    return kept, cut


def fit_payload(
    payload: dict[str, Any],
    budget: int,
    *,
    next_page: Callable[[int], Mapping[str, Any] | None] = lambda shown: None,
    memories: bool = False,
) -> dict[str, Any]:
    """Return `payload` fitted into `budget` characters.

    `next_page(shown)` gives the arguments that fetch the rest after `shown` hits were kept
    (for example ``{"from": 20}``), or None when the tool cannot page.
    """
    hits = payload.get("hits") if isinstance(payload.get("hits"), list) else []
    assert isinstance(hits, list)
    envelope = {k: v for k, v in payload.items() if k != "hits"}
    base = _size({**envelope, "hits": []})
    # Does it fit whole? Measured hit by hit, so a 5 MB response is never serialized whole.
    if base <= budget and len(_keep(hits, None, budget - base)[0]) == len(hits):
        return payload
    reserve = _NEXT_RESERVE
    for _ in range(3):
        kept, cut = _choose(hits, budget - base - reserve)
        out = {**envelope, "hits": kept}
        truncated: dict[str, Any] = {}
        if len(kept) < len(hits):
            truncated["hits_omitted"] = len(hits) - len(kept)
        if cut:
            truncated["fields_cut"] = len(cut)
            truncated["cut_fields"] = _field_names(cut)
        if truncated:
            out["truncated"] = _said(truncated, len(kept), next_page, memories)
        overshoot = _size(out) - budget
        if overshoot <= 0:
            return out
        # The `truncated` block took more than the room kept for it: keep its real size.
        reserve = max(reserve + overshoot, _size({"truncated": out.get("truncated")}))
    return _guarantee(out, budget, next_page, memories)


def _choose(hits: list[Any], room: int) -> tuple[list[Any], list[str]]:
    """The hits to show in `room` characters: whole while they fit; else every hit cut to the
    longest length that lets all fit; else as many as fit cut to `MIN_CUT`; and at least the
    first hit, cut shorter still, when even that one does not fit."""
    kept, cut = _keep(hits, None, room)
    if len(kept) == len(hits):
        return kept, cut
    lo, hi, best = MIN_CUT, max(_longest_string(hits), MIN_CUT), None
    while lo <= hi:
        mid = (lo + hi) // 2
        trial, trial_cut = _keep(hits, mid, room)
        if len(trial) == len(hits):
            best, lo = (trial, trial_cut), mid + 1
        else:
            hi = mid - 1
    kept, cut = best if best is not None else _keep(hits, MIN_CUT, room)
    for cap in (120, 60, 30):  # a page that shows nothing would leave `next` where it was
        if kept or not hits:
            break
        kept, cut = _keep(hits[:1], cap, room)
    return kept, cut


def _said(
    truncated: Mapping[str, Any],
    shown: int,
    next_page: Callable[[int], Mapping[str, Any] | None],
    memories: bool = False,
) -> dict[str, Any]:
    """The `truncated` block with `next` and `hint` (re)computed for `shown` hits.

    `next` always starts at the first hit not shown; with no hit shown there is none, since it
    would repeat the same call.
    """
    out = {k: v for k, v in truncated.items() if k not in ("next", "hint")}
    if out.get("hits_omitted") and shown > 0 and (page := next_page(shown)) is not None:
        out["next"] = dict(page)
    out["hint"] = _hint(out, memories, shown)
    return out


def _hint(truncated: Mapping[str, Any], memories: bool = False, shown: int | None = None) -> str:
    parts = []
    if "next" in truncated:
        parts.append("call again with the arguments in `next` to read the hits that were left out")
    elif truncated.get("hits_omitted") and shown == 0:
        parts.append("not even one hit fits in the message; ask for fewer source fields")
    elif truncated.get("hits_omitted"):
        parts.append("ask for fewer results (size or k) to see the rest")
    if truncated.get("fields_cut") and memories:
        parts.append("recall with a smaller k to read the memories whole")
    elif truncated.get("fields_cut"):
        parts.append(
            "to read a cut field whole, fetch that hit alone with xerj_search "
            "(a query on its _id, source set to the field, size 1)"
        )
    if "buckets_capped_at" in truncated:
        parts.append(
            "aggregation buckets were capped; ask for fewer buckets or fewer sub-aggregations"
        )
    return "; ".join(parts)


def _guarantee(
    payload: dict[str, Any],
    budget: int,
    next_page: Callable[[int], Mapping[str, Any] | None] = lambda shown: None,
    memories: bool = False,
) -> dict[str, Any]:
    """The final fitting step: drop hits from the end while the message is too long (the
    `truncated` block can be longer than the room kept for it), then, for envelopes that do not
    fit even without hits (huge aggregations, notes), cap and drop the rest."""
    if _size(payload) <= budget:
        return payload
    out = dict(payload)
    truncated = dict(out.get("truncated") or {})
    hits = out.get("hits") if isinstance(out.get("hits"), list) else []
    assert isinstance(hits, list)
    while hits and _size(out) > budget:
        hits = hits[:-1]
        truncated["hits_omitted"] = truncated.get("hits_omitted", 0) + 1
        truncated = _said(truncated, len(hits), next_page, memories)  # `next` follows the cut
        out["hits"], out["truncated"] = hits, truncated
    if "aggregations" in out:
        # Fewer buckets before no buckets: halve the bucket cap until the envelope fits.
        cap = 12
        while cap >= 1 and _size(out) > budget:
            out["aggregations"] = cap_buckets(payload["aggregations"], cap)
            truncated["buckets_capped_at"] = cap
            truncated["hint"] = _hint(truncated)
            out["truncated"] = truncated
            cap //= 2
    for key in ("aggregations", "warnings", "notes", "fusion", "rerank"):
        if _size(out) <= budget:
            break
        if key in out:
            del out[key]
            truncated.setdefault("omitted", []).append(key)
            out["truncated"] = truncated
    if _size(out) > budget:
        minimal: dict[str, Any] = {k: out[k] for k in ("ok", "tool") if k in out}
        if isinstance(out.get("total"), int):
            minimal["total"] = out["total"]
        minimal["truncated"] = {
            "omitted": ["everything but the total"],
            "hint": "narrow the request",
        }
        out = _cut_strings(minimal, 100, "", [])
    return out


def fit_error(payload: dict[str, Any], budget: int, max_problems: int = 20) -> dict[str, Any]:
    """Fit an ``ok: false`` payload: keep the first problems, shorten long texts."""
    if _size(payload) <= budget:
        return payload
    error = dict(payload.get("error") or {})
    problems = error.get("problems")
    if isinstance(problems, list) and len(problems) > max_problems:
        error["problems"] = problems[:max_problems]
        error["problems_omitted"] = len(problems) - max_problems
    out = {**payload, "error": _cut_strings(error, 400, "", [])}
    while (
        _size(out) > budget
        and isinstance(out["error"].get("problems"), list)
        and out["error"]["problems"]
    ):
        out["error"]["problems"] = out["error"]["problems"][:-1]
        out["error"]["problems_omitted"] = out["error"].get("problems_omitted", 0) + 1
    if _size(out) > budget:
        out = _cut_strings(out, 100, "", [])
    return out
