"""`xerj_get_document`: one document by its id, ``GET /{index}/_doc/{id}``. A first-party tool:
its definition follows the publishers' in ``tools.json``.

XERJ's handler (engine/crates/xerj-api/src/es_compat.rs:1972-2008 at e6e8e6a) looks the index
up by its exact name or alias, no pattern (xerj-engine/src/engine.rs:956-972), and answers 200
``{_index, _id, _version, _seq_no, _primary_term, found: true, _source}`` (responses.rs:177-210),
404 ``{_index, _id, found: false}`` for a missing id (es_compat.rs:2002-2004, responses.rs:212-222),
and the decorated 404 ``index_not_found_exception`` for a missing index (api error.rs:181-232).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from .._format import engine_error, invalid, unusable
from .._models import HttpRequest, Reply
from .._problems import Problem
from .._source_view import SourceView
from ._paths import document_id_problem, index_problem, segment
from ._tool import Received, Tool

__all__ = ["GET_DOCUMENT"]


def get_document(args: Mapping[str, Any]) -> HttpRequest:
    index = segment(args["index"], path="$.index")
    return HttpRequest("GET", f"/{index}/_doc/{segment(args['id'], path='$.id')}")


def _problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    index = args.get("index")
    if (problem := index_problem(index)) is not None:
        yield problem
    elif isinstance(index, str) and (index == "_all" or any(c in index for c in ",*")):
        yield Problem("$.index", "must name one index (or alias): no pattern, list or _all")
    if (problem := document_id_problem(args.get("id"))) is not None:
        yield problem


def _answered(reply: Reply) -> bool:
    # A missing document is an answer, not an error: 404 with `found: false` and no `error`.
    if 200 <= reply.status < 300:
        return True
    data = reply.data if reply.status == 404 else None
    return isinstance(data, dict) and data.get("found") is False and "error" not in data


def read_document(received: Received) -> dict[str, Any]:
    reply = received.reply
    data = reply.data
    if not isinstance(data, dict) or unusable(reply, data) is not None:
        raise engine_error(reply, received.request)
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


def _too_large(request: HttpRequest) -> str:
    index, _, doc_id = (unquote(p) for p in request.path.strip("/").split("/"))
    return (
        f"The document is too large to read whole. Fetch only the fields you need: xerj_search "
        f'on index {index!r} with query {{"ids": {{"values": [{doc_id!r}]}}}} and `source` '
        "naming those fields."
    )


GET_DOCUMENT = Tool(
    "xerj_get_document",
    get_document,
    title="Get a document by id",
    read=read_document,
    checks=(_problems,),
    fit="document",
    index_args=("index",),
    namespace_args=(),
    caps={},
    writes=False,
    queries=False,
    path="/{index}/_doc/{id}",
    too_large=_too_large,
    answered=_answered,
    origin="first-party",
)
