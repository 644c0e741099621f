"""Anthropic Messages: ``tool_use`` blocks in, ``tool_result`` blocks out, all of a turn's
answers in one user message.

The ``anthropic`` SDK is not a dependency: its content blocks are read by their attributes
(``type``, ``id``, ``name``, ``input``), as dicts are by their keys. The agent loop does not
speak this API; `Dispatcher.dispatch_many` does.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ._base import Definable, ToolCall, ToolMessage, WireShape, get, text

__all__ = ["ANTHROPIC"]


class Anthropic(WireShape):
    """``{"type": "tool_use", "id", "name", "input": {...}}``, answered ``{"type": "tool_result",
    "tool_use_id", "content", "is_error"}``; `group` puts a turn's results in one
    ``{"role": "user", "content": [...]}`` message, as the Messages API requires."""

    name = "anthropic"
    title = "Anthropic Messages"
    # A transcript: messages whose content lists hold the blocks; a response: its content.
    containers = ("messages", "content")
    decoded_arguments = "input must be a JSON object of the tool's arguments"

    def claims(self, obj: Any) -> bool:
        return bool(get(obj, "type") == "tool_use")

    def read(self, obj: Any) -> ToolCall:
        # `input` comes decoded: an object, never JSON text
        return ToolCall(text(obj, "id"), text(obj, "name"), get(obj, "input"), "anthropic")

    def answer(self, call: ToolCall, content: str, *, ok: bool) -> ToolMessage:
        return {
            "type": "tool_result",
            "tool_use_id": call.call_id,
            "content": content,
            "is_error": not ok,
        }

    def answered(self, message: Any) -> str | None:
        if get(message, "type") == "tool_result":
            return str(get(message, "tool_use_id"))
        return None

    def group(self, answers: Sequence[Any]) -> list[Any]:
        return [{"role": "user", "content": list(answers)}]

    def definition(self, spec: Definable) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}``: the schema is the parameters schema."""
        return {
            "name": spec.name,
            "description": spec.description,
            "input_schema": copy.deepcopy(dict(spec.parameters)),
        }


ANTHROPIC = Anthropic()
