"""Observability of the HTTP layer: attempt spans, and the log lines and span events of waits,
rested nodes and failovers.

Spans exist only when the application has set up OpenTelemetry: this module never imports it.
It looks for ``opentelemetry.trace`` among the loaded modules and asks it for the global tracer
provider; when the module is not loaded, or no provider was set, no span is made and a hook
costs a few look-ups (a few microseconds per call). Log lines go to the ``xerj_tools`` logger
whether or not anything traces.

Neither spans nor log lines carry a call's arguments, its result, a URL path or query (which
hold index and namespace names) or a credential: only tool names, call ids, node addresses,
status codes, error codes, counts and waits. docs/observability.md lists every name.

The tool call these attempts serve is the dispatcher's: `_dispatch._trace` opens its
``execute_tool`` span and sets `current_call`, which the hooks here report to. The agent loop's
turn spans are in `_agent._trace_turns`.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._version import __version__
from ._models import Failure, HttpRequest, Outcome, Reply

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = [
    "SCOPE",
    "CallState",
    "active_tracer",
    "attempt",
    "backoff",
    "current_call",
    "mark_failed",
    "node_rested",
    "otel_api",
    "use_span",
    "named_call",
]

logger = logging.getLogger("xerj_tools")

SCOPE = "xerj_tools"  # the instrumentation scope of every span the library makes


def otel_api() -> ModuleType | None:
    """``opentelemetry.trace`` when the application loaded it, else None (never imported here)."""
    return sys.modules.get("opentelemetry.trace")


_cached: list[Any] = [None, None]  # [provider, its tracer]; holding the provider keeps it unique


def active_tracer() -> tuple[ModuleType, Any] | None:
    """The API module and our tracer, or None when no tracer provider is configured."""
    api = otel_api()
    if api is None:
        return None
    provider = api.get_tracer_provider()
    if isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider)):
        return None  # OpenTelemetry is loaded but nothing records: stay out of the way
    if _cached[0] is not provider:
        _cached[:] = [provider, provider.get_tracer(SCOPE, __version__)]
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


def use_span(api: ModuleType, span: Any) -> Any:
    """`span` made current; ending it, and its status, stay with the caller."""
    return api.use_span(
        span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


# --- the call the attempts serve ------------------------------------------------------------


class CallState:
    """The tool call being run in this context, as its attempts see it: the names for log lines,
    the span its attempts and events go on (None when nothing traces), and its last attempt.
    `key` is whatever the call layer identifies the call by (the model's call)."""

    __slots__ = ("attempt", "call_id", "key", "node", "request", "span", "tool")

    def __init__(self, key: object, tool: str, call_id: str, span: Any) -> None:
        self.key = key
        self.tool = tool
        self.call_id = call_id
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


current_call: ContextVar[CallState | None] = ContextVar("xerj_tools_call", default=None)


def named_call() -> tuple[CallState | None, str]:
    """The current call and how a log line names it (``tool call_id``, else ``xerj_tools``)."""
    state = current_call.get()
    return state, (f"{state.tool} {state.call_id}" if state is not None else "xerj_tools")


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
    state = current_call.get()
    if state is None:
        return _NULL
    n = state.advance(request, node)
    traced = active_tracer() if state.span is not None else None
    if traced is None:
        return _NULL
    return _AttemptScope(traced[0], traced[1], request, node, n)


def backoff(retry_state: RetryCallState) -> None:
    """tenacity's ``before_sleep``: a WARNING and a span event for each wait before a retry."""
    wait = float(retry_state.next_action.sleep) if retry_state.next_action else 0.0
    outcome = retry_state.outcome
    result = outcome.result() if outcome is not None and not outcome.failed else None
    reason = describe(result)
    state, who = named_call()
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
    state, who = named_call()
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


def _failover(state: CallState, old: str, new: str) -> None:
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
