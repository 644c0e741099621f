"""Chat Completions: ``tool_calls`` in, one ``role: tool`` message per call out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ._base import Definable, Step, ToolCall, ToolMessage, WireShape, get, has, text
from ._usage import TokenUsage, read_usage

__all__ = ["CHAT", "ChatAssembler", "chat_step"]


class Chat(WireShape):
    """``{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}`` (and the
    free-text ``custom`` kind), answered ``{"role": "tool", "tool_call_id", "content"}``."""

    name = "chat"
    title = "Chat Completions"
    containers = ("messages", "tool_calls", "choices", "message")
    request_key = "messages"

    def claims(self, obj: Any) -> bool:
        # The SDK builds a call of a kind it does not know without raising, with
        # ``function=None``: carrying the member at all marks the shape.
        return get(obj, "type") in ("function", "custom") or has(obj, "function")

    def read(self, obj: Any) -> ToolCall:
        custom = get(obj, "type") == "custom"
        part = get(obj, "custom" if custom else "function")  # None: no name, no arguments
        arguments = get(part, "input" if custom else "arguments")
        return ToolCall(text(obj, "id"), text(part, "name"), arguments, "chat", custom)

    def answer(self, call: ToolCall, content: str, *, ok: bool) -> ToolMessage:
        return {"role": "tool", "tool_call_id": call.call_id, "content": content}

    def answered(self, message: Any) -> str | None:
        if get(message, "role") == "tool":
            return str(get(message, "tool_call_id"))
        return None

    def definition(self, spec: Definable) -> dict[str, Any]:
        """The nested form: ``{"type": "function", "function": {...}}``, the tools file's
        definition as written: `strict` is sent only when the file sets it (Chat Completions read
        an absent `strict` as ``false``, so no bundled tool is normalised into strict mode)."""
        return copy.deepcopy(dict(spec.definition))

    def create(self, client: Any) -> Any:
        return client.chat.completions.create

    def step(self, response: Any) -> Step:
        return chat_step(response)

    def assembler(self) -> ChatAssembler:
        return ChatAssembler()


CHAT = Chat()


def chat_step(completion: Any) -> Step:
    """Read a chat completion. The assistant message is rebuilt clean: the SDK's own object
    would carry `refusal`, `parsed` and other keys back to the API."""
    choice = get(completion, "choices")[0]
    message = get(choice, "message")
    content = get(message, "content") or ""
    calls: list[ToolCall] = []
    wire: list[dict[str, Any]] = []
    for tool_call in get(message, "tool_calls") or []:
        function = get(tool_call, "function")  # None: no name, no arguments
        name, arguments = get(function, "name") or "", get(function, "arguments", "")
        call_id = text(tool_call, "id")  # missing or not a string: "" (the loop names it)
        calls.append(ToolCall(call_id, name, arguments, "chat"))
        said = {"name": name, "arguments": arguments or ""}
        wire.append({"id": call_id, "type": "function", "function": said})
    item: dict[str, Any] = {"role": "assistant", "content": content or None}
    if wire:
        item["tool_calls"] = wire
    finish_reason = str(get(choice, "finish_reason") or "stop")
    return Step(content, calls, [item], finish_reason, read_usage(completion))


@dataclass
class ChatAssembler:
    """Assembles streamed Chat Completions chunks: text deltas and tool calls by `index`."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish_reason: str = ""  # stays empty when the stream ends without a finish_reason
    usage: TokenUsage | None = None  # sent last, when asked for with stream_options
    _last: int = 0  # the call the last tool-call delta fed

    def feed(self, chunk: Any) -> str | None:
        """Take one chunk; return its text delta, if any."""
        self.usage = read_usage(chunk) or self.usage
        choices = get(chunk, "choices") or []
        if not choices:
            return None  # the usage chunk
        choice = choices[0]
        delta = get(choice, "delta")
        for part in get(delta, "tool_calls") or []:  # (a chunk without a delta: none)
            slot = self.calls.setdefault(self._index(part), {"id": "", "name": "", "arguments": ""})
            if get(part, "id"):
                slot["id"] = str(get(part, "id"))
            function = get(part, "function")
            if function is not None:
                slot["name"] += get(function, "name") or ""
                slot["arguments"] += get(function, "arguments") or ""
        if get(choice, "finish_reason"):
            self.finish_reason = str(get(choice, "finish_reason"))
        content = get(delta, "content")
        if content:
            self.text.append(content)
            return str(content)
        return None

    def _index(self, part: Any) -> int:
        """The call a tool-call delta belongs to: its ``index``; without a usable one (null, not
        a whole number), a delta with an ``id`` starts the next call and one without goes on
        with the call the previous delta fed (the first call if none did)."""
        index = get(part, "index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            index = max(self.calls) + 1 if get(part, "id") and self.calls else self._last
        self._last = index
        return index

    def step(self) -> Step:
        # what `chat_step` reads of a message (it writes the transcript's own, clean)
        calls = [{"id": c["id"], "function": c} for _, c in sorted(self.calls.items())]
        message = {"content": "".join(self.text) or None, "tool_calls": calls}
        # A stream that stopped without a finish_reason cut the turn off: its calls are not whole.
        finish_reason = self.finish_reason or ("length" if self.calls else "stop")
        step = chat_step({"choices": [{"message": message, "finish_reason": finish_reason}]})
        step.usage = self.usage
        return step
