"""`xerj_get_document`: one document by its id, ``GET /{index}/_doc/{id}``. A first-party tool:
its definition follows the publishers' in ``tools.json``.

XERJ's handler (engine/crates/xerj-api/src/es_compat.rs:1972-2008 at e6e8e6a) looks the index
up by its exact name or alias, no pattern (xerj-engine/src/engine.rs:956-972), and answers 200
``{_index, _id, _version, _seq_no, _primary_term, found: true, _source}`` (responses.rs:177-210),
404 ``{_index, _id, found: false}`` for a missing id (es_compat.rs:2002-2004, responses.rs:212-222),
and the decorated 404 ``index_not_found_exception`` for a missing index (api error.rs:181-232).

An alias over several indices is resolved to its *first* index only (`Engine::get_index`,
engine.rs:956-967: "If the name is an alias pointing to multiple indices, returns the first
one"); `_mget` reads the same way (es_compat.rs:13194, 13292) and so does `_search` (each name
through `get_index`, es_compat.rs:7378-7379). So a `found: false` is checked further: the name
is resolved (``GET /_resolve/index/{name}``, es_compat.rs:15816-15863, whose `aliases` list each
alias's indices in the engine's order) and, when it is an alias over several indices, each of
its other indices the policy allows is asked in turn with the same GET, up to
`MAX_ALIAS_INDICES`. The first that holds the id answers, with its own `_index`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from .._http._models import HttpRequest, Outcome, Reply
from .._message._format import invalid
from ._limits import document_id, one_index
from ._paths import segment
from ._source_view import SourceView
from ._tool import Advice, IndexPolicy, PolicyTraits, Reads, Received, Tool, json_object

__all__ = ["GET_DOCUMENT"]


def get_document(args: Mapping[str, Any]) -> HttpRequest:
    index = segment(args["index"], path="$.index")
    return HttpRequest("GET", f"/{index}/_doc/{segment(args['id'], path='$.id')}")


_LIMITS = (one_index(), document_id())


def _answered(reply: Reply) -> bool:
    # A missing document is an answer, not an error: 404 with `found: false` and no `error`.
    if 200 <= reply.status < 300:
        return True
    data = reply.data if reply.status == 404 else None
    return isinstance(data, dict) and data.get("found") is False and "error" not in data


def read_document(received: Received) -> dict[str, Any]:
    reply, data = received.reply, json_object(received)
    if not isinstance(data.get("found"), bool) or not isinstance(data.get("_id"), str):
        raise invalid(reply, "the `found` flag and `_id` of a document lookup")
    out: dict[str, Any] = {"ok": True, "found": data["found"]}
    for key in ("_index", "_id", "_version"):
        if key in data:
            out[key] = data[key]
    if not data["found"]:
        out["notes"] = [f"no document with id {data['_id']!r} in index {data.get('_index')!r}"]
    elif isinstance(source := data.get("_source"), dict):
        # embeddings left out, as for hits (those the cached mapping declares among them)
        out["_source"] = SourceView(vectors=frozenset(received.request.vectors)).omit(source)
    return out


MAX_ALIAS_INDICES = 32
"""The most indices behind one alias asked for a document XERJ's GET did not find (the first
is XERJ's own answer); past it the answer says how many were left unasked."""


def _alias_indices(outcome: Outcome, alias: str) -> list[str]:
    """The indices behind `alias` in a ``_resolve/index`` answer, in XERJ's order; [] when it is
    no alias (or the answer is not one)."""
    data = outcome.data if isinstance(outcome, Reply) and outcome.status == 200 else None
    rows = data.get("aliases") if isinstance(data, dict) else None
    for row in rows if isinstance(rows, list) else ():
        if isinstance(row, dict) and row.get("name") == alias:
            names = row.get("indices")
            if isinstance(names, list):
                return [n for n in names if isinstance(n, str)]
    return []


def behind_alias(args: Mapping[str, Any], payload: dict[str, Any], policy: IndexPolicy) -> Reads:
    """A document XERJ's GET did not find, looked for in the alias's other indices."""
    if payload.get("found") is not False:
        return payload
    alias, doc_id = args["index"], args["id"]
    resolve = HttpRequest("GET", f"/_resolve/index/{segment(alias)}", kind="listing")
    outcome, _ = yield resolve
    others = _alias_indices(outcome, alias)[1:]  # the first: the one XERJ's GET read
    if not others:
        return payload
    allowed = [name for name in others if policy.allows_index(name)]
    asked, unread = allowed[:MAX_ALIAS_INDICES], []
    for name in asked:
        request = HttpRequest("GET", f"/{segment(name)}/_doc/{segment(doc_id)}")
        outcome, attempts = yield request
        if not isinstance(outcome, Reply) or not _answered(outcome):
            unread.append(name)
            continue
        found = read_document(Received(GET_DOCUMENT.name, outcome, request, None, attempts))
        if found.get("found") is True:
            note = (
                f"found in index {name!r} behind alias {alias!r}: XERJ's GET reads only an "
                "alias's first index, so its other indices were asked in turn"
            )
            return {**found, "notes": [note]}
    notes = [
        f"no document with id {doc_id!r} in any index behind alias {alias!r} "
        f"({1 + len(asked) - len(unread)} of {1 + len(others)} asked)"
    ]
    if len(allowed) < len(others):
        notes.append(
            f"{len(others) - len(allowed)} of its indices are not allowed here and were not asked"
        )
    if len(allowed) > len(asked):
        notes.append(
            f"{len(allowed) - len(asked)} more were not asked (at most {MAX_ALIAS_INDICES} are)"
        )
    if unread:
        notes.append(f"could not be read: {', '.join(unread[:10])}")
    return {**payload, "notes": notes}


def _too_large(request: HttpRequest) -> str:
    index, _, doc_id = (unquote(p) for p in request.path.strip("/").split("/"))
    return (
        f"The document is too large to read whole. Fetch only the fields you need: xerj_search "
        f'on index {index!r} with query {{"ids": {{"values": [{doc_id!r}]}}}} and `source` '
        "naming those fields."
    )


GET_DOCUMENT = Tool(
    name="xerj_get_document",
    build=get_document,
    title="Get a document by id",
    read=read_document,
    limits=_LIMITS,
    fit="document",
    traits=PolicyTraits(
        index_args=("index",), namespace_args=(), caps={}, writes=False, queries=False
    ),
    path="/{index}/_doc/{id}",
    advice=Advice(too_large=_too_large),
    answered=_answered,
    origin="first-party",
    after=behind_alias,
    result_fields={
        "found": {"type": "boolean"},
        "_index": {"type": "string"},
        "_id": {"type": "string"},
        "_source": {"type": "object"},
    },
)
