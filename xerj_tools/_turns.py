"""One model turn, read from either OpenAI API: its text, its tool calls, what joins the transcript.

Pure: parsing a response, assembling streamed deltas, and the bookkeeping of a run (figures per
tool, the loop guard, hooks' verdicts) shared by the sync and async loops.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._bounds import loads, value_problem
from ._calls import ToolCall
from ._usage import TokenUsage, read_usage

__all__ = [
    "AgentEvent",
    "AgentResult",
    "Outcome",
    "RunFinished",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultEvent",
    "ToolStats",
    "TurnFinished",
]

ApiName = Literal["chat", "responses"]
Outcome = Literal["completed", "max_turns", "length", "content_filter"]


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _dump(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped: dict[str, Any] = obj.model_dump(exclude_none=True, mode="json")
    return dumped


@dataclass
class Step:
    """What one model turn said: text, tool calls, transcript items and why it stopped."""

    text: str
    calls: list[ToolCall]
    items: list[dict[str, Any]]
    finish: str
    usage: TokenUsage | None = None


def chat_step(completion: Any) -> Step:
    """Read a chat completion. The assistant message is rebuilt clean: the SDK's own object
    would carry `refusal`, `parsed` and other keys back to the API."""
    choice = _get(completion, "choices")[0]
    message = _get(choice, "message")
    text = _get(message, "content") or ""
    calls: list[ToolCall] = []
    wire: list[dict[str, Any]] = []
    for tool_call in _get(message, "tool_calls") or []:
        function = _get(tool_call, "function")
        name = _get(function, "name", "") if function is not None else ""
        arguments = _get(function, "arguments", "") if function is not None else ""
        call_id = str(_get(tool_call, "id", ""))
        calls.append(ToolCall(call_id, name or "", arguments, "chat"))
        wire.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name or "", "arguments": arguments or ""},
            }
        )
    item: dict[str, Any] = {"role": "assistant", "content": text or None}
    if wire:
        item["tool_calls"] = wire
    finish = str(_get(choice, "finish_reason") or "stop")
    return Step(text, calls, [item], finish, read_usage(completion))


def responses_step(response: Any) -> Step:
    """Read a Responses API response; every output item joins the transcript (reasoning too)."""
    items: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    texts: list[str] = []
    for item in _get(response, "output") or []:
        kind = _get(item, "type")
        if kind == "function_call":
            call = ToolCall(
                str(_get(item, "call_id")),
                str(_get(item, "name") or ""),
                _get(item, "arguments"),
                "responses",
            )
            calls.append(call)
            clean = {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments or "",
            }
            if _get(item, "id"):
                clean["id"] = _get(item, "id")
            items.append(clean)
            continue
        if kind == "message":
            for part in _get(item, "content") or []:
                if _get(part, "type") == "output_text":
                    texts.append(str(_get(part, "text") or ""))
        items.append(_dump(item))
    status = _get(response, "status")
    details = _get(response, "incomplete_details")
    reason = _get(details, "reason") if details is not None else None
    if status == "incomplete":
        finish = (
            "length"
            if reason == "max_output_tokens"
            else "content_filter"
            if reason == "content_filter"
            else "length"
        )
    else:
        finish = "tool_calls" if calls else "stop"
    return Step("".join(texts), calls, items, finish, read_usage(response))


@dataclass
class ChatAssembler:
    """Assembles streamed Chat Completions chunks: text deltas and tool calls by `index`."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str = ""  # stays empty when the stream ends without a finish_reason
    usage: TokenUsage | None = None  # sent last, when asked for with stream_options

    def feed(self, chunk: Any) -> str | None:
        """Take one chunk; return its text delta, if any."""
        self.usage = read_usage(chunk) or self.usage
        choices = _get(chunk, "choices") or []
        if not choices:
            return None  # the usage chunk
        choice = choices[0]
        delta = _get(choice, "delta")
        for part in (_get(delta, "tool_calls") or []) if delta is not None else []:
            slot = self.calls.setdefault(
                int(_get(part, "index", 0)), {"id": "", "name": "", "arguments": ""}
            )
            if _get(part, "id"):
                slot["id"] = str(_get(part, "id"))
            function = _get(part, "function")
            if function is not None:
                slot["name"] += _get(function, "name") or ""
                slot["arguments"] += _get(function, "arguments") or ""
        if _get(choice, "finish_reason"):
            self.finish = str(_get(choice, "finish_reason"))
        content = _get(delta, "content") if delta is not None else None
        if content:
            self.text.append(content)
            return str(content)
        return None

    def step(self) -> Step:
        message = {
            "role": "assistant",
            "content": "".join(self.text) or None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for _, c in sorted(self.calls.items())
            ],
        }
        # A stream that stopped without a finish_reason cut the turn off: its calls are not whole.
        finish = self.finish or ("length" if self.calls else "stop")
        step = chat_step({"choices": [{"message": message, "finish_reason": finish}]})
        step.usage = self.usage
        return step


