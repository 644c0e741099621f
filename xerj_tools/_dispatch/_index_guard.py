"""Index expressions resolved against the cluster's listing, then held to the policy, then sent
as the concrete indices they stand for.

What XERJ (1.0.0-rc.4, engine/crates/xerj-api/src at e6e8e6a) does with the names of a search:

- It keeps the selector's names (es_compat.rs:5620-5652). Only ``_all``, ``*`` and the parts
  `glob_match_simple` can glob (``*``, ``prefix*``, ``*suffix``: es_compat.rs:16552-16563) are
  expanded, and over index names only, never aliases (engine.rs:1036-1048). Anything else with a
  ``*`` is compared literally, and a selector with a wildcard skips a name it cannot find
  (es_compat.rs:7366-7387).
- Each name is read with `get_index` (es_compat.rs:7378-7379), which takes an alias's *first*
  backing index only (engine.rs:956-967), and every hit is labelled with the name as requested,
  the alias and not the index (es_compat.rs:7512, 10149-10150). ``GET /{alias}/_doc/{id}`` answers
  ``_index`` = the alias too (es_compat.rs:1999). A data stream is such an alias over
  ``.ds-<name>-000001``, ``-000002``… oldest first (engine.rs:1165-1184, 1199-1210), so a search on
  it reads the oldest backing index only.
- There is no ``-`` exclusion: ``-logs-b`` is a literal name, missing, and skipped when the
  selector has a wildcard (es_compat.rs:5620-5652, 7366-7387; the only ``strip_prefix('-')`` is
  `filter_path`'s, 11489).
- A closed index is listed as open (es_compat.rs:460, 15835); a search naming it is a 400
  ``index_closed_exception``, one reaching it through a wildcard drops it (es_compat.rs:5700-5730).

So the names a model writes are not what XERJ reads, and an alias named inside an allowed
pattern can stand for an index the policy denies. As Elasticsearch's security layer authorises
the concrete indices a request resolves to, every index expression of a call (the path's and the
indices a query names in its body, `_body_indices`) is resolved here against the listing
(`tools._listing`), each concrete index held to the policy, and the request names those:

- a plain index goes as it is;
- an alias (a data stream) goes as the indices behind it, all of them (a document GET and a
  lookup in a query: its first, the one XERJ reads), with a note naming them; an alias with any
  index behind it that the policy denies is refused whole, without naming that index;
- the ``.ds-<name>-NNNNNN`` backing indices of a data stream are allowed through the stream
  when the stream's name is allowed (the default ``.*`` denial would refuse them by name);
- a ``-name`` exclusion is applied here against the listing (its wildcard parts expanded here
  too) and the remaining indices are sent, with a note;
- a pattern XERJ cannot glob is resolved to the allowed indices it matches, with a note; one it
  can glob is sent as written (XERJ expands it over index names only, and the policy refused it
  already if it could reach a denied index: `Policy._index_refusal`);
- a name the listing does not know makes it read the listing again before anything is sent (no
  window in which a new alias passes); still unknown, it is ``index_not_found`` and nothing is
  sent, or, in an expression with a wildcard, skipped as XERJ skips it;
- an index reached through a pattern or an alias that turns out to be closed is left out and the
  search sent again (`skip_closed`), as XERJ's wildcard leaves it out; one named outright keeps
  XERJ's ``index_closed``.

Without a listing (neither ``_resolve`` nor ``_cat/indices`` answered), or with one from
``_cat/indices`` (which names no alias) and a name that is no index, a policy that can deny
anything refuses the call: an alias cannot be told from an index. A policy that denies nothing
sends the names as written.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from .._exceptions import ArgumentsError, EngineError, ToolCallError
from .._http._models import Failure, HttpRequest, Outcome, Reply
from .._message._format import engine_error, error_payload
from ..tools._listing import RESOLVE_ALL, IndexListing, Listing, fetch_listing
from ._body_indices import named_places, renamed
from ._policy import Policy, PolicyDenied
from ._resolution import BodyNames, guards, needs_listing, resolve

if TYPE_CHECKING:
    from ..tools import Tool

Steps = Generator[HttpRequest, tuple[Outcome, int], Any]

__all__ = [
    "BodyNames",
    "Concrete",
    "body_indices",
    "checked_answer",
    "concrete_request",
    "resend_without_closed",
    "withhold_denied",
]


@dataclass(frozen=True)
class Concrete:
    """A call's request with its index names made concrete, and what sending it needs."""

    request: HttpRequest
    arguments: Mapping[str, Any] = field(repr=False)
    # per argument: the names the model did not write itself (from a pattern or an alias)
    reached: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # every concrete index authorised through an alias (a data stream's backing indices)
    authorised: frozenset[str] = frozenset()


