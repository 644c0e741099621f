"""Fitting a tool message into a character budget: one entry point, four strategies, and a
``truncated`` block that says what was cut and how to get it.

`fit_result` picks the strategy by name (a tool declares its own; see docs/budget.md):

- ``"hits"``: hits are kept whole while they fit; then long strings inside hits are cut (to the
  longest length that lets every hit fit, never below `MIN_CUT`) with a visible marker
  ``…[+N chars]``; then whole hits are dropped from the end, and ``next`` says where to resume.
- ``"memories"``: the same, for a memory recall's hits (its hint speaks of ``k``).

How to read a cut field whole is the tool's to say (`Advice.refetch`, as
``Tool(advice=Advice(refetch=...))``): the fitter names no tool of its own, since the dispatcher
may not serve it.
- ``"document"``: one document: its metadata (``_index``, ``_id``, ``found``, ...) is kept;
  the longest strings, then the largest arrays of its ``_source`` are cut (`_fit_json`).
- ``"json"``: any JSON: structure kept breadth first, long strings shortened, long arrays
  reduced to their first items with a count of the rest, deep subtrees summarised (`_fit_json`).

Aggregations keep the first buckets of each bucket list (`cap_buckets`, the message's bucket
cap) and count the rest in ``buckets_omitted``.

Whatever the response, the serialized message never exceeds the budget and is never an empty
shell (property tests check both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .._exceptions import ConfigurationError
from .._json import fast_dumps, fast_raw, written
from ._fit_hits import Measured, choose, clean_json, cut_strings, size
from ._fit_json import NextPage, fit_document, fit_json
from ._tokens import Budget

__all__ = [
    "DEFAULT_BUDGET",
    "MIN_BUDGET",
    "MIN_TOKENS",
    "Budget",
    "Fit",
    "cap_buckets",
    "cut_advice",
    "checked_budget",
    "fit_error",
    "fit_message",
    "fit_result",
    "within",
    "written",
]

Fit = Literal["hits", "memories", "document", "json"]
"""How a result is fitted into the budget (a tool's `fit`): a hit list (paged by `Tool.paging`),
a memory list, one document, or any JSON."""

DEFAULT_BUDGET = 12_000
MIN_BUDGET = 1_000
MIN_TOKENS = 250
_FEWER_MEMORIES = "recall with a smaller k to read the memories whole"
_CUT_FIELD = "to read a cut field whole, ask for fewer hits, or for that hit alone"
_NEXT_RESERVE = 220  # room kept for the `truncated` block while choosing what to keep


def _no_page(shown: int) -> None:
    return None


def cut_advice(fit: Fit, refetch: str | None) -> str:
    """What the hint says of fields cut inside hits: the tool's `refetch`, else the strategy's
    own advice, which names no tool."""
    if refetch is not None:
        return refetch
    return _FEWER_MEMORIES if fit == "memories" else _CUT_FIELD


def fit_result(
    payload: dict[str, Any],
    budget: int,
    *,
    fit: Fit,
    next_page: NextPage = _no_page,
    refetch: str | None = None,
) -> dict[str, Any]:
    """`payload` (a tool message's envelope) fitted into `budget` characters by strategy `fit`.

    A payload that fits is returned as it is; an ``ok: false`` one is fitted as an error (its
    first problems kept). `next_page(shown)` gives the arguments that fetch what follows the
    first `shown` items (for example ``{"from": 20}``), or None where the tool cannot page. A
    payload without the list a strategy expects (``hits``) is fitted as ``"json"``. `refetch`:
    how to read a field cut inside a hit whole (`cut_advice`).
    """
    if fit in ("hits", "memories") and payload.get("ok") and isinstance(payload.get("hits"), list):
        # measured hit by hit: a 5 MB answer is never serialized whole
        return _fit_hits(payload, budget, next_page, cut_advice(fit, refetch))[0]
    if isinstance(payload.get("hits"), list):
        payload = {**payload, "hits": clean_json(payload["hits"])[0]}  # see `clean_envelope`
    if size(payload) <= budget:
        return payload
    if not payload.get("ok"):
        return fit_error(payload, budget)
    if fit == "document":
        return fit_document(payload, budget)
    return fit_json(payload, budget, next_page=next_page)


def fit_message(
    payload: dict[str, Any],
    budget: int | Budget,
    *,
    fit: Fit,
    next_page: NextPage = _no_page,
    plain: bool = False,
    refetch: str | None = None,
) -> tuple[dict[str, Any], str]:
    """`fit_result`, and the message it makes (as `dumps` writes it); a budget in tokens as
    `_fit_tokens` fits it. `plain`: the payload holds plain JSON types only, so orjson may
    write it (see `clean_json`).

    Fitted as hits, every hit shown was measured; where each was counted (so that orjson writes
    its numbers as `json` does, see `_measure.measure`), only the rest of the message is
    checked before orjson writes it all."""
    if isinstance(budget, Budget):
        return _fit_tokens(payload, budget, fit, next_page, plain, refetch)
    if not (
        plain
        and fit in ("hits", "memories")
        and payload.get("ok")
        and isinstance(payload.get("hits"), list)
    ):
        fitted = fit_result(payload, budget, fit=fit, next_page=next_page, refetch=refetch)
        return fitted, written(fitted, plain=plain)
    fitted, counted = _fit_hits(payload, budget, next_page, cut_advice(fit, refetch))
    if counted and fast_dumps({k: v for k, v in fitted.items() if k != "hits"}) is not None:
        raw = fast_raw(fitted)
        if raw is not None:
            return fitted, raw.decode()
    return fitted, written(fitted, plain=True)


def checked_budget(value: int | Budget) -> int | Budget:
    """A dispatcher's budget, checked: characters (an int, or ``Budget(chars=...)``, at least
    `MIN_BUDGET`) or ``Budget(tokens=...)`` (at least `MIN_TOKENS`)."""
    if isinstance(value, Budget) and value.chars is not None:
        value = value.chars
    if isinstance(value, Budget):
        if value.tokens is None or value.tokens < MIN_TOKENS:
            raise ConfigurationError(f"a budget in tokens must be at least {MIN_TOKENS} tokens")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_BUDGET:
        raise ConfigurationError(f"a budget must be at least {MIN_BUDGET} characters")
    return value


def within(content: str, limit: int | Budget) -> bool:
    """Whether the serialized message `content` is within `limit`."""
    if isinstance(limit, Budget):
        return limit.count(content) <= (limit.tokens or 0)
    return len(content) <= limit


def _fit_tokens(
    payload: dict[str, Any],
    limit: Budget,
    fit: Fit,
    next_page: NextPage,
    plain: bool,
    refetch: str | None,
) -> tuple[dict[str, Any], str]:
    """`payload` fitted into a budget in tokens, and its serialized form.

    The fitter works in characters: the token room is turned into characters at the rate of
    the message at hand (characters per token, as `limit.count` counts them), the payload is
    fitted to that, and fitted again, smaller, while the result still counts too many tokens
    (at most four times; never below `MIN_BUDGET` characters)."""
    tokens = limit.tokens or MIN_TOKENS
    payload, content = clean_json(payload, plain=plain)
    counted = limit.count(content)
    fitted, chars = payload, len(content)
    for _ in range(4):
        if counted <= tokens or chars <= MIN_BUDGET:
            break
        chars = max(MIN_BUDGET, min(chars - 1, int(len(content) * tokens / counted * 0.98)))
        fitted = fit_result(payload, chars, fit=fit, next_page=next_page, refetch=refetch)
        content = written(fitted, plain=plain)
        counted = limit.count(content)
    return fitted, content


def _fit_hits(
    payload: dict[str, Any], budget: int, next_page: NextPage, refetch: str
) -> tuple[dict[str, Any], bool]:
    """`payload`, a search or recall envelope with a list `hits`, fitted into `budget`
    characters (the ``"hits"`` and ``"memories"`` strategies), and whether every hit in the
    result was counted (`Measured.counted`)."""
    hits = payload.get("hits") if isinstance(payload.get("hits"), list) else []
    assert isinstance(hits, list)
    envelope = {k: v for k, v in payload.items() if k != "hits"}
    base = size({**envelope, "hits": []})
    # Does it fit whole? Measured hit by hit (each hit once, whatever the steps below ask), so
    # a 5 MB response is never serialized whole.
    measured = Measured(hits)
    if base <= budget and measured.all_fit(None, budget - base):
        return {**payload, "hits": measured.hits}, measured.counted  # cleaned when measured
    # The message's length is the envelope's, the hits' (measured) and the `truncated` block's
    # (its own few keys): each choice is sized without copying a hit, and built once.
    own = "truncated" in envelope  # the envelope's own block, which the new one would replace
    rest = {k: v for k, v in envelope.items() if k != "truncated"} if own else envelope
    bare = (size({**rest, "hits": []}) if own else base) - 2
    reserve = _NEXT_RESERVE
    for _ in range(3):
        choice = choose(measured, budget - base - reserve)
        truncated = _truncated(choice.shown, choice.paths_cut(measured), len(hits))
        block = _said(truncated, choice.shown, next_page, refetch) if truncated else None
        tail = block if block is not None else envelope.get("truncated")
        length = bare + choice.size(measured) + (13 + size(tail) if block or own else 0)
        if length <= budget:
            break
        # The `truncated` block took more than the room kept for it: keep its real size.
        reserve = max(reserve + length - budget, size({"truncated": tail}))
    out = {**envelope, "hits": choice.build(measured)}
    if block is not None:
        out["truncated"] = block
    if length > budget:
        return _guarantee(out, budget, next_page, refetch), False
    return out, measured.counted and choice.hits is None


def _truncated(shown: int, cut: list[str], hits: int) -> dict[str, Any]:
    """What was left out of `hits` hits when `shown` are shown with the strings at `cut` cut."""
    truncated: dict[str, Any] = {}
    if shown < hits:
        truncated["hits_omitted"] = hits - shown
    if cut:
        truncated["fields_cut"] = len(cut)
        # by field name: "_source.body" -> "body"; "text" (a memory) -> "text"
        sections = ("_source.", "highlight.", "fields.")
        truncated["cut_fields"] = sorted(
            {p.split(".", 1)[1] if p.startswith(sections) else p for p in cut}
        )
    return truncated


def _said(
    truncated: Mapping[str, Any], shown: int, next_page: NextPage, refetch: str
) -> dict[str, Any]:
    """The `truncated` block with `next` and `hint` (re)computed for `shown` hits.

    `next` always starts at the first hit not shown; with no hit shown there is none, since it
    would repeat the same call.
    """
    out = {k: v for k, v in truncated.items() if k not in ("next", "hint")}
    if out.get("hits_omitted") and shown > 0 and (page := next_page(shown)) is not None:
        out["next"] = dict(page)
    out["hint"] = _hint(out, refetch, shown)
    return out


def _hint(truncated: Mapping[str, Any], refetch: str, shown: int | None = None) -> str:
    parts = []
    if "next" in truncated:
        parts.append("call again with the arguments in `next` to read the hits that were left out")
    elif truncated.get("hits_omitted") and shown == 0:
        parts.append("not even one hit fits in the message; ask for fewer source fields")
    elif truncated.get("hits_omitted"):
        parts.append("ask for fewer results (size or k) to see the rest")
    if truncated.get("fields_cut") and refetch:
        parts.append(refetch)  # the tool's advice (`cut_advice`)
    if "buckets_capped_at" in truncated:
        parts.append(
            "aggregation buckets were capped; ask for fewer buckets or fewer sub-aggregations"
        )
    return "; ".join(parts)


def _guarantee(
    payload: dict[str, Any],
    budget: int,
    next_page: NextPage = _no_page,
    refetch: str = _CUT_FIELD,
) -> dict[str, Any]:
    """The final fitting step: drop hits from the end while the message is too long (the
    `truncated` block can be longer than the room kept for it), then, for envelopes that do not
    fit even without hits (huge aggregations, notes), cap and drop the rest."""
    if size(payload) <= budget:
        return payload
    out = dict(payload)
    truncated = dict(out.get("truncated") or {})
    hits = out.get("hits") if isinstance(out.get("hits"), list) else []
    assert isinstance(hits, list)
    while hits and size(out) > budget:
        hits = hits[:-1]
        truncated["hits_omitted"] = truncated.get("hits_omitted", 0) + 1
        truncated = _said(truncated, len(hits), next_page, refetch)  # `next` follows the cut
        out["hits"], out["truncated"] = hits, truncated
    if "aggregations" in out:
        # Fewer buckets before no buckets: halve the bucket cap until the envelope fits.
        cap = 12
        while cap >= 1 and size(out) > budget:
            out["aggregations"] = cap_buckets(payload["aggregations"], cap)
            truncated["buckets_capped_at"] = cap
            truncated["hint"] = _hint(truncated, refetch)
            out["truncated"] = truncated
            cap //= 2
    for key in ("aggregations", "warnings", "notes", "fusion", "rerank"):
        if size(out) <= budget:
            break
        if key in out:
            del out[key]
            truncated.setdefault("omitted", []).append(key)
            out["truncated"] = truncated
    if size(out) > budget:
        # What is left does not fit even without hits: fit it as any JSON, never an empty shell.
        out = fit_json(out, budget)
    return out


def fit_error(payload: dict[str, Any], budget: int, max_problems: int = 20) -> dict[str, Any]:
    """Fit an ``ok: false`` payload: keep the first problems, shorten long texts."""
    if size(payload) <= budget:
        return payload
    error = dict(payload.get("error") or {})
    problems = error.get("problems")
    if isinstance(problems, list) and len(problems) > max_problems:
        error["problems"] = problems[:max_problems]
        error["problems_omitted"] = len(problems) - max_problems
    out = {**payload, "error": cut_strings(error, 400, "", [])}
    while (
        size(out) > budget
        and isinstance(out["error"].get("problems"), list)
        and out["error"]["problems"]
    ):
        out["error"]["problems"] = out["error"]["problems"][:-1]
        out["error"]["problems_omitted"] = out["error"].get("problems_omitted", 0) + 1
    if size(out) > budget:
        out = cut_strings(out, 100, "", [])
    return out


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
