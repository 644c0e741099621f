"""The ready-to-send queries of XERJ autoindex's catalog, as calls of this library's tools.

Autoindex writes each dataset's queries as JSON strings in ``sample_queries_json``
(catalog.rs:95-97), built by ``build_sample_queries`` (catalog.rs:133-242): ``{class, title,
request: "POST /<index>/_search", body, note?}`` (classes ``exact_filter``, ``full_text``,
``hybrid_lexical_vector``, ``analytics``), or ``{class: "cross_dataset_pivot", title, steps:
[{request, body, note}], evidence}``. Each becomes ``{title, class, tool, arguments, note?}``
(or ``{title, class, steps: [{tool, arguments, note?}], evidence?}``): a ``hybrid`` query is a
``xerj_hybrid_search``, a lone ``semantic`` query a ``xerj_semantic_search``, anything else a
``xerj_search`` (its ``aggregations`` as ``aggs``; no ``query``: ``match_all``, which XERJ runs
for a body without one). A query is left out when it names an index the policy denies (a pivot
when either of its steps does) or holds what the tools cannot say. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .._json import MAX_DEPTH, clean, dumps

__all__ = ["MAX_QUERY_CHARS", "ready_query"]

MAX_QUERY_CHARS = 2_000  # autoindex's are a few hundred characters; a longer one is left out

_REQUEST = re.compile(r"^POST /([^/\s]+)/_search$")
_SEARCH_KEYS = {
    "query": "query", "size": "size", "from": "from", "sort": "sort", "aggs": "aggs",
    "aggregations": "aggs", "track_total_hits": "track_total_hits",
}  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _step(request: Any, body: Any, allows: Callable[[str], bool]) -> dict[str, Any] | None:
    """One ``POST /<index>/_search`` of the catalog as a call of this library's tools, or None
    when it names an index the policy denies or holds what the tools cannot say."""
    match = _REQUEST.match(request) if isinstance(request, str) else None
    if match is None or not isinstance(body, dict):
        return None
    index = match.group(1)
    if not all(allows(part) for part in index.split(",")):
        return None
    query = body.get("query")
    if query is not None and not isinstance(query, dict):
        return None
    rest = {k: v for k, v in body.items() if k != "query"}
    inner = next(iter(query.values())) if isinstance(query, dict) and len(query) == 1 else None
    if isinstance(query, dict) and "hybrid" in query and isinstance(inner, dict):
        if set(inner) - {"queries", "fusion"} or set(rest) - {"size"}:
            return None
        hybrid = {"index": index, "queries": inner.get("queries"), **rest}
        if isinstance(inner.get("fusion"), str):
            hybrid["fusion"] = inner["fusion"]
        return {"tool": "xerj_hybrid_search", "arguments": hybrid}
    if isinstance(query, dict) and "semantic" in query and isinstance(inner, dict):
        if set(inner) - {"field", "query", "k"} or set(rest) - {"size"}:
            return None
        return {"tool": "xerj_semantic_search", "arguments": {"index": index, **inner, **rest}}
    if set(rest) - set(_SEARCH_KEYS):
        return None
    arguments: dict[str, Any] = {"index": index}
    # xerj_search requires `query`; XERJ runs match_all where a body has none
    arguments["query"] = query if query is not None else {"match_all": {}}
    arguments.update({_SEARCH_KEYS[k]: v for k, v in rest.items()})
    return {"tool": "xerj_search", "arguments": arguments}


def ready_query(raw: Any, allows: Callable[[str], bool]) -> dict[str, Any] | None:
    """One entry of ``sample_queries_json`` (a JSON string) as tool calls, or None."""
    try:
        query = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return None
    if not isinstance(query, dict):
        return None
    out: dict[str, Any] = {}
    for key in ("title", "class"):
        if text := _text(query.get(key)):
            out[key] = text
    if isinstance(query.get("steps"), list):
        steps = []
        for step in query["steps"]:
            if not isinstance(step, dict):
                return None
            call = _step(step.get("request"), step.get("body"), allows)
            if call is None:
                return None  # a pivot into an index the caller may not read is no pivot
            if note := _text(step.get("note")):
                call["note"] = note
            steps.append(call)
        if not steps:
            return None
        out["steps"] = steps
        if evidence := _text(query.get("evidence")):
            out["evidence"] = evidence
        return _sendable(out)
    call = _step(query.get("request"), query.get("body"), allows)
    if call is None:
        return None
    out.update(call)
    # The hybrid query's note (catalog.rs:189) asks the client to strip `*_vector` from the hits:
    # the tools do that already (docs/fidelity.md), so the model is not told to.
    if (note := _text(query.get("note"))) and not note.startswith("strip *_vector"):
        out["note"] = note
    return _sendable(out)


def _sendable(query: dict[str, Any]) -> dict[str, Any] | None:
    """`query` when the model can send it as it reads it: JSON values only (a NaN is no query),
    at most `MAX_QUERY_CHARS` and shallower than `MAX_DEPTH` (which `clean` would cut)."""
    cleaned = clean(query, MAX_DEPTH + 1)
    if cleaned != query:
        return None  # cut deep, or a number JSON cannot carry
    try:
        written = dumps(cleaned)
    except (ValueError, TypeError):
        return None
    return cleaned if len(written) <= MAX_QUERY_CHARS else None
