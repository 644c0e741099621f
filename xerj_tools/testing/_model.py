"""A scripted model: an OpenAI-compatible server on 127.0.0.1 that replays assistant turns.

It serves ``POST /v1/chat/completions`` and ``POST /v1/responses``, streamed (SSE) and not, so
the real `openai` client can drive a loop against it. Each request takes the next `Turn` of the
script; every request body is recorded in `requests`, so tests can assert on what the model was
sent. It is a test double, not a model.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ._loopback import LoopbackServer, QuietHandler

__all__ = ["ScriptedModel", "Turn"]


@dataclass(frozen=True)
class Turn:
    """One assistant turn: some text, tool calls ``(name, arguments)``, or both.

    `arguments` may be a dict (sent as JSON) or a raw string (sent as is, even if broken).
    `tool_calls` may also be a function of the request body (the conversation so far), called
    when the turn is taken: a script that acts on what its tools answered (a field it learned).
    `finish_reason` overrides the natural one (``"tool_calls"`` or ``"stop"``), e.g. ``"length"``.
    `delay` holds the answer back that many seconds (to test cancellation mid-request).
    """

    text: str | None = None
    tool_calls: (
        Sequence[tuple[str, Any]] | Callable[[Mapping[str, Any]], Sequence[tuple[str, Any]]]
    ) = ()
    finish_reason: str | None = None
    delay: float = 0.0

    def raw_calls(self, ids: Iterator[int]) -> list[tuple[str, str, str]]:
        out = []
        assert not callable(self.tool_calls), "resolved when the turn was taken"
        for name, arguments in self.tool_calls:
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            out.append((f"call_{next(ids)}", name, raw))
        return out


def _pieces(text: str) -> list[str]:
    size = max(1, -(-len(text) // 3))  # three pieces at most
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _chat(kind: str, model: str, choice: dict[str, Any]) -> dict[str, Any]:
    """A `chat.completion` or a `chat.completion.chunk`, with one choice."""
    head = {"id": "chatcmpl-scripted", "object": kind, "created": 1764633600, "model": model}
    return {**head, "choices": [{"index": 0, **choice}]}


def _finish_reason(turn: Turn, calls: list[tuple[str, str, str]]) -> str:
    return turn.finish_reason or ("tool_calls" if calls else "stop")


def _chat_completion(turn: Turn, calls: list[tuple[str, str, str]], model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": raw}}
            for cid, name, raw in calls
        ]
    choice = {"message": message, "finish_reason": _finish_reason(turn, calls), "logprobs": None}
    return {**_chat("chat.completion", model, choice), "usage": dict(_CHAT_USAGE)}


_CHAT_USAGE = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


def _chat_chunks(
    turn: Turn, calls: list[tuple[str, str, str]], model: str, usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return _chat(
            "chat.completion.chunk", model, {"delta": delta, "finish_reason": finish_reason}
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(turn.text) if turn.text else []:
        yield chunk({"content": piece})
    # Parallel calls stream one after another, told apart by `index`; the first delta of each
    # carries id, type and name with empty arguments.
    for index, (cid, name, raw) in enumerate(calls):
        call = {"index": index, "id": cid, "type": "function"}
        yield chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(raw):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(turn, calls))
    if usage:  # asked for with stream_options.include_usage: one last chunk, without choices
        yield {**chunk({}), "choices": [], "usage": dict(_CHAT_USAGE)}


def _response_items(turn: Turn, calls: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for cid, name, raw in calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{cid}",
                "call_id": cid,
                "name": name,
                "arguments": raw,
                "status": "completed",
            }
        )
    return items


def _response(turn: Turn, calls: list[tuple[str, str, str]], model: str) -> dict[str, Any]:
    incomplete = turn.finish_reason == "length"
    return {
        "id": "resp_scripted",
        "object": "response",
        "created_at": 1764633600,
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": _response_items(turn, calls),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20},
    }


def _response_events(
    turn: Turn, calls: list[tuple[str, str, str]], model: str
) -> Iterator[dict[str, Any]]:
    final = _response(turn, calls, model)
    yield {"type": "response.created", "response": {**final, "status": "in_progress", "output": []}}
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
            for piece in _pieces(text):
                yield {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
        else:
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
            for piece in _pieces(item["arguments"]):
                yield {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": piece,
                }
            yield {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": index,
                "arguments": item["arguments"],
            }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield {"type": kind, "response": final}


class _Handler(QuietHandler):
    server: _Server

    def do_POST(self) -> None:
        model = self.server.model
        body = self.read_json()
        path = self.path.split("?")[0]
        turn = model._take(path, body, dict(self.headers.items()))
        if turn is None:
            error = {"message": "the script has no more turns", "type": "invalid_request_error"}
            self.send_json(400, {"error": error})
            return
        if turn.delay and model._stopping.wait(turn.delay):
            return
        calls = turn.raw_calls(model._ids)
        name = str(body.get("model", "scripted"))
        if path.endswith("/chat/completions"):
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = _chat_chunks(turn, calls, name, usage)
                self._sse(({"data": c} for c in chunks), done=True)
            else:
                self.send_json(200, _chat_completion(turn, calls, name))
        elif body.get("stream"):
            events = _response_events(turn, calls, name)
            self._sse(
                (
                    {"event": e["type"], "data": {**e, "sequence_number": i}}
                    for i, e in enumerate(events)
                )
            )
        else:
            self.send_json(200, _response(turn, calls, name))

    def _sse(self, events: Iterator[dict[str, Any]], done: bool = False) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            head = f"event: {event['event']}\n" if "event" in event else ""
            self.wfile.write(f"{head}data: {json.dumps(event['data'])}\n\n".encode())
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class _Server(LoopbackServer):
    model: ScriptedModel


@dataclass
class ScriptedModel:
    """Replays `script` to whoever asks, one turn per request. Use as a context manager.

    with ScriptedModel([Turn(tool_calls=[("xerj_search", {...})]), Turn(text="Done.")]) as model:
        client = openai.OpenAI(base_url=model.base_url, api_key="scripted")
    """

    script: Sequence[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._turns = list(self.script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server = _Server(0, _Handler)
        self._server.model = self

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def remaining(self) -> int:
        return len(self._turns)

    def _take(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Turn | None:
        with self._lock:
            self.requests.append({"path": path, **body})
            self.headers.append(headers)
            turn = self._turns.pop(0) if self._turns else None
        if turn is not None and callable(turn.tool_calls):
            turn = replace(turn, tool_calls=tuple(turn.tool_calls(body)))
        return turn

    def __enter__(self) -> ScriptedModel:
        self._server.start("scripted-model")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.stop()
