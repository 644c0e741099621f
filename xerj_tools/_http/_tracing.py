"""Observability: OpenTelemetry spans and the operator's log lines for calls, attempts and turns.

Spans exist only when the application has set up OpenTelemetry: this module never imports it.
It looks for ``opentelemetry.trace`` among the loaded modules and asks it for the global tracer
provider; when the module is not loaded, or no provider was set, no span is made and a hook
costs a few look-ups (a few microseconds per call). Log lines go to the ``xerj_tools`` logger
whether or not anything traces.

Neither spans nor log lines carry a call's arguments, its result, a URL path or query (which
hold index and namespace names) or a credential: only tool names, call ids, node addresses,
status codes, error codes, counts and waits. docs/observability.md lists every name. The agent
loop's turn spans are in `_trace_turns`.

One call, one ``execute_tool`` span: a call joins the one a framework already made for it
(`_joined.joined_span`) instead of starting a second.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from contextvars import ContextVar
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from .._version import __version__
from ._joined import joined_span
from ._models import Failure, HttpRequest, Outcome, Reply

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from .._shapes._base import ToolCall

__all__ = ["attempt", "backoff", "node_rested", "record", "rerank_fallback", "tool_call"]

logger = logging.getLogger("xerj_tools")

_SCOPE = "xerj_tools"
NAME_LIMIT = 64  # a tool name the model made up can be anything; OpenAI caps real ones at 64


def _api() -> ModuleType | None:
    """``opentelemetry.trace`` when the application loaded it, else None (never imported here)."""
    return sys.modules.get("opentelemetry.trace")


_cached: list[Any] = [None, None]  # [provider, its tracer]; holding the provider keeps it unique


def active_tracer() -> tuple[ModuleType, Any] | None:
    """The API module and our tracer, or None when no tracer provider is configured."""
    api = _api()
    if api is None:
        return None
    provider = api.get_tracer_provider()
    if isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider)):
        return None  # OpenTelemetry is loaded but nothing records: stay out of the way
    if _cached[0] is not provider:
        _cached[:] = [provider, provider.get_tracer(_SCOPE, __version__)]
    return api, _cached[1]


def mark_failed(api: ModuleType, span: Any, error_type: str) -> None:
    # The status carries no description: exception texts and engine reasons stay out of traces.
    span.set_attribute("error.type", error_type)
    span.set_status(api.StatusCode.ERROR)


def node_label(node: str) -> str:
    """A node as ``scheme://host:port``: no path, no query, no credentials."""
    parts = urlsplit(node)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}"


def _server(node: str) -> dict[str, Any]:
    parts = urlsplit(node)
    return {
        "server.address": parts.hostname or "",
        "server.port": parts.port or (443 if parts.scheme == "https" else 80),
    }


def describe(outcome: Outcome | None) -> str:
    """Why an attempt failed, in words safe to log: a status or our own failure text."""
    if isinstance(outcome, Reply):
        retry_after = outcome.header("retry-after")
        return f"HTTP {outcome.status}" + (", with Retry-After" if retry_after else "")
    if isinstance(outcome, Failure):
        return f"{outcome.kind}: {outcome.detail}"
    return "no outcome"


# --- the tool call -------------------------------------------------------------------------


class _Call:
    """The call being run in this context: who it is, its span, and its last attempt."""

    __slots__ = ("attempt", "call", "call_id", "node", "request", "span", "tool")

    def __init__(self, call: ToolCall, span: Any) -> None:
        self.call = call
        self.tool = (call.name or "?")[:NAME_LIMIT]
        self.call_id = call.call_id[:NAME_LIMIT]
        self.span = span
        self.request: object = None
        self.attempt = 0
        self.node = ""

    def event(self, name: str, attributes: dict[str, Any]) -> None:
        if self.span is not None:
            self.span.add_event(name, attributes)

    def advance(self, request: HttpRequest, node: str) -> int:
        """Count an attempt of `request` on `node`; a repeat on another node is a failover."""
        if self.request is request:
            self.attempt += 1
            if node != self.node:
                _failover(self, self.node, node)
        else:
            self.request, self.attempt = request, 1
        self.node = node
        return self.attempt


_CALL: ContextVar[_Call | None] = ContextVar("xerj_tools_call", default=None)


