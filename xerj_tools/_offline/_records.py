"""The calls found in recorded model output: where each call is, and the records that look like
calls but are not (`find_calls`). The lowest layer of offline validation: the record formats
(`_formats`) and the reader (`_offline._validate`) build on it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._shapes import SHAPES

__all__ = ["FoundCall", "Unrecognised", "find_calls"]


@dataclass(frozen=True)
class FoundCall:
    """A tool call found in an input: where it stood, its id, tool name and raw arguments."""

    name: str
    arguments: Any
    call_id: str | None = None
    line: int | None = None  # 1-based line of a JSONL input; None in a single JSON document
    index: int = 0  # 1-based position among all calls of the input
    api: str | None = None  # the wire shape it came in; None for a plain record
    # The tools it is validated against when not the registry in use (a fine-tuning example's)
    registry: Any = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        name: str,
        arguments: Any,
        call_id: str | None = None,
        line: int | None = None,
        index: int = 0,
        api: str | None = None,
        registry: Any = None,
    ) -> None:
        fields = self.__dict__  # (as `Problem.__init__`: the dataclass's fields, set faster)
        fields["name"] = name
        fields["arguments"] = arguments
        fields["call_id"] = call_id
        fields["line"] = line
        fields["index"] = index
        fields["api"] = api
        fields["registry"] = registry


# Where any shape's transcripts nest their calls: messages, tool_calls, choices[].message
# (Chat); input, output (Responses); messages[].content, a response's content (Anthropic).
_CONTAINERS = frozenset(key for shape in SHAPES for key in shape.containers)
_DEFINITIONS = frozenset({"tools", "functions", "tool_choice"})  # definitions, not calls


@dataclass(frozen=True)
class Unrecognised:
    """An item that looks like a tool call but that no wire shape reads (a hosted tool's call,
    another vendor's format): counted, so that an input of only such items does not pass."""

    kind: str
    line: int | None = None


def _call_like(value: Mapping[str, Any]) -> str | None:
    kind = value.get("type")
    if isinstance(kind, str) and kind.endswith(("_call", "tool_use", "tool_call")):
        return kind
    for key in ("function_call", "functionCall", "toolUse"):  # legacy Chat, Gemini, Bedrock
        if isinstance(value.get(key), Mapping):
            return key
    return None


def find_calls(value: Any) -> Iterator[FoundCall | Unrecognised]:
    """Every tool call inside `value`, in order, each as a `FoundCall` (its `index` and `line`
    left for the caller), and an `Unrecognised` for each call-like item no shape reads.

    Each wire shape's adapter recognises its own calls (Chat Completions tool calls, Responses
    ``function_call`` items, Anthropic ``tool_use`` blocks), wherever that shape's transcripts
    hold them: message lists and request bodies, responses, bare lists. Plain
    ``{"name"|"tool": ..., "arguments": ...}`` records are read too.
    """
    if isinstance(value, list):
        for item in value:
            yield from find_calls(item)
        return
    if not isinstance(value, Mapping):
        return
    function = value.get("function") if type(value) is dict else None
    if type(function) is dict and value.get("type") == "function":
        # A Chat Completions tool call, the commonest record, read without the shapes' loop
        # (what `CHAT.read` reads: the id if a string, the name if a string, else "").
        name, call_id = function.get("name"), value.get("id")
        yield FoundCall(
            name if isinstance(name, str) else "",
            function.get("arguments"),
            call_id if isinstance(call_id, str) and call_id else None,
            api="chat",
        )
        return
    for shape in SHAPES:
        if shape.claims(value):
            call = shape.read(value)
            yield FoundCall(call.name, call.arguments, call.call_id or None, api=shape.name)
            return
    if ("name" in value or "tool" in value) and "arguments" in value and "role" not in value:
        name = value["name"] if "name" in value else value.get("tool")
        call_id = value["id"] if "id" in value else value.get("call_id")
        yield FoundCall(str(name), value.get("arguments"), call_id)
        return
    if (kind := _call_like(value)) is not None:
        yield Unrecognised(kind)
    for key, inner in value.items():
        if key in _CONTAINERS and isinstance(inner, (list, Mapping)):
            yield from find_calls(inner)
        elif key not in _DEFINITIONS:
            yield from _call_like_inside(inner)


def _call_like_inside(value: Any) -> Iterator[Unrecognised]:
    """Outside the places where the shapes keep calls, only call-like items are looked for:
    an input in a format no shape reads (Gemini's ``contents[].parts[].functionCall``, say)
    is then told apart from one without calls."""
    if isinstance(value, list):
        for item in value:
            yield from _call_like_inside(item)
    elif isinstance(value, Mapping):
        if (kind := _call_like(value)) is not None:
            yield Unrecognised(kind)
            return
        for key, inner in value.items():
            if key not in _DEFINITIONS:
                yield from _call_like_inside(inner)
