"""Wire shapes: one adapter each for Chat Completions, Responses, Anthropic Messages and Gemini.

An adapter (`WireShape`) knows how its API writes a tool call and how the call is answered, how
a turn's answers join the transcript, how tool definitions are written, and where a recorded
transcript holds its calls. Everything else in xerj-tools works on the neutral `ToolCall` and
asks the call's adapter (``call.shape``) when it needs the wire again. A fourth shape is one
module here plus its place in `SHAPES`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .._exceptions import ConfigurationError, InvalidToolCallError
from ._anthropic import ANTHROPIC
from ._base import (
    AnthropicToolResult,
    Assembler,
    ChatToolMessage,
    ResponsesToolOutput,
    Step,
    ToolCall,
    ToolMessage,
    WireShape,
    describe,
    get,
    shape_named,
)
from ._chat import CHAT, ChatAssembler, chat_step
from ._gemini import GEMINI, GeminiFunctionResponse
from ._responses import RESPONSES, ResponsesAssembler, responses_step

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "GEMINI",
    "RESPONSES",
    "SHAPES",
    "AnthropicToolResult",
    "Assembler",
    "ChatAssembler",
    "ChatToolMessage",
    "GeminiFunctionResponse",
    "ResponsesAssembler",
    "ResponsesToolOutput",
    "Step",
    "ToolCall",
    "ToolMessage",
    "WireShape",
    "answers_by_id",
    "chat_step",
    "grouped",
    "loop_shape",
    "parse_tool_call",
    "parse_turn",
    "responses_step",
    "shape_named",
    "turn_messages",
]

# The order they are asked in: the shapes that name their kind in ``type`` first, then Gemini
# (a part holding ``functionCall``); Chat, which also claims a call of a kind the SDK did not know
# (``function=None``), last.
SHAPES: tuple[WireShape, ...] = (RESPONSES, ANTHROPIC, GEMINI, CHAT)

# Content blocks that stand beside tool calls in a model's turn but are not calls.
_NOT_CALLS = ("text", "thinking", "redacted_thinking", "reasoning", "message")


def parse_tool_call(obj: Any) -> ToolCall:
    """Read a tool call of any known wire shape: a Chat Completions tool call, a Responses
    ``function_call`` item, an Anthropic ``tool_use`` block, or a Gemini part holding a
    ``functionCall`` (SDK object or dict).

    Raises `InvalidToolCallError` naming what it got when no shape claims `obj`, or when the
    call has no id (no answer could be paired with it). Nothing is guessed: an object no
    adapter recognises is never read as a call of some default shape.
    """
    if isinstance(obj, ToolCall):
        return obj
    for shape in SHAPES:
        if shape.claims(obj):
            return shape.parse(obj)
    hint = ""
    if get(obj, "type") in _NOT_CALLS:
        hint = (
            "; pass only the calls (for Anthropic: the blocks whose type is 'tool_use', "
            "for Chat Completions: message.tool_calls)"
        )
    elif get(obj, "tool_calls") is not None:
        hint = "; pass message.tool_calls, not the message"
    raise InvalidToolCallError(
        "not a tool call of any known shape (a Chat Completions tool call, a Responses "
        f"function_call item, an Anthropic tool_use block or a Gemini functionCall part): got {describe(obj)}{hint}"
    )


def parse_turn(calls: Iterable[Any]) -> list[ToolCall]:
    """Every call of a turn, or one `InvalidToolCallError` naming each item that is not one.

    All or nothing: a dispatcher sends no request and writes nothing into a transcript for a
    turn that holds an item it cannot answer, so the caller finds out before anything happened.
    """
    parsed: list[ToolCall] = []
    wrong: list[str] = []
    for position, obj in enumerate(calls, start=1):
        try:
            parsed.append(parse_tool_call(obj))
        except InvalidToolCallError as exc:
            wrong.append(f"item {position}: {exc}")
    if wrong:
        more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
        raise InvalidToolCallError("; ".join(wrong[:3]) + more)
    return GEMINI.number(parsed)  # Gemini's calls without an id: by their order in the turn


def _answer_shape(message: Any) -> WireShape | None:
    for shape in SHAPES:
        if shape.answered(message) is not None:
            return shape
    return None


def turn_messages(answers: Sequence[Any]) -> list[Any]:
    """A turn's answers (what `dispatch_many` returns) as the entries to add to the transcript.

    Chat Completions and Responses: the answers themselves, one entry each. Anthropic: one
    ``{"role": "user", "content": [...tool_result blocks]}`` message for the turn, as the
    Messages API requires. Gemini: one ``{"role": "user", "parts": [...functionResponse parts]}``
    content. ``messages += turn_messages(answers)`` works for all four.
    """
    entries: list[Any] = []
    for shape, run in itertools.groupby(answers, key=_answer_shape):
        same = list(run)
        entries += shape.group(same) if shape is not None else same
    return entries


def answers_by_id(entries: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    """``(call id, answer)`` for each answer in transcript entries, grouped ones included."""
    for entry in entries:
        shape = _answer_shape(entry)
        if shape is not None:
            yield str(shape.answered(entry)), entry
            continue
        content = grouped(entry)
        if content is not None:
            yield from answers_by_id(content)


def grouped(entry: Any) -> list[Any] | None:
    """The answers an entry groups: an Anthropic user message's ``content``, a Gemini user
    content's ``parts``."""
    if not isinstance(entry, Mapping):
        return None
    for key in ("content", "parts"):
        inner = entry.get(key)
        if isinstance(inner, list):
            return inner
    return None


def loop_shape(api: str) -> WireShape:
    """The adapter the agent loop runs on: Chat Completions or Responses."""
    if api not in (CHAT.name, RESPONSES.name):
        raise ConfigurationError("api must be 'chat' or 'responses'")
    return shape_named(api)
