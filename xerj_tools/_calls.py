"""The neutral tool call and its answers; defined with the wire shapes in `xerj_tools._shapes`."""

from __future__ import annotations

from ._shapes import (
    AnthropicToolResult,
    Api,
    ChatToolMessage,
    ResponsesToolOutput,
    ToolCall,
    ToolMessage,
    parse_tool_call,
)

__all__ = [
    "AnthropicToolResult",
    "Api",
    "ChatToolMessage",
    "ResponsesToolOutput",
    "ToolCall",
    "ToolMessage",
    "parse_tool_call",
]
