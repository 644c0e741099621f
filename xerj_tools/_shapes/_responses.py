"""Responses: ``function_call`` items in, one ``function_call_output`` item per call out."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._base import Definable, Step, ToolCall, ToolMessage, WireShape, get, text
from ._usage import read_usage

__all__ = ["RESPONSES", "ResponsesAssembler", "responses_step"]

_KINDS = ("function_call", "custom_tool_call")


class Responses(WireShape):
    """``{"type": "function_call", "call_id", "name", "arguments": "<JSON text>"}`` (and
    ``custom_tool_call``), answered ``{"type": "function_call_output", "call_id", "output"}``.
    Outputs pair with ``call_id``, not the item's ``id``."""

    name = "responses"
    title = "Responses"
    containers = ("input", "output")
    request_key = "input"

    def claims(self, obj: Any) -> bool:
        return get(obj, "type") in _KINDS

    def read(self, obj: Any) -> ToolCall:
        custom = get(obj, "type") == "custom_tool_call"
        arguments = get(obj, "input" if custom else "arguments")
        return ToolCall(text(obj, "call_id"), text(obj, "name"), arguments, "responses", custom)

    def answer(self, call: ToolCall, content: str, *, ok: bool) -> ToolMessage:
        if call.custom:
            return {"type": "custom_tool_call_output", "call_id": call.call_id, "output": content}
        return {"type": "function_call_output", "call_id": call.call_id, "output": content}

    def answered(self, message: Any) -> str | None:
        if get(message, "type") in ("function_call_output", "custom_tool_call_output"):
            return str(get(message, "call_id"))
        return None

    def definition(self, spec: Definable) -> dict[str, Any]:
        """The flat form: ``{"type": "function", "name": ..., "parameters": ..., "strict": ...}``.

        `strict` is always a boolean: the tools file's own, else ``False``. In Responses an
        omitted (or null) `strict` lets OpenAI normalise the schema into strict mode where it can,
        which makes every optional property required-but-nullable, so the model would send
        ``null`` for what it means to leave out; only an explicit ``false`` opts out."""
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": copy.deepcopy(dict(spec.parameters)),
            "strict": spec.strict if spec.strict is not None else False,
        }

    def create(self, client: Any) -> Any:
        return client.responses.create

    def step(self, response: Any) -> Step:
        return responses_step(response)

    def assembler(self) -> ResponsesAssembler:
        return ResponsesAssembler()


RESPONSES = Responses()


def _dump(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped: dict[str, Any] = obj.model_dump(exclude_none=True, mode="json")
    return dumped


def responses_step(response: Any) -> Step:
    """Read a Responses API response; every output item joins the transcript (reasoning too)."""
    items: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    texts: list[str] = []
    for item in get(response, "output") or []:
        kind = get(item, "type")
        if kind == "function_call":
            call_id = text(item, "call_id")  # missing or not a string: "" (the loop names it)
            call = ToolCall(
                call_id, str(get(item, "name") or ""), get(item, "arguments"), "responses"
            )
            calls.append(call)
            clean = {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments or "",
            }
            if get(item, "id"):
                clean["id"] = get(item, "id")
            items.append(clean)
            continue
        if kind == "message":
            for part in get(item, "content") or []:
                if get(part, "type") == "output_text":
                    texts.append(str(get(part, "text") or ""))
        items.append(_dump(item))
    status = get(response, "status")
    reason = get(get(response, "incomplete_details"), "reason")  # None without the details
    if status == "incomplete":
        finish_reason = "content_filter" if reason == "content_filter" else "length"
    else:
        finish_reason = "tool_calls" if calls else "stop"
    return Step("".join(texts), calls, items, finish_reason, read_usage(response))


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
        kind = get(event, "type")
        index = int(get(event, "output_index", -1) or 0)
        if kind == "response.output_text.delta":
            delta = str(get(event, "delta") or "")
            self.text.append(delta)
            return delta
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = get(event, "item")
            if get(item, "type") == "function_call":
                slot = self.calls.setdefault(
                    index, {"id": "", "call_id": "", "name": "", "arguments": ""}
                )
                slot.update(
                    id=str(get(item, "id") or ""),
                    call_id=str(get(item, "call_id") or ""),
                    name=str(get(item, "name") or ""),
                )
                if kind == "response.output_item.done" or get(item, "arguments"):
                    slot["arguments"] = str(get(item, "arguments") or "")
        elif kind == "response.function_call_arguments.delta" and index in self.calls:
            self.calls[index]["arguments"] += str(get(event, "delta") or "")
        elif kind == "response.function_call_arguments.done" and index in self.calls:
            self.calls[index]["arguments"] = str(get(event, "arguments") or "")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = get(event, "response")
        return None

    def step(self) -> Step:
        assembled = [{"type": "function_call", **c} for _, c in sorted(self.calls.items())]
        if self.final is not None:
            step = responses_step(self.final)
            if step.calls or not assembled:
                return step
            # a final response without its output: keep what the stream delivered
            final = {k: get(self.final, k) for k in ("status", "incomplete_details", "usage")}
            return responses_step({**final, "output": assembled})
        text = "".join(self.text)
        content = [{"type": "output_text", "text": text}]
        message = {"type": "message", "role": "assistant", "content": content}
        output: list[dict[str, Any]] = [message] if text else []
        # the stream ended without a final event: whatever arrived, marked as cut off
        cut = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
        return responses_step({**cut, "output": output + assembled})
