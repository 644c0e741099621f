"""Index expressions resolved against a listing and held to the policy: pure, no I/O.

The rules, and what XERJ does with each kind of name, are in `_index_guard`'s docstring; the
listing is read by the drivers through `_index_guard.concrete_request`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ArgumentsError, EngineError, ToolCallError
from .._problems import Problem, json_path
from ..tools._listing import Listing
from ._policy import Policy, PolicyDenied

__all__ = [
    "MAX_RESOLVED", "RULE", "Resolution", "allowed_behind", "guards", "needs_listing", "offered",
    "resolve", "unglobbable",
]  # fmt: skip

BodyNames = tuple[tuple[tuple[str | int, ...], str], ...]

MAX_RESOLVED = 100
"""The most concrete index names one request is given; past it the model is asked for fewer."""

RULE = "XERJ globs only `*`, `prefix*` and `*suffix`"
_SHOWN = 10  # names listed in one note


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


def _glob_match_simple(pattern: str, name: str) -> bool:
    # es_compat.rs:16552-16563
    if pattern in ("*", "_all"):
        return True
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return name.endswith(pattern[1:])
    return pattern == name


def _wild(part: str) -> bool:
    return part == "_all" or "*" in part


def _listed(names: Sequence[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def guards(policy: Policy) -> bool:
    """Whether the policy could deny an index at all."""
    return bool(policy.deny_indices) or tuple(policy.allow_indices) != ("*",)


def allowed_behind(listing: Listing, policy: Policy, alias: str, index: str) -> bool:
    """Whether `index`, reached through alias `alias`, may be read: it is allowed, or it is a
    backing index of data stream `alias` and the stream's name is allowed."""
    return policy.allows_index(index) or (listing.stream(alias) and policy.allows_index(alias))


def offered(listing: Listing | None, policy: Policy) -> list[str]:
    """The names an agent may be shown: allowed indices, and the aliases (data streams) whose
    name and every index behind it are allowed."""
    if listing is None:
        return []
    shown = [n for n in listing.indices if policy.allows_index(n)]
    for alias, behind in listing.aliases.items():
        if policy.allows_index(alias) and all(
            allowed_behind(listing, policy, alias, t) for t in behind
        ):
            shown.append(alias)
    return sorted(set(shown))


@dataclass
class Resolution:
    values: dict[str, Any] = field(default_factory=dict)
    renames: dict[tuple[str | int, ...], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reached: dict[str, tuple[str, ...]] = field(default_factory=dict)
    authorised: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)
    error: ToolCallError | None = None


def needs_listing(expression: str) -> bool:
    """Whether an expression holds anything but patterns XERJ globs itself (and remote names)."""
    parts = expression.split(",")
    for i, part in enumerate(parts):
        if not part or (":" in part and not unglobbable(part)):
            continue
        if (part.startswith("-") and i > 0) or unglobbable(part) or not _wild(part):
            return True
    return False


def _unverifiable(
    name: str, listing: Listing | None = None, policy: Policy | None = None
) -> PolicyDenied:
    why = "could not be read" if listing is None else "names no alias (`_cat/indices`)"
    return PolicyDenied(
        f"index {name!r} could not be checked: the node's index list {why}, so an alias cannot "
        "be told from an index; nothing was sent. Name an index it lists",
        details={"refused": "index", **(_offer(listing, policy) if policy else {})},
    )


def _alias_refusal(name: str) -> PolicyDenied:
    return PolicyDenied(
        f"index {name!r} is an alias of an index this agent may not search; name an allowed index",
        details={"refused": "index"},
    )


