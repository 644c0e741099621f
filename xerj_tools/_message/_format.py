"""The message a model reads: compact JSON envelopes for results and for failures."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .._exceptions import ArgumentsError, EngineError, ToolCallError
from .._http._models import Failure, HttpRequest, Reply
from .._http._rerank import rerank_refusal
from .._http._retry import retry_after_seconds
from .._json import dumps

__all__ = [
    "ERROR_CODES",
    "block_hint",
    "dumps",
    "engine_error",
    "error_payload",
    "invalid",
    "sendable",
    "unusable",
]

# code -> (retryable, hint). Codes are a stable interface; docs/messages.md lists them.
_ERROR_CODES: dict[str, tuple[bool, str]] = {
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
    "index_closed": (
        False,
        "The index is closed on the node: no query can read it until its operator opens it again. "
        "Do not rewrite the query; use another index, or tell the user.",
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
    "too_many_calls": (
        True,
        "The turn made more calls than the agent runs at once; this one was not run. Use the "
        "results you have, and make it in a later turn if you still need it.",
    ),
    "incomplete_call": (
        False,
        "Your output was cut off before this call was complete; make the call again, shorter.",
    ),
    "redirected": (
        False,
        "XERJ's address answered with a redirect, which XERJ never sends: a proxy or a wrong URL "
        "is in between. Changing the call will not help; tell the user.",
    ),
    "tls_error": (
        False,
        "The TLS certificate of XERJ's node was not accepted; retrying will not help. Tell the user.",
    ),
    "handler_error": (
        False,
        "This tool failed inside the dispatcher; do not retry the same call. Tell the user.",
    ),
}
ERROR_CODES: Mapping[str, tuple[bool, str]] = MappingProxyType(_ERROR_CODES)
"""Each error code: whether the call may be retried as it is, and the hint (read-only)."""


TOO_MANY_BUCKETS = (
    "An aggregation asked for more buckets than XERJ makes in one search (the limit is in the "
    "reason; you cannot raise it). Ask for fewer: a wider `interval` or `calendar_interval` for a "
    "histogram, a smaller `size` for terms, or a filter to a narrower range; then call again."
)

# A lone surrogate: it can come from the engine's JSON ("\ud800"), or from arguments text that
# is quoted back; UTF-8 cannot encode it, so a message holding it would fail the next request
# to the model (every SDK sends UTF-8).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(content: str) -> str:
    """A tool message's JSON with each lone surrogate written as its escape (``\\ud800``): the
    same JSON value, as text any client can encode."""
    if content.isascii() or _LONE_SURROGATE.search(content) is None:
        return content
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", content)


def error_payload(error: ToolCallError, *, attempts: int | None = None) -> dict[str, Any]:
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
    return {"ok": False, "error": body}


def engine_error(
    outcome: Reply | Failure,
    request: HttpRequest,
    advice: Callable[[HttpRequest], str | None] | None = None,
) -> EngineError:
    """Classify a failed attempt into a stable error code. `advice` says what the model can ask
    for instead when the answer is too large (the tool's `too_large`)."""
    if isinstance(outcome, Failure):
        code = {
            "unreachable": "unreachable",
            "timeout": "timeout",
            "connection_lost": "unreachable",
            "too_large": "response_too_large",
            "protocol": "invalid_response",
            "cancelled": "cancelled",
            "deadline": "timeout",
            "tls": "tls_error",
        }[outcome.kind]
        said = _advice(advice, request) if code == "response_too_large" else None
        late = {} if outcome.deadline is None else {"deadline": outcome.deadline}
        return EngineError(f"{outcome.detail} ({outcome.node})", code=code, hint=said, details=late)
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
        code, reason = "invalid_response", unusable(outcome) or reason
    elif kind == "index_closed_exception":
        # XERJ's 400 for a search naming a closed index, or a GET of a document in one
        # (es_compat.rs:1979-1981, 5715-5725, body 27460-27477 at e6e8e6a): reason "closed".
        code = "index_closed"
        error = outcome.data.get("error") if isinstance(outcome.data, dict) else None
        index = error.get("index") if isinstance(error, dict) else None
        if isinstance(index, str) and index:
            reason = f"index [{index}] is closed"
    elif 300 <= status < 400:
        # XERJ's REST layer has no redirect anywhere (engine/crates/xerj-api/src at e6e8e6a; only
        # its web console redirects, xerj-console-api/src/router.rs:45): a proxy sent this, or
        # the URL is not the API's (http for https). Redirects are not followed: the credential
        # would go along to wherever `Location` points.
        code, reason = "redirected", _redirect_reason(outcome)
    else:
        code = "bad_request"
        if "too_many_buckets_exception" in (kind, outcome.cause_type):
            hint = TOO_MANY_BUCKETS
    return EngineError(reason, code=code, status=status, type=kind, details=details, hint=hint)


def _redirect_reason(reply: Reply) -> str:
    where = reply.header("location")
    to = f" to {where[:200]!r}" if where else ""
    return (
        f"HTTP {reply.status}: a redirect{to}, not followed. XERJ itself never redirects; a proxy "
        "or load balancer in front of it did, or the configured URL is not XERJ's API"
    )


def _advice(advice: Callable[[HttpRequest], str | None] | None, request: HttpRequest) -> str | None:
    try:
        return advice(request) if advice is not None else None
    except Exception:  # a custom tool's advice: the error goes out without it
        return None


def unusable(reply: Reply, data: Any = None) -> str | None:
    """Why a 2xx reply is no result at all (unreadable, not a JSON object, an error in its
    body), or None. `data` is the body already decoded, else `reply.data` is read. What each
    tool needs inside the object, its `read` checks (`invalid`)."""
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
    return None


def invalid(reply: Reply, lacking: str) -> EngineError:
    """A 2xx reply without what the tool reads, e.g. ``the `hits` list of a recall``."""
    return EngineError(
        f"XERJ answered HTTP {reply.status} without {lacking}",
        code="invalid_response",
        status=reply.status,
        type=reply.error_type,
    )


def _body_excerpt(reply: Reply, limit: int = 200) -> str:
    text = reply.body[:limit].decode("utf-8", "replace").strip()
    if not text:
        return f"HTTP {reply.status} with an empty body"
    return text + ("…" if len(reply.body) > limit else "")


_BLOCKED = re.compile(r"index \[(?P<index>[^\]]*)\] is blocked for (?P<op>\S+) operations")


def block_hint(reason: str) -> str:
    # XERJ's reason: "index [<name>] is blocked for <read|write|...> operations"
    # (common error.rs:115-117).
    found = _BLOCKED.search(reason)
    what = (
        f"index {found['index']!r} is blocked for {found['op'].replace('_', ' ')} operations"
        if found
        else "index is blocked"
    )
    return (
        f"The {what} on the node (an index block set by its operator, or a full disk); "
        "credentials are not the problem and calling again will not help soon. "
        "Use another index or namespace, or tell the user."
    )