def _expressions(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for key in tool.traits.index_arguments(arguments):
        value = arguments.get(key)
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = list(value)
    return out


def _single(tool: Tool) -> bool:
    """A tool whose index names one index XERJ reads by `get_index` (a document GET)."""
    return tool.path is not None and "/_doc/" in tool.path


class PreparedCall(Protocol):
    """What this module reads of a prepared call (`_core.Prepared` is one)."""

    @property
    def tool(self) -> Tool: ...
    @property
    def arguments(self) -> Mapping[str, Any]: ...
    @property
    def body_indices(self) -> BodyNames: ...


def concrete_request(
    cache: IndexListing, policy: Policy, prepared: PreparedCall, request: HttpRequest, cluster: str
) -> Steps:
    """Return the `Concrete` request to send, or the `ToolCallError` to answer instead.

    The listing is read only when an expression holds more than patterns XERJ globs itself
    (a plain name, an exclusion, a pattern it cannot glob) or the query names an index; a
    cached one is used unless it does not know a name, which makes it read again."""
    tool, arguments, body = prepared.tool, prepared.arguments, prepared.body_indices
    expressions = _expressions(tool, arguments)
    wanted = [e for v in expressions.values() for e in ([v] if isinstance(v, str) else v)]
    cached = cache.get(cluster)
    if not body and len(wanted) == 1 and cached is not None and wanted[0] in cached.index_set:
        return Concrete(request, arguments)  # the usual call: one index the listing knows
    if not body and not any(needs_listing(e) for e in wanted):
        return Concrete(request, arguments)
    single = _single(tool)
    got: Listing | Outcome | None = cached
    fresh = got is None
    if fresh:
        got = yield from fetch_listing(cache, cluster)
    listing = got if isinstance(got, Listing) else None
    resolution = resolve(expressions, body, listing, policy, single)
    if resolution.unknown and not fresh:
        got = yield from fetch_listing(cache, cluster, fresh=True)
        listing = got if isinstance(got, Listing) else None
        resolution = resolve(expressions, body, listing, policy, single)
    error = resolution.error
    unserved = isinstance(got, Failure) or (isinstance(got, Reply) and _not_served(got))
    if error is not None and listing is None and unserved and not isinstance(error, ArgumentsError):
        # the node did not serve the listing (down, refusing the key): that is the answer
        assert isinstance(got, (Reply, Failure))
        return engine_error(got, RESOLVE_ALL)
    if error is not None:
        return error
    changed = {**arguments, **resolution.values}
    if resolution.renames:
        changed = renamed(changed, resolution.renames)
    notes = (*request.notes, *resolution.notes)
    authorised = frozenset(resolution.authorised)
    if changed == dict(arguments):
        return Concrete(replace(request, notes=notes), arguments, resolution.reached, authorised)
    try:
        rebuilt = tool.build(changed)
    except ToolCallError as exc:
        return exc
    sent = replace(rebuilt, notes=notes, template=request.template)
    return Concrete(sent, changed, resolution.reached, authorised)


def _not_served(reply: Reply) -> bool:
    """An answer that says the node serves nothing now: the key refused, or a server error."""
    return reply.status in (401, 403, 429) or reply.status >= 500


def _closed_name(outcome: Outcome) -> str | None:
    """The index of a 400 ``index_closed_exception`` (es_compat.rs:27460-27477), or None."""
    if not isinstance(outcome, Reply) or outcome.status != 400:
        return None
    error = outcome.data.get("error") if isinstance(outcome.data, dict) else None
    if isinstance(error, dict) and error.get("type") == "index_closed_exception":
        index = error.get("index")
        return index if isinstance(index, str) else None
    return None


def body_indices(tool: Tool, arguments: Mapping[str, Any]) -> BodyNames:
    """Where the query names an index in its body, and the name (each a string: the policy
    refused anything else)."""
    named = named_places(arguments, tool.traits.plain_arguments())
    return tuple((keys, name) for keys, name in named if isinstance(name, str))


def resend_without_closed(
    tool: Tool, concrete: Concrete, request: HttpRequest, outcome: Outcome
) -> Generator[
    HttpRequest, tuple[Outcome, int], tuple[Concrete, HttpRequest, Outcome, int] | dict[str, Any]
]:
    """While XERJ refuses the search for a closed index the model reached through a pattern or
    an alias (`skip_closed`): send it again without that index. Returns the last concrete
    request, what was sent, its outcome and the attempts it took; or the error payload when
    every such index is closed."""
    attempts = 0
    while (skipped := skip_closed(tool, concrete, outcome)) is not None:
        if isinstance(skipped, str):
            return error_payload(EngineError(skipped, code="index_closed"), attempts=attempts)
        concrete = skipped
        request = replace(request, path=skipped.request.path, notes=skipped.request.notes)
        outcome, more = yield request
        attempts += more
    return concrete, request, outcome, attempts


def skip_closed(tool: Tool, concrete: Concrete, outcome: Outcome) -> Concrete | str | None:
    """When XERJ refused the search because an index the model did not name itself (reached
    through a pattern or an alias) is closed: the same call without it, as XERJ's own wildcard
    leaves a closed index out (es_compat.rs:5700-5730); why nothing is left when every one is
    closed; else None."""
    name = _closed_name(outcome)
    key = next((k for k, names in concrete.reached.items() if name in names), None)
    if name is None or key is None:
        return None
    value = concrete.arguments[key]
    kept = [n for n in (value.split(",") if isinstance(value, str) else value) if n != name]
    reached = {**concrete.reached, key: tuple(n for n in concrete.reached[key] if n != name)}
    if not kept:
        return "every index it stands for is closed; nothing is left to search"
    changed = {**concrete.arguments, key: ",".join(kept) if isinstance(value, str) else kept}
    rebuilt = tool.build(changed)
    note = f"{name!r} is closed and was left out, as XERJ's own wildcard leaves out a closed index"
    request = replace(concrete.request, path=rebuilt.path, notes=(*concrete.request.notes, note))
    return replace(concrete, request=request, arguments=changed, reached=reached)


def withhold_denied(
    payload: dict[str, Any], policy: Policy, authorised: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Leave out the hits whose `_index` the policy denies (and was not authorised through a
    data stream). With them go the total and the aggregations, which counted their documents; a
    note says so, without a count. The request named only allowed indices, so this is a second
    line: it holds should a node answer with an index it was not asked for."""
    hits = payload.get("hits")
    if not isinstance(hits, list):
        return payload
    kept = [
        h
        for h in hits
        if not (isinstance(h, dict) and isinstance(h.get("_index"), str))
        or h["_index"] in authorised
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


def checked_answer(
    policy: Policy, payload: dict[str, Any], authorised: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """`payload` as the model may read it: a document from a denied index is refused whole; hits
    from a denied index are left out (`withhold_denied`)."""
    if payload.get("ok") is not True or not guards(policy):
        return payload
    index = payload.get("_index")
    if (
        payload.get("found") is True
        and isinstance(index, str)
        and index not in authorised
        and not policy.allows_index(index)
    ):
        said = "the document is in an index this agent may not read"
        return error_payload(PolicyDenied(said, details={"refused": "index"}))
    return withhold_denied(payload, policy, authorised)
