"""The ``execute_tool`` span a framework already made for a call, which the call joins.

pydantic-ai's instrumentation, Google ADK's tracing and the MCP SDK's server each make an
``execute_tool`` span around every tool call they run, as an application may; a second span
from xerj-tools under it would count the call twice, and the two could disagree. The call's
outcome, attempt count, events and attempt spans go on and under that span instead.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._shapes._base import ToolCall

__all__ = ["joined_span"]


def joined_span(api: ModuleType, ours: str, call: ToolCall) -> Any:
    """The current span when it is another tracer's ``execute_tool`` span for this call, else
    None. It is recognised by ``gen_ai.operation.name`` (pydantic-ai sets it when the span
    starts) or, where the attributes come only at its end (ADK), by its name
    ``execute_tool {tool}``; a span whose tool name or call id names another call is not it."""
    span = api.get_current_span()
    if not span.is_recording():
        return None
    scope = getattr(span, "instrumentation_scope", None)
    if getattr(scope, "name", None) == ours:
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