class _ToolCallScope:
    """``execute_tool {tool}``, current while the call runs (GenAI semantic conventions): ours,
    or the one a framework already made for the call (`joined_span`)."""

    __slots__ = ("_api", "_call", "_span", "_token", "_use")

    def __init__(self, call: ToolCall) -> None:
        self._call = call
        self._api: ModuleType | None = None
        self._span: Any = None
        self._use: Any = None  # None while joined: the framework's span is current already

    def __enter__(self) -> None:
        traced = active_tracer()
        state = _Call(self._call, None)
        if traced is not None:
            self._api, tracer = traced
            joined = joined_span(self._api, _SCOPE, state.call)
            if joined is not None:
                self._span = state.span = joined
            else:
                self._span = state.span = _start_call(self._api, tracer, state)
                self._use = use_span(self._api, self._span)
                self._use.__enter__()
        self._token = _CALL.set(state)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _CALL.reset(self._token)
        if self._api is not None:
            if kind is not None:
                mark_failed(self._api, self._span, kind.__qualname__)
            if self._use is not None:  # ours to end; a joined span is its owner's
                self._use.__exit__(kind, exc, tb)
                self._span.end()


def _start_call(api: ModuleType, tracer: Any, state: _Call) -> Any:
    return tracer.start_span(
        f"execute_tool {state.tool}",
        kind=api.SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": state.tool,
            "gen_ai.tool.call.id": state.call_id,
            "gen_ai.tool.type": "function",
        },
    )


def tool_call(call: ToolCall) -> _ToolCallScope:
    """Around one call's run: its span, and the context the other hooks report to."""
    return _ToolCallScope(call)


def use_span(api: ModuleType, span: Any) -> Any:
    return api.use_span(
        span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


class Recorded(Protocol):
    """What a span records of a call's result (the dispatcher's `ToolResult` is one)."""

    @property
    def call(self) -> ToolCall: ...
    @property
    def attempts(self) -> int: ...
    @property
    def ok(self) -> bool: ...
    @property
    def code(self) -> str | None: ...


def record(result: Recorded, copy_of: str | None = None) -> None:
    """The call's outcome on its span: attempts, and the error code as ``error.type``.

    A call answered without running (denied, repeated, cut off, cancelled, or a copy of an
    identical call in the same turn) gets a span of its own that starts and ends here, unless a
    framework's ``execute_tool`` span for it is current (`joined_span`): then it goes on that.
    """
    state = _CALL.get()
    if state is not None and state.call is result.call:
        if state.span is not None:
            _outcome(state.span, result)
        return
    traced = active_tracer()
    if traced is None:
        return
    call = _Call(result.call, None)
    joined = joined_span(traced[0], _SCOPE, call.call)
    span = joined if joined is not None else _start_call(traced[0], traced[1], call)
    if copy_of is not None:
        span.set_attribute("xerj_tools.copy_of", copy_of[:NAME_LIMIT])
    _outcome(span, result)
    if joined is None:
        span.end()


def _outcome(span: Any, result: Recorded) -> None:
    span.set_attribute("xerj_tools.attempts", result.attempts)
    if not result.ok and (api := _api()) is not None:
        mark_failed(api, span, result.code or "_OTHER")


# --- attempts, waits, nodes ----------------------------------------------------------------


class _Null:
    """The scope of an attempt nobody traces."""

    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def done(self, outcome: Outcome) -> Outcome:
        return outcome


_NULL = _Null()


@functools.lru_cache(maxsize=64)
def _template_pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)))


def url_template(request: HttpRequest) -> str | None:
    """The request's ``url.template``: the template its tool set (the model's index, namespace
    and id taken out, as the HTTP conventions ask), when the path really has that shape."""
    template = request.template
    if template is None or not _template_pattern(template).fullmatch(request.path):
        return None
    return template


