"""Observability of the tool call: its ``execute_tool`` span, the outcome recorded on it, and the
rerank fallback as an event and a log line.

Follows the OpenTelemetry GenAI conventions for tool execution; docs/observability.md lists every
name. Nothing here carries a call's arguments or result: only the tool name, the call id, the
attempt count and the error code. The attempts under the span, and the waits, rested nodes and
failovers on it, are traced by the HTTP layer (`_http._tracing`), which reads the call this
module makes current (`current_call`).

One call, one ``execute_tool`` span: a call joins the one a framework already made for it
(`joined_span`) instead of starting a second.
"""

from __future__ import annotations

from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from .._http._tracing import (
    SCOPE,
    CallState,
    active_tracer,
    current_call,
    logger,
    mark_failed,
    named_call,
    otel_api,
    use_span,
)

if TYPE_CHECKING:
    from .._shapes._base import ToolCall

__all__ = ["NAME_LIMIT", "ToolCallScope", "joined_span", "record", "rerank_fallback"]

NAME_LIMIT = 64  # a tool name the model made up can be anything; OpenAI caps real ones at 64


def _state(call: ToolCall, span: Any) -> CallState:
    return CallState(call, (call.name or "?")[:NAME_LIMIT], call.call_id[:NAME_LIMIT], span)


def joined_span(api: ModuleType, call: ToolCall) -> Any:
    """The current span when it is another tracer's ``execute_tool`` span for this call, else
    None.

    pydantic-ai's instrumentation, Google ADK's tracing and the MCP SDK's server each make an
    ``execute_tool`` span around every tool call they run, as an application may; a second span
    from xerj-tools under it would count the call twice, and the two could disagree. The call's
    outcome, attempt count, events and attempt spans go on and under that span instead.

    It is recognised by ``gen_ai.operation.name`` (pydantic-ai sets it when the span starts) or,
    where the attributes come only at its end (ADK), by its name ``execute_tool {tool}``; a span
    whose tool name or call id names another call is not it."""
    span = api.get_current_span()
    if not span.is_recording():
        return None
    scope = getattr(span, "instrumentation_scope", None)
    if getattr(scope, "name", None) == SCOPE:
        return None  # our own: a call inside a call gets a span of its own
    attributes = getattr(span, "attributes", None) or {}
    name = getattr(span, "name", "")
    operation = attributes.get("gen_ai.operation.name")
    if operation is None:
        return span if name == f"execute_tool {call.name}" else None
    if operation != "execute_tool":
        return None
    if attributes.get("gen_ai.tool.name", call.name) != call.name:
        return None
    if attributes.get("gen_ai.tool.call.id", call.call_id) != call.call_id:
        return None
    return span


class ToolCallScope:
    """Around one call's run: ``execute_tool {tool}``, current while the call runs (GenAI
    semantic conventions), ours or the one a framework already made for the call
    (`joined_span`); and the context the HTTP layer's hooks report to."""

    __slots__ = ("_api", "_call", "_span", "_token", "_use")

    def __init__(self, call: ToolCall) -> None:
        self._call = call
        self._api: ModuleType | None = None
        self._span: Any = None
        self._use: Any = None  # None while joined: the framework's span is current already

    def __enter__(self) -> None:
        traced = active_tracer()
        state = _state(self._call, None)
        if traced is not None:
            self._api, tracer = traced
            joined = joined_span(self._api, self._call)
            if joined is not None:
                self._span = state.span = joined
            else:
                self._span = state.span = _start_call(self._api, tracer, state)
                self._use = use_span(self._api, self._span)
                self._use.__enter__()
        self._token = current_call.set(state)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        current_call.reset(self._token)
        if self._api is not None:
            if kind is not None:
                mark_failed(self._api, self._span, kind.__qualname__)
            if self._use is not None:  # ours to end; a joined span is its owner's
                self._use.__exit__(kind, exc, tb)
                self._span.end()


def _start_call(api: ModuleType, tracer: Any, state: CallState) -> Any:
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
    state = current_call.get()
    if state is not None and state.key is result.call:
        if state.span is not None:
            _outcome(state.span, result)
        return
    traced = active_tracer()
    if traced is None:
        return
    joined = joined_span(traced[0], result.call)
    span = joined if joined is not None else _start_call(*traced, _state(result.call, None))
    if copy_of is not None:
        span.set_attribute("xerj_tools.copy_of", copy_of[:NAME_LIMIT])
    _outcome(span, result)
    if joined is None:
        span.end()


def _outcome(span: Any, result: Recorded) -> None:
    span.set_attribute("xerj_tools.attempts", result.attempts)
    if not result.ok and (api := otel_api()) is not None:
        mark_failed(api, span, result.code or "_OTHER")


def rerank_fallback(status: int | None) -> None:
    """Rerank was refused (with `status`, or earlier: None): the search runs without it."""
    state, name = named_call()
    if status is not None:
        logger.info("%s: rerank refused with HTTP %s; search repeated without rerank", name, status)
    else:
        logger.info("%s: rerank refused earlier by this cluster; search sent without rerank", name)
    if state is not None:
        attributes: dict[str, Any] = {"xerj_tools.reason": "refused" if status else "remembered"}
        if status is not None:
            attributes["http.response.status_code"] = status
        state.event("xerj_tools.rerank_fallback", attributes)
