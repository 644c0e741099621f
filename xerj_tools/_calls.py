"""Tool-call shapes: read a call from either OpenAI API (SDK object or dict), write its answer."""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ._exceptions import InvalidToolCallError

__all__ = [
    "Api",
    "ChatToolMessage",
    "ResponsesToolOutput",
    "ToolCall",
    "ToolMessage",
    "parse_tool_call",
]

Api = Literal["chat", "responses"]

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 200


class ChatToolMessage(TypedDict):
    """The Chat Completions answer to a tool call."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


class ResponsesToolOutput(TypedDict):
    """The Responses API answer to a ``function_call`` (or ``custom_tool_call``) item."""

    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str


ToolMessage = ChatToolMessage | ResponsesToolOutput


@dataclass(frozen=True)
class ToolCall:
    """A tool call in neutral form: id, tool name, raw arguments and which API it came from."""

    call_id: str
    name: str
    # As the model sent it: a JSON string, or an object the SDK or a caller decoded. Anything
    # else (a number, a list) is kept as is and answered ``invalid_json``, never converted.
    arguments: str | Mapping[str, Any] | Any = None
    api: Api = "chat"
    custom: bool = False  # a free-text custom tool call, which xerj-tools does not serve

    def __repr__(self) -> str:
        # reprlib cuts nesting and length: a repr of hostile arguments stays short and can
        # never recurse (the default dataclass repr raised RecursionError on deep ones).
        return (
            f"ToolCall(call_id={self.call_id!r}, name={self.name!r}, "
            f"arguments={_REPR.repr(self.arguments)}, api={self.api!r}, custom={self.custom!r})"
        )

    def answer(self, content: str) -> ToolMessage:
        """The message that answers this call, in the shape of the API it came from."""
        if self.api == "responses":
            kind: Literal["function_call_output", "custom_tool_call_output"] = (
                "custom_tool_call_output" if self.custom else "function_call_output"
            )
            return {"type": kind, "call_id": self.call_id, "output": content}
        return {"role": "tool", "tool_call_id": self.call_id, "content": content}


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, (dict, Mapping)):
        return obj.get(key)
    return getattr(obj, key, None)


def parse_tool_call(obj: Any) -> ToolCall:
    """Read a Chat Completions tool call or a Responses ``function_call`` item.

    SDK objects and plain dicts are both accepted. The SDK builds unknown call types without
    raising (with ``function=None``); such a call keeps its id and gets an ``unknown_tool``
    answer. Only an object with no call id at all raises `InvalidToolCallError`, since nothing
    could be answered.
    """
    if isinstance(obj, ToolCall):
        return obj
    kind = _get(obj, "type")
    if kind in ("function_call", "custom_tool_call"):
        call_id = _get(obj, "call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidToolCallError(
                f"a Responses {kind} item without a call_id cannot be answered"
            )
        custom = kind == "custom_tool_call"
        arguments = _get(obj, "input") if custom else _get(obj, "arguments")
        name = _get(obj, "name")
        return ToolCall(
            call_id, name if isinstance(name, str) else "", arguments, "responses", custom
        )
    call_id = _get(obj, "id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidToolCallError(
            "expected a Chat Completions tool call (id, function.name, function.arguments) or a "
            f"Responses function_call item (call_id, name, arguments); got {type(obj).__name__}"
        )
    if kind == "custom":
        custom_part = _get(obj, "custom")
        name = _get(custom_part, "name") if custom_part is not None else None
        arguments = _get(custom_part, "input") if custom_part is not None else None
        return ToolCall(call_id, name if isinstance(name, str) else "", arguments, "chat", True)
    function = _get(obj, "function")
    name = _get(function, "name") if function is not None else None
    arguments = _get(function, "arguments") if function is not None else None
    return ToolCall(call_id, name if isinstance(name, str) else "", arguments, "chat")