def _expand(
    expression: str,
    listing: Listing | None,
    policy: Policy,
    single: bool,
    out: Resolution,
) -> tuple[list[str], list[str]] | str | ToolCallError | None:
    """(names to send, names reached) for one expression; a reason for the model (str); a
    refusal; or None when it goes as written (no listing and nothing to protect)."""
    parts = [p for p in expression.split(",") if p]
    exclusions = [p[1:] for i, p in enumerate(parts) if p.startswith("-") and i > 0]
    tolerant = any(_wild(p) for p in parts if not p.startswith("-"))
    names: list[str] = []
    reached: list[str] = []

    def add(name: str, *, written: bool) -> None:
        if name not in names:
            names.append(name)
            if not written:
                reached.append(name)

    for i, part in enumerate(parts):
        if part.startswith("-") and i > 0:
            continue
        if ":" in part:
            if unglobbable(part):
                return (
                    f"{part!r}: {RULE}, and the indices of a remote cluster cannot be listed here"
                )
            if exclusions:
                return (
                    f"{part!r}: XERJ has no `-` exclusion, and the indices of a remote cluster "
                    "cannot be listed here to apply it; name the indices"
                )
            add(part, written=True)  # the policy allowed the remote cluster as written
            continue
        if _wild(part) and not unglobbable(part) and not exclusions:
            add(part, written=True)  # XERJ globs it over its index names
            continue
        if listing is None:
            if guards(policy) and not _wild(part):
                return _unverifiable(part)
            if not _wild(part) and not exclusions:
                add(part, written=True)
                continue
            why = f"{RULE}" if unglobbable(part) else "XERJ has no `-` exclusion"
            return (
                f"{part!r}: {why}, and the index list could not be read to resolve it here; "
                "name the indices, or use a prefix* or *suffix pattern"
            )
        if _wild(part):
            match = _matches if unglobbable(part) else _glob_match_simple
            found = [n for n in listing.indices if match(part, n) and policy.allows_index(n)]
            if unglobbable(part):
                if found:
                    out.notes.append(f"{part!r} was resolved here to {_listed(found)} ({RULE})")
                else:
                    out.notes.append(f"no index this agent may search matches {part!r} ({RULE})")
            for n in found:
                add(n, written=False)
            continue
        if part in listing.index_set:
            add(part, written=True)
            continue
        behind = listing.aliases.get(part)
        if behind is not None:
            if not all(allowed_behind(listing, policy, part, t) for t in behind) or not behind:
                return _alias_refusal(part)
            out.authorised.update(behind)
            read = list(behind[:1]) if single else list(behind)
            kind = "a data stream" if listing.stream(part) else "an alias"
            if not single:
                out.notes.append(
                    f"{part!r} is {kind} of {_listed(read)}; "
                    + ("that index was" if len(read) == 1 else "all of them were")
                    + " read in its place"
                )
            for n in read:
                add(n, written=False)
            continue
        out.unknown.append(part)
        if not listing.knows_aliases and guards(policy):
            return _unverifiable(part, listing, policy)
        if not listing.knows_aliases:
            add(part, written=True)
        elif tolerant:
            out.notes.append(
                f"no index or alias is named {part!r}; it was skipped, as XERJ skips a "
                "missing name in an expression with a wildcard"
            )
        else:
            return EngineError(
                f"no such index [{part}]; nothing was sent",
                code="index_not_found",
                hint="Use one of the indices listed in `indices`, or a pattern.",
                details=_offer(listing, policy),
            )
    if exclusions:
        assert listing is not None  # without one an exclusion returned above
        left = []
        for name in names:
            if not any(_matches(x, name) or name in listing.aliases.get(x, ()) for x in exclusions):
                left.append(name)
        dropped = [n for n in names if n not in left]
        written = ", ".join(repr("-" + x) for x in exclusions)
        out.notes.append(
            f"{written} applied here: XERJ has no `-` exclusion (it reads '-name' as an index "
            f"name), so the indices were listed and "
            + (f"{_listed(dropped)} left out" if dropped else "none of them matched")
        )
        names = left
        reached = [n for n in reached if n in left]
    if len(names) > MAX_RESOLVED:
        return (
            f"{expression!r} stands for {len(names)} indices, more than the {MAX_RESOLVED} one "
            "request names; name fewer, or use a narrower pattern"
        )
    return names, reached


def _offer(listing: Listing | None, policy: Policy) -> dict[str, Any]:
    names = offered(listing, policy)[:50]
    return {"indices": names} if names else {}


def resolve(
    expressions: Mapping[str, str | list[str]],
    body: BodyNames,
    listing: Listing | None,
    policy: Policy,
    single: bool,
) -> Resolution:
    out = Resolution()
    for key, value in expressions.items():
        sent: list[str] = []
        reached: list[str] = []
        for expression in [value] if isinstance(value, str) else value:
            got = _expand(expression, listing, policy, single, out)
            if got is None:
                sent.append(expression)
                continue
            if isinstance(got, str):
                out.error = ArgumentsError(got, problems=(Problem(f"$.{key}", got),))
                return out
            if isinstance(got, ToolCallError):
                out.error = got
                return out
            names, by = got
            if not names:
                said = "; ".join(out.notes) or f"{expression!r} leaves no index to search"
                out.error = EngineError(
                    f"{said}; nothing was sent",
                    code="index_not_found",
                    hint="Use one of the indices listed in `indices`, or a prefix* or *suffix pattern.",
                    details=_offer(listing, policy),
                )
                return out
            sent += [n for n in names if n not in sent]
            reached += by
        out.values[key] = ",".join(sent) if isinstance(value, str) else sent
        if reached:
            out.reached[key] = tuple(reached)
    for keys, name in body:
        where = json_path(keys)
        if listing is None:
            if guards(policy):
                out.error = _unverifiable(name)
                return out
            continue
        if name in listing.index_set:
            continue
        behind = listing.aliases.get(name)
        if behind:
            if not all(allowed_behind(listing, policy, name, t) for t in behind):
                refusal = _alias_refusal(name)
                out.error = PolicyDenied(f"{where}: {refusal.reason}", details=refusal.details)
                return out
            out.renames[keys] = behind[0]  # what XERJ's lookup reads (`get_index`)
            out.authorised.add(behind[0])
            out.notes.append(
                f"{where}: {name!r} is an alias; its first index {behind[0]!r} was named"
            )
            continue
        out.unknown.append(name)
        if not listing.knows_aliases:
            if guards(policy):
                out.error = _unverifiable(name, listing, policy)
                return out
            continue
        said = f"{where}: no index or alias is named {name!r}, so the lookup could find nothing"
        out.error = ArgumentsError(said, problems=(Problem(where, said),))
        return out
    return out
