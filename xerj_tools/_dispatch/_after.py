"""What the dispatcher adds to an answer once XERJ has given it, and what it knows beforehand.

Before a call, nothing is fetched: a search or document read only learns the dense_vector
fields of a mapping already cached (`with_known_vectors`). After the answer (`after_answer`):

- a missing index gets the indices the model may use (`_listing`);
- a ``GET /{index}/_mapping`` answer is kept (`_mappings.MappingCache`, `MAPPING_TTL`);
- a search that came back empty, or refused as a bad request, whose query names a field the
  index lacks, or runs kNN (semantic) on a field of another type, gets a hint naming the fields
  that exist; the mapping is asked for then (once per `MAPPING_TTL`), never on the happy path.

Follow-up requests are `kind="listing"`: never retried, not counted as the call's attempts.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from .._http._models import HttpRequest, Outcome
from ..tools._listing import read_listing
from ..tools._mappings import field_hint, learned, mapping_request, named_fields, vector_paths
from ._resolution import offered

if TYPE_CHECKING:
    from ..tools import Tool
    from ..tools._listing import IndexListing
    from ..tools._mappings import MappingCache
    from ._policy import Policy


class CoreView(Protocol):
    """What this module reads of the dispatcher's core (`_core.DispatchCore` is one)."""

    mappings: MappingCache
    listing: IndexListing

    @property
    def tools(self) -> Mapping[str, Tool]: ...  # the tools served, by name


class PreparedView(Protocol):
    """What this module reads of a prepared call (`_core.Prepared` is one)."""

    @property
    def tool(self) -> Tool: ...
    @property
    def arguments(self) -> Mapping[str, Any]: ...
    @property
    def policy(self) -> Policy: ...  # the policy the call was checked under


__all__ = ["after_answer", "with_known_vectors"]

Flow = Generator[HttpRequest, tuple[Outcome, int], dict[str, Any]]


def _searched_index(request: HttpRequest) -> str | None:
    parts = request.path.strip("/").split("/")
    if len(parts) in (2, 3) and parts[1] in ("_search", "_doc"):
        return unquote(parts[0])
    return None


def _names_a_field(body: Any) -> bool:
    query = [body.get("query"), {"knn": body["knn"]} if isinstance(body.get("knn"), dict) else None]
    return any("*" not in name for _, name in named_fields(query))


def with_known_vectors(
    core: CoreView, prepared: PreparedView, request: HttpRequest, node: str
) -> HttpRequest:
    """`request`, with the dense_vector fields of its index's cached mapping among `vectors`."""
    tool = prepared.tool
    if tool.fit not in ("hits", "document"):
        return request
    index = _searched_index(request)
    per_index = core.mappings.get(node, index) if index is not None else None
    if not per_index or not (known := vector_paths(per_index)):
        return request
    return replace(request, vectors=tuple(dict.fromkeys((*request.vectors, *known))))


def after_answer(
    core: CoreView,
    prepared: PreparedView,
    request: HttpRequest,
    outcome: Outcome,
    payload: dict[str, Any],
    node: str,
) -> Flow:
    tool = prepared.tool
    if (got := learned(request, outcome)) is not None:
        core.mappings.put(node, *got)
    error = payload.get("error") if isinstance(payload.get("error"), dict) else None
    if error is not None and error.get("code") == "index_not_found":
        if tool.traits.index_arguments(prepared.arguments):
            # The model guessed an index name: tell it which ones exist (those it may search).
            # An alias only when every index behind it is allowed (`_index_guard.offered`).
            if "indices" in error:
                return payload  # offered already, where the name was resolved
            listing = yield from read_listing(core.listing, node)
            names = offered(listing, prepared.policy)[:50]
            if names:
                error["indices"] = names
                error["hint"] = "Use one of the indices listed in `indices`, or a pattern."
        elif tool.advice.index_not_found is not None:
            error["hint"] = tool.advice.index_not_found
        return payload
    # no match at all: a total of 0 (`size: 0` asks for counts, not for hits)
    empty = payload.get("ok") is True and payload.get("hits") == [] and payload.get("total") == 0
    reason = str(error.get("reason") or "") if error is not None else ""
    refused = error is not None and error.get("code") == "bad_request" and "field" in reason
    index = _searched_index(request)
    if tool.fit != "hits" or not (empty or refused) or index is None or request.body is None:
        return payload
    if not _names_a_field(request.body):
        return payload  # match_all, ids: no field the mapping could correct
    per_index = core.mappings.get(node, index)
    if per_index is None:
        answer, _ = yield mapping_request(index)
        if (got := learned(mapping_request(index), answer)) is None:
            return payload  # a courtesy: without the mapping the answer goes as it was
        per_index = got[1]
        core.mappings.put(node, index, per_index)
    if (hint := field_hint(request.body, per_index, served=core.tools)) is not None:
        if error is not None:
            error["hint"] = f"{error.get('hint') or ''} {hint}".strip()
        else:
            payload["notes"] = [*payload.get("notes", []), hint]
    return payload
