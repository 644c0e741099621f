"""Index expressions held against the cluster's listing: patterns XERJ cannot glob, resolved here;
aliases judged by the indices behind them; hits from indices the policy denies, left out.

XERJ (1.0.0-rc.4, engine/crates/xerj-api/src at e6e8e6a) globs an index pattern with
`glob_match_simple` (es_compat.rs:16552-16563): ``*`` alone, one trailing ``*`` (a prefix) or one
leading ``*`` (a suffix). Anything else with a ``*`` in it (``logs-*-2026``, ``d*s``,
``*logs*``) is compared literally, and a selector with a ``*`` skips the names it cannot find
(es_compat.rs:5627-5642, 7366-7387), so the search answers 200 with no hits for indices that exist.
Such a part is resolved here against the listing's index names (XERJ expands a pattern over its
indices only, not aliases: es_compat.rs:5627-5631, engine.rs:1036-1048), each name held to the
policy, and the names are sent instead.

A search or a document lookup on an alias reads the alias's first backing index (engine.rs:956-967
`get_index`), and a hit carries that index's name in `_index`. The policy judges the names a model
writes, so an alias of a denied index (``mem`` -> ``.xerj-memory-b``) would pass it: an alias
is judged by the indices ``_resolve`` lists behind it (es_compat.rs:15839-15855), and every hit's
`_index` (a document's) is held to the policy before the model reads it. XERJ also lists aliases
at ``GET /_cat/aliases`` (router.rs:229, es_compat.rs:17265-17288: text ``<alias> <index> - - - -``)
and ``GET /_alias`` (router.rs:428-432); ``_resolve`` is read because the listing asks it anyway,
and it names indices and aliases in one JSON answer.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._exceptions import ArgumentsError, EngineError, ToolCallError
from .._http._models import HttpRequest, Outcome
from .._message._format import error_payload
from .._problems import Problem
from ..tools._listing import IndexListing, Listing, read_listing
from ._policy import Policy, PolicyDenied

if TYPE_CHECKING:
    from ..tools import Tool

Steps = Generator[HttpRequest, tuple[Outcome, int], Any]

__all__ = [
    "MAX_RESOLVED",
    "alias_refusal",
    "checked_answer",
    "guards",
    "resolved_request",
    "plain_names",
    "resolve_expression",
    "unglobbable",
    "withhold_denied",
]

MAX_RESOLVED = 100
"""The most index names one pattern is resolved to; past it the model is asked for a narrower one."""

RULE = "XERJ globs only `*`, `prefix*` and `*suffix`"


def unglobbable(part: str) -> bool:
    """Whether XERJ would compare index pattern `part` literally although it holds a ``*``."""
    if "*" not in part or part == "*":
        return False
    if part.endswith("*"):
        return "*" in part[:-1]
    if part.startswith("*"):
        return "*" in part[1:]
    return True


def _matches(pattern: str, name: str) -> bool:
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), name, re.DOTALL) is not None


def resolve_expression(
    expression: str, listing: Listing | None, policy: Policy
) -> tuple[str | None, list[str]] | str:
    """`expression` with each part XERJ cannot glob replaced by the allowed indices it matches.

    Returns ``(expression, notes)`` (expression None when nothing at all is left to search), or
    the reason it cannot be resolved, for the model."""
    parts, notes = [], []
    for part in expression.split(","):
        if not unglobbable(part) or part.startswith("-"):
            parts.append(part)
            continue
        if ":" in part:
            return f"{part!r}: {RULE}, and the indices of a remote cluster cannot be listed here"
        if listing is None:
            return (
                f"{part!r}: {RULE}, and the index list could not be read to resolve it here; "
                "name the indices, or use a prefix* or *suffix pattern"
            )
        found = [n for n in listing.indices if _matches(part, n) and policy.allows_index(n)]
        if len(found) > MAX_RESOLVED:
            return (
                f"{part!r} matches {len(found)} indices, more than the {MAX_RESOLVED} one request "
                f"names; {RULE}: use a narrower pattern, or a prefix* or *suffix one"
            )
        if found:
            notes.append(f"{part!r} was resolved here to {', '.join(found)} ({RULE})")
        else:
            notes.append(f"no index this agent may search matches {part!r} ({RULE})")
        parts += [n for n in found if n not in parts]
    searched = [p for p in parts if not p.startswith("-")]
    return (",".join(parts) if searched else None), notes


def plain_names(expression: str) -> list[str]:
    """The parts of an index expression that name one index or alias (no pattern, exclusion,
    remote cluster or ``_all``)."""
    return [
        p
        for p in expression.split(",")
        if p and "*" not in p and ":" not in p and not p.startswith("-") and p != "_all"
    ]


def alias_refusal(names: Iterable[str], listing: Listing, policy: Policy) -> str | None:
    """Why one of `names` may not be searched: it is an alias with an index behind it that the
    policy denies. The denied index is not named (the policy keeps it from the model)."""
    for name in names:
        targets = listing.aliases.get(name, ())
        if any(not policy.allows_index(t) for t in targets):
            return (
                f"index {name!r} is an alias of an index this agent may not search; "
                "name an allowed index"
            )
    return None


def withhold_denied(payload: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """Leave out the hits whose `_index` the policy denies. With them go the total and the
    aggregations, which counted their documents; a note says so, without a count."""
    hits = payload.get("hits")
    if not isinstance(hits, list):
        return payload
    kept = [
        h
        for h in hits
        if not (isinstance(h, dict) and isinstance(h.get("_index"), str))
        or policy.allows_index(h["_index"])
    ]
    if len(kept) == len(hits):
        return payload
    out = {k: v for k, v in payload.items() if k not in ("total", "total_relation", "aggregations")}
    out["hits"] = kept
    note = (
        "hits from indices this agent may not search were left out, and with them the total "
        "and any aggregations, which counted them"
    )
    out["notes"] = [*payload.get("notes", []), note]
    return out


def guards(policy: Policy) -> bool:
    """Whether the policy could deny an index at all (else no alias needs judging)."""
    return bool(policy.deny_indices) or tuple(policy.allow_indices) != ("*",)


def _expressions(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, str]:
    return {
        key: value
        for key in tool.index_arguments(arguments)
        if isinstance(value := arguments.get(key), str)
    }


def resolved_request(
    cache: IndexListing,
    policy: Policy,
    tool: Tool,
    arguments: Mapping[str, Any],
    request: HttpRequest,
    cluster: str,
) -> Steps:
    """Return the request to send (its index patterns resolved where XERJ cannot glob them), or
    the `ToolCallError` to answer instead. A listing already at hand refuses a denied alias now."""
    expressions = _expressions(tool, arguments)
    names = [n for e in expressions.values() for n in plain_names(e)]
    known = cache.get(cluster) if guards(policy) and names else None
    if known is not None and (reason := alias_refusal(names, known, policy)) is not None:
        return PolicyDenied(reason, details={"refused": "index"})
    if not any(unglobbable(p) for e in expressions.values() for p in e.split(",")):
        return request
    listing = yield from read_listing(cache, cluster)
    changed, notes = dict(arguments), list[str]()
    for key, expression in expressions.items():
        outcome = resolve_expression(expression, listing, policy)
        if isinstance(outcome, str):
            return ArgumentsError(outcome, problems=(Problem(f"$.{key}", outcome),))
        resolved, said = outcome
        notes += said
        if resolved is None:
            allowed = [n for n in (listing.names if listing else []) if policy.allows_index(n)]
            return EngineError(
                "; ".join(said) + "; nothing was sent",
                code="index_not_found",
                hint="Use one of the indices listed in `indices`, or a prefix* or *suffix pattern.",
                details={"indices": allowed[:50]} if allowed else {},
            )
        changed[key] = resolved
    try:
        rebuilt = tool.build(changed)
    except ToolCallError as exc:
        return exc
    return replace(rebuilt, notes=(*request.notes, *notes))


def checked_answer(
    cache: IndexListing,
    policy: Policy,
    tool: Tool,
    arguments: Mapping[str, Any],
    payload: dict[str, Any],
    cluster: str,
) -> Steps:
    """`payload` as the model may read it: a document from a denied index, or any answer through an
    alias of one, is refused whole; hits from a denied index are left out (`withhold_denied`).

    A name is taken for an index, not an alias, when a hit came back from it; any other name of
    the call is looked up in the listing (cached; asked for only then, and only when the answer
    holds anything at all: a hit, a count above 0, aggregations)."""
    if payload.get("ok") is not True or not guards(policy):
        return payload
    index = payload.get("_index")
    if payload.get("found") is True and isinstance(index, str) and not policy.allows_index(index):
        said = (
            "the document is in an index this agent may not read (the name given is an alias of it)"
        )
        return error_payload(PolicyDenied(said, details={"refused": "index"}))
    hits = payload.get("hits")
    if not isinstance(hits, list):
        return payload
    total = payload.get("total")
    if not hits and not payload.get("aggregations") and not (isinstance(total, int) and total > 0):
        return payload  # nothing came from any index: no name needs judging
    seen = {h.get("_index") for h in hits if isinstance(h, dict)}
    names = [n for e in _expressions(tool, arguments).values() for n in plain_names(e)]
    if unverified := [n for n in names if n not in seen]:
        listing = yield from read_listing(cache, cluster)
        if listing is not None and (reason := alias_refusal(unverified, listing, policy)):
            whole = PolicyDenied(
                f"{reason}; nothing of its answer is shown", details={"refused": "index"}
            )
            return error_payload(whole)
    return withhold_denied(payload, policy)