@dataclass
class ResponsesAssembler:
    """Assembles Responses stream events. Argument deltas carry the item id and output index,
    not the call id or name, so each call is opened by ``response.output_item.added`` and its
    fragments are joined by output index; ``...arguments.done`` and ``output_item.done`` carry
    the whole arguments and win. The final response, when the stream delivers one, supplies the
    transcript items (reasoning included)."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    final: Any = None

    def feed(self, event: Any) -> str | None:
        kind = _get(event, "type")
        index = int(_get(event, "output_index", -1) or 0)
        if kind == "response.output_text.delta":
            delta = str(_get(event, "delta") or "")
            self.text.append(delta)
            return delta
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = _get(event, "item")
            if _get(item, "type") == "function_call":
                slot = self.calls.setdefault(
                    index, {"id": "", "call_id": "", "name": "", "arguments": ""}
                )
                slot.update(
                    id=str(_get(item, "id") or ""),
                    call_id=str(_get(item, "call_id") or ""),
                    name=str(_get(item, "name") or ""),
                )
                if kind == "response.output_item.done" or _get(item, "arguments"):
                    slot["arguments"] = str(_get(item, "arguments") or "")
        elif kind == "response.function_call_arguments.delta" and index in self.calls:
            self.calls[index]["arguments"] += str(_get(event, "delta") or "")
        elif kind == "response.function_call_arguments.done" and index in self.calls:
            self.calls[index]["arguments"] = str(_get(event, "arguments") or "")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = _get(event, "response")
        return None

    def step(self) -> Step:
        assembled = [{"type": "function_call", **c} for _, c in sorted(self.calls.items())]
        if self.final is not None:
            step = responses_step(self.final)
            if step.calls or not assembled:
                return step
            # a final response without its output: keep what the stream delivered
            return responses_step(
                {
                    "status": _get(self.final, "status"),
                    "output": assembled,
                    "incomplete_details": _get(self.final, "incomplete_details"),
                    "usage": _get(self.final, "usage"),
                }
            )
        text = "".join(self.text)
        output: list[dict[str, Any]] = (
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }
            ]
            if text
            else []
        )
        # the stream ended without a final event: whatever arrived, marked as cut off
        return responses_step(
            {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": output + assembled,
            }
        )


@dataclass
class ToolStats:
    """Figures for one tool over a run."""

    calls: int = 0
    errors: int = 0
    retries: int = 0
    repairs: int = 0
    denied: int = 0
    latency: float = 0.0  # seconds, summed over calls
    max_latency: float = 0.0


@dataclass
class AgentResult:
    """The end of a run: why it ended, the final text, the whole transcript and the figures:
    per tool (`tool_stats`) and the model's tokens summed over the run (`usage`)."""

    outcome: Outcome
    output_text: str
    transcript: list[Any]
    turns: int
    tool_stats: dict[str, ToolStats]
    usage: TokenUsage = field(default_factory=TokenUsage)

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolResultEvent:
    result: Any  # ToolResult


@dataclass(frozen=True)
class TurnFinished:
    turn: int
    finish_reason: str


@dataclass(frozen=True)
class RunFinished:
    result: AgentResult


AgentEvent = TextDelta | ToolCallStarted | ToolResultEvent | TurnFinished | RunFinished


def call_key(call: ToolCall) -> str:
    """Tool and canonical arguments: the identity the loop guard counts."""
    arguments: Any = call.arguments
    if isinstance(arguments, bytes):
        arguments = arguments.decode("utf-8", "replace")
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments)
        except ValueError:  # not JSON, or too deep: the text itself is the identity
            return f"{call.name}\x00{arguments}"
    elif value_problem({"_": arguments}) is not None:
        return f"{call.name}\x00<unbounded {type(arguments).__name__} {id(arguments)}>"
    return f"{call.name}\x00{json.dumps(arguments, sort_keys=True, default=str)}"


def record(stats: dict[str, ToolStats], result: Any) -> None:
    entry = stats.setdefault(result.call.name or "?", ToolStats())
    entry.calls += 1
    if not result.ok:
        entry.errors += 1
    if result.code == "denied":
        entry.denied += 1
    entry.retries += max(0, result.attempts - 1)
    if result.payload.get("repairs"):
        entry.repairs += 1
    entry.latency += result.elapsed
    entry.max_latency = max(entry.max_latency, result.elapsed)


def incomplete_reason(finish: str) -> str:
    return f"your output was cut off (finish_reason {finish}) before this call's arguments were complete"


def final_outcome(finish: str) -> Outcome:
    if finish == "length":
        return "length"
    if finish == "content_filter":
        return "content_filter"
    return "completed"


def deny_reason(verdict: Any) -> str | None:
    """`on_tool_call` returns None/True to allow, False or a reason string to deny."""
    if verdict is None or verdict is True:
        return None
    if isinstance(verdict, str):
        return verdict
    return "the user did not approve this call"