class _AttemptScope(_Null):
    """One HTTP attempt as a CLIENT span (HTTP client semantic conventions), named by method."""

    def __init__(self, api: ModuleType, tracer: Any, request: HttpRequest, node: str, n: int):
        attributes: dict[str, Any] = {
            "http.request.method": request.method,
            **_server(node),
            "url.scheme": urlsplit(node).scheme,
            "xerj_tools.attempt": n,
            "xerj_tools.request.kind": request.kind,
        }
        if n > 1:
            attributes["http.request.resend_count"] = n - 1
        name = request.method
        if (template := url_template(request)) is not None:
            attributes["url.template"] = template
            name = f"{name} {template}"
        self._api = api
        self._span = tracer.start_span(name, kind=api.SpanKind.CLIENT, attributes=attributes)
        self._use = use_span(api, self._span)

    def __enter__(self) -> _AttemptScope:
        self._use.__enter__()
        return self

    def done(self, outcome: Outcome) -> Outcome:
        if isinstance(outcome, Reply):
            self._span.set_attribute("http.response.status_code", outcome.status)
            if outcome.status >= 400:
                mark_failed(self._api, self._span, str(outcome.status))
        else:
            mark_failed(self._api, self._span, outcome.kind)
        return outcome

    def __exit__(self, *exc_info: Any) -> None:
        if exc_info[0] is not None:
            mark_failed(self._api, self._span, exc_info[0].__qualname__)
        self._use.__exit__(*exc_info)
        self._span.end()


def attempt(request: HttpRequest, node: str) -> _Null:
    """Around one attempt on `node`; ``scope.done(outcome)`` records what came back."""
    state = _CALL.get()
    if state is None:
        return _NULL
    n = state.advance(request, node)
    traced = active_tracer() if state.span is not None else None
    if traced is None:
        return _NULL
    return _AttemptScope(traced[0], traced[1], request, node, n)


def _who() -> tuple[_Call | None, str]:
    state = _CALL.get()
    return state, (f"{state.tool} {state.call_id}" if state is not None else "xerj_tools")


def backoff(retry_state: RetryCallState) -> None:
    """tenacity's ``before_sleep``: a WARNING and a span event for each wait before a retry."""
    wait = float(retry_state.next_action.sleep) if retry_state.next_action else 0.0
    outcome = retry_state.outcome
    result = outcome.result() if outcome is not None and not outcome.failed else None
    reason = describe(result)
    state, who = _who()
    logger.warning(
        "%s: attempt %d failed (%s); retrying in %.2fs",
        who, retry_state.attempt_number, reason, wait,
    )  # fmt: skip
    if state is not None:
        state.event(
            "xerj_tools.backoff",
            {
                "xerj_tools.wait_seconds": wait,
                "xerj_tools.attempt": retry_state.attempt_number,
                "xerj_tools.reason": reason,
            },
        )


def node_rested(node: str, seconds: float, failures: int, outcome: Outcome) -> None:
    """A node that failed is skipped for `seconds`: a WARNING and a span event."""
    state, who = _who()
    reason = describe(outcome)
    logger.warning(
        "%s: XERJ node %s put to rest for %.0fs (%s; %d failure(s) in a row)",
        who, node_label(node), seconds, reason, failures,
    )  # fmt: skip
    if state is not None:
        state.event(
            "xerj_tools.node_rest",
            {
                **_server(node),
                "xerj_tools.rest_seconds": seconds,
                "xerj_tools.failures": failures,
                "xerj_tools.reason": reason,
            },
        )


def _failover(state: _Call, old: str, new: str) -> None:
    logger.warning(
        "%s %s: failing over from XERJ node %s to %s (attempt %d)",
        state.tool, state.call_id, node_label(old), node_label(new), state.attempt,
    )  # fmt: skip
    state.event(
        "xerj_tools.failover",
        {
            "xerj_tools.from": node_label(old),
            "xerj_tools.to": node_label(new),
            "xerj_tools.attempt": state.attempt,
        },
    )


def rerank_fallback(status: int | None) -> None:
    """Rerank was refused (with `status`, or earlier: None): the search runs without it."""
    state, who = _who()
    if status is not None:
        logger.info("%s: rerank refused with HTTP %s; search repeated without rerank", who, status)
    else:
        logger.info("%s: rerank refused earlier by this cluster; search sent without rerank", who)
    if state is not None:
        attributes: dict[str, Any] = {"xerj_tools.reason": "refused" if status else "remembered"}
        if status is not None:
            attributes["http.response.status_code"] = status
        state.event("xerj_tools.rerank_fallback", attributes)
