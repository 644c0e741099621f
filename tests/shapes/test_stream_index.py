"""A streamed tool-call delta with ``"index": null``, from a local server that
streams Server-Sent Events as OpenAI's API does, read by the real `openai` client."""

from __future__ import annotations

import json
import socket
from typing import Any

from xerj_tools import Dispatcher, RunFinished, stream_agent
from xerj_tools.testing import XerjStandIn

from conftest import openai_client
from rawserver import RawServer


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def call_delta(index: Any, arguments: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        part |= {"id": call_id, "type": "function"}
        part["function"]["name"] = name
    return chunk({"tool_calls": [part]})


DOCS = json.dumps({"index": "docs", "query": {"match_all": {}}, "size": 1})
TICKETS = json.dumps({"index": "tickets", "query": {"match_all": {}}, "size": 1})

# Two calls whose deltas carry `"index": null`: each starts with its id, and goes on without one.
TOOL_TURN = [
    chunk({"role": "assistant", "content": None}),
    call_delta(None, DOCS[:10], "call_a", "xerj_search"),
    call_delta(None, DOCS[10:]),
    call_delta(None, TICKETS[:7], "call_b", "xerj_search"),
    call_delta(None, TICKETS[7:]),
    chunk({}, "tool_calls"),
]
FINAL_TURN = [chunk({"role": "assistant", "content": "done"}), chunk({}, "stop")]


def test_tool_call_deltas_with_a_null_index_are_assembled_into_their_calls(xerj: XerjStandIn) -> None:
    turns = [TOOL_TURN, FINAL_TURN]

    def sse(conn: socket.socket, server: RawServer) -> None:
        events = turns.pop(0)
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip

    messages: list[Any] = [{"role": "user", "content": "q"}]
    with RawServer(sse) as server, Dispatcher(url=xerj.url) as dispatcher:
        client = openai_client(server.url + "/v1")
        events = list(stream_agent(client, model="m", messages=messages, dispatcher=dispatcher))
    assert isinstance(events[-1], RunFinished) and events[-1].result.outcome == "completed"
    calls = messages[1]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("call_a", DOCS), ("call_b", TICKETS)]
    answers = [(m["tool_call_id"], json.loads(m["content"])["hits"][0]["_index"]) for m in messages[2:4]]
    assert answers == [("call_a", "docs"), ("call_b", "tickets")]
