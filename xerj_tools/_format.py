"""The message a model reads: compact JSON envelopes for results and for failures."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._body import clean
from ._exceptions import ArgumentsError, EngineError, ToolCallError
from ._handlers import HttpRequest
from ._hints import block_hint, too_large_hint
from ._hits import decode_search, hit, shard_reasons
from ._outcome import Failure, Reply
from ._retry import rerank_refusal, retry_after_seconds
from ._source_view import source_view

__all__ = [
    "ERROR_CODES",
    "dumps",
    "engine_error",
    "error_payload",
    "own_first_write",
    "success_payload",
]

# code -> (retryable, hint). Codes are a stable interface; docs/messages.md lists them.
ERROR_CODES: dict[str, tuple[bool, str]] = {
    "invalid_json": (
        False,
        "Send the arguments as one JSON object that matches the tool's parameters.",
    ),
    "invalid_arguments": (False, "Fix every listed problem, then call the tool again."),
    "unknown_tool": (False, "Call one of the tools you were given, spelled exactly."),
    "bad_request": (
        False,
        "XERJ refused the request as written; read the reason, change the query and call again.",
    ),
    "index_not_found": (
        False,
        "Check the index name; a wildcard pattern such as name-* returns no hits instead of failing.",
    ),
    "not_found": (False, "The path does not exist on this XERJ node; check the names in the call."),
    "rerank_unavailable": (False, "Repeat the search without `rerank`."),
    "unauthorized": (
        False,
        "XERJ refused the dispatcher's credentials; changing the call will not help. Tell the user.",
    ),
    "forbidden": (
        False,
        "This credential may not do that; do not retry. Tell the user or choose another index or namespace.",
    ),
    "rate_limited": (
        True,
        "XERJ is overloaded; wait before calling again, or continue without this result.",
    ),
    "timeout": (
        True,
        "XERJ did not answer in time; narrow the query (smaller size, a filter) or try again later.",
    ),
    "unreachable": (True, "XERJ cannot be reached right now; tell the user or try again later."),
    "server_error": (True, "XERJ failed on its side; try again later or with a simpler query."),
    "invalid_response": (True, "XERJ's answer could not be read; try again later."),
    "response_too_large": (
        False,
        "Ask for less: a smaller size, or only the source fields you need.",
    ),
    "policy_denied": (
        False,
        "The operator's policy does not allow this; change the call as the reason says, or do without it.",
    ),
    "cancelled": (
        True,
        "The run was interrupted before this call finished; call it again if you still need the result.",
    ),
    "denied": (
        False,
        "The user did not allow this call; do not repeat it. Continue without it, or ask the user.",
    ),
    "repeated_call": (
        False,
        "You already have this exact result in the conversation; use it, or change the arguments.",
    ),
    "incomplete_call": (
        False,
        "Your output was cut off before this call was complete; make the call again, shorter.",
    ),
    "handler_error": (
        False,
        "This tool failed inside the dispatcher; do not retry the same call. Tell the user.",
    ),
}


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)


def dumps(payload: Mapping[str, Any]) -> str:
    """Compact, strict JSON, the form every tool message takes. A value JSON cannot carry (NaN,
    an infinity) becomes null, and one nested past `MAX_DEPTH` a marker, rather than an error."""
    try:
        return _ENCODER.encode(payload)
    except (ValueError, RecursionError):
        return _ENCODER.encode(clean(payload))


def error_payload(
    tool: str, error: ToolCallError, *, attempts: int | None = None
) -> dict[str, Any]:
    retryable, default_hint = ERROR_CODES.get(error.code, (error.retryable, ""))
    body: dict[str, Any] = {"code": error.code}
    if error.status is not None:
        body["status"] = error.status
    if error.type is not None:
        body["type"] = error.type
    body["reason"] = error.reason
    body["retryable"] = retryable if error.code in ERROR_CODES else error.retryable
    body["hint"] = error.hint or default_hint
    if isinstance(error, ArgumentsError) and error.problems:
        body["problems"] = [p.as_dict() for p in error.problems]
    body.update(error.details)
    if attempts is not None and attempts > 1:
        body["attempts"] = attempts
    return {"ok": False, "tool": tool, "error": body}


def engine_error(
    outcome: Reply | Failure, request: HttpRequest, tool: str | None = None
) -> EngineError:
    """Classify a failed attempt into a stable error code."""
    if isinstance(outcome, Failure):
        code = {
            "unreachable": "unreachable",
            "timeout": "timeout",
            "connection_lost": "unreachable",
            "too_large": "response_too_large",
            "protocol": "invalid_response",
            "cancelled": "cancelled",
            "deadline": "timeout",
        }[outcome.kind]
        advice = too_large_hint(tool, request) if code == "response_too_large" else None
        late = {} if outcome.deadline is None else {"deadline": outcome.deadline}
        return EngineError(
            f"{outcome.detail} ({outcome.node})", code=code, hint=advice, details=late
        )
    status, kind = outcome.status, outcome.error_type
    reason = outcome.error_reason or _body_excerpt(outcome)
    details: dict[str, Any] = {}
    hint: str | None = None
    if rerank_refusal(request, outcome) is not None:
        code = "rerank_unavailable"
    elif status == 401:
        code = "unauthorized"
    elif kind == "cluster_block_exception":
        # An index block, not a credential problem: 403 for a read or write block, 429 for the
        # disk flood-stage block (api error.rs:113-122, common error.rs:115-117, 257).
        code = "forbidden"
        hint = block_hint(reason)
    elif status == 403:
        code = "forbidden"
    elif status == 404:
        code = "index_not_found" if kind == "index_not_found_exception" else "not_found"
    elif status == 429:
        code = "rate_limited"
        delay = retry_after_seconds(outcome)
        if delay is not None:
            details["retry_after"] = round(delay, 3)
    elif status >= 500:
        code = "server_error"
    elif 200 <= status < 300:
        code, reason = "invalid_response", _unusable(outcome, request) or reason
    else:
        code = "bad_request"
    return EngineError(reason, code=code, status=status, type=kind, details=details, hint=hint)


def _unusable(reply: Reply, request: HttpRequest, data: Any = None) -> str | None:
    """Why a 2xx reply is not a result the tool can use, or None when it is one. `data` is the
    body already decoded (a search's, without its vectors), else `reply.data` is read."""
    status = reply.status
    data = reply.data if data is None else data
    if data is None and reply.unreadable is not None:
        return f"XERJ answered HTTP {status} with a body that could not be read: {reply.unreadable}"
    if not isinstance(data, dict):
        return f"XERJ answered HTTP {status} with a body that is not JSON: {_body_excerpt(reply)}"
    if data.get("error") is not None:  # an error is an error, whatever the status line says
        kind = reply.error_type
        said = reply.error_reason or _body_excerpt(reply)
        return f"XERJ answered HTTP {status} but its body reports an error: " + (
            f"{kind}: {said}" if kind else said
        )
    # What each kind needs: XERJ's search envelope (es_compat.rs), recall's {"hits": [...]}
    # (memory_api.rs:572) and store's {"id": ...} (memory_api.rs:373-379).
    hits = data.get("hits")
    if request.kind == "search" and not (
        isinstance(hits, dict) and isinstance(hits.get("hits"), list)
    ):
        return f"XERJ answered HTTP {status} without the `hits.hits` list of a search result"
    if request.kind == "memory_recall" and not isinstance(hits, list):
        return f"XERJ answered HTTP {status} without the `hits` list of a recall"
    if request.kind == "memory_store" and not isinstance(data.get("id"), str):
        return f"XERJ answered HTTP {status} without the `id` of the stored memory"
    return None


def _body_excerpt(reply: Reply, limit: int = 200) -> str:
    text = reply.body[:limit].decode("utf-8", "replace").strip()
    if not text:
        return f"HTTP {reply.status} with an empty body"
    return text + ("…" if len(reply.body) > limit else "")


def _total(hits: Mapping[str, Any], out: dict[str, Any]) -> None:
    total = hits.get("total")
    if isinstance(total, dict):
        out["total"] = total.get("value")
        if total.get("relation") == "gte":
            out["total_relation"] = "gte"  # at least this many; the engine stopped counting
    elif isinstance(total, int):
        out["total"] = total
    else:
        out["total"] = None  # track_total_hits was false
    if not _count(out["total"]):
        out["total"] = None  # anything but a count is not one (a list would also blow the budget)
        out.pop("total_relation", None)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rerank_block(data: Mapping[str, Any]) -> dict[str, Any] | None:
    block = data.get("_rerank")
    if not isinstance(block, dict):
        return None
    out: dict[str, Any] = {"applied": bool(block.get("applied"))}
    for key in ("reason", "judged", "unjudged", "pruned_below_min_score", "provider", "score_kind"):
        if block.get(key) is not None:
            out[key] = block[key]
    if out["applied"]:
        out["scores"] = "probability"  # every _score is the judge's probability, or null
    return out


def _fusion(request: HttpRequest) -> dict[str, Any] | None:
    query = (request.body or {}).get("query")
    hybrid = query.get("hybrid") if isinstance(query, dict) else None
    if not isinstance(hybrid, dict):
        return None
    fusion = hybrid.get("fusion", "rrf")
    kind = fusion.get("type", "rrf") if isinstance(fusion, dict) else fusion
    out: dict[str, Any] = {"type": kind}
    if kind == "rrf":
        out["k"] = fusion.get("k", 60) if isinstance(fusion, dict) else 60
    out["queries"] = len(hybrid.get("queries") or [])
    return out


def _search_payload(
    tool: str, data: Mapping[str, Any], request: HttpRequest, rerank_note: dict[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": True, "tool": tool}
    hits = data.get("hits") if isinstance(data.get("hits"), dict) else {}
    assert isinstance(hits, dict)
    _total(hits, out)
    raw_hits = hits.get("hits") if isinstance(hits.get("hits"), list) else []
    assert isinstance(raw_hits, list)
    view = source_view(request)
    out["hits"] = [hit(h, view) for h in raw_hits if isinstance(h, dict)]
    if "aggregations" in data:
        out["aggregations"] = data["aggregations"]
    rerank = rerank_note or _rerank_block(data)
    if rerank is None and request.reranked:
        rerank = {"applied": False, "reason": "the node returned no _rerank block"}
    out["ranked_by"] = "reranker" if rerank and rerank.get("applied") else "engine"
    if rerank is not None:
        out["rerank"] = rerank
    if (fusion := _fusion(request)) is not None:
        out["fusion"] = fusion
    warnings = []
    if data.get("timed_out") is True:
        warnings.append("the search timed out on the node; hits may be incomplete")
    shards = data.get("_shards")
    if isinstance(shards, dict) and _count(shards.get("failed")) and shards["failed"] > 0:
        total = shards.get("total") if _count(shards.get("total")) else "?"
        warning = f"{shards['failed']} of {total} shards failed; hits may be incomplete"
        if reasons := shard_reasons(shards.get("failures")):
            warning += ": " + "; ".join(reasons)  # what the model needs to fix its query
        warnings.append(warning)
    if data.get("terminated_early") is True:
        warnings.append("the search terminated early")
    if warnings:
        out["warnings"] = warnings
    return out


def own_first_write(payload: dict[str, Any], request: HttpRequest) -> dict[str, Any]:
    """A store that was retried after a lost answer, with ``dedup: true``, finds the first
    attempt's write as its own near-duplicate: XERJ answers ``created: false, deduplicated:
    true`` with the id this call chose (memory_api.rs:326-344). That memory is this call's, and
    it is stored: say so."""
    if payload.get("deduplicated") is not True or payload.get("id") != (request.body or {}).get(
        "id"
    ):
        return payload
    out = {k: v for k, v in payload.items() if k not in ("deduplicated", "score")}
    out["created"] = True
    out["notes"] = [
        *out.get("notes", []),
        "stored: an earlier attempt of this call wrote the memory before its answer was lost; "
        "the retry found that write (the same id), not another memory",
    ]
    return out


def success_payload(
    tool: str, reply: Reply, request: HttpRequest, rerank_note: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Shape a 2xx JSON reply into the envelope for the request's kind."""
    data = decode_search(reply, source_view(request)) if request.kind == "search" else reply.data
    if not isinstance(data, dict) or _unusable(reply, request, data) is not None:
        raise engine_error(reply, request)
    if request.kind == "search":
        out = _search_payload(tool, data, request, rerank_note)
    elif request.kind == "memory_store":
        out = {"ok": True, "tool": tool}
        for key in ("namespace", "id", "created", "deduplicated", "score"):
            if key in data:
                out[key] = data[key]
    elif request.kind == "memory_recall":
        raw = data.get("hits") if isinstance(data.get("hits"), list) else []
        assert isinstance(raw, list)
        hits = [
            {k: h.get(k) for k in ("id", "text", "metadata", "score")}
            for h in raw if isinstance(h, dict)
        ]  # fmt: skip
        out = {
            "ok": True,
            "tool": tool,
            "namespace": data.get("namespace"),
            "total": len(hits),
            "hits": hits,
        }
    else:
        out = {"ok": True, "tool": tool, "result": data}
    if request.notes:
        out["notes"] = list(request.notes)
    return out
