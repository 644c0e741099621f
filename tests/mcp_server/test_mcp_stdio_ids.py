"""The id `xerj-tools mcp` answers an oversized stdio line with: read from the line's start, only
as the request's own member, and only when it is a valid id; whatever the start holds, the reader
goes on with the next line (one malformed message never ends the server)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from xerj_tools.integrations.mcp._stdio import _Lines, request_id

HEADS = [
    (b'{"jsonrpc":"2.0","id":"\\q","method":"tools/call","params":{"x":"', None),
    (b'{"jsonrpc":"2.0","id":"\\u12","method":"tools/call","params":{"x":"', None),
    (b'{"params":{"arguments":{"id":"victim"}},"jsonrpc":"2.0","id":5,"x":"', 5),
    (b'{"jsonrpc":"2.0","params":{"id":"inner","deeper":[{"id":3}]},"id":"own","x":"', "own"),
    (b'{"jsonrpc":"2.0","id":999999999999999999,"method":"tools/call","x":"', 999999999999999999),
    (b'{"jsonrpc":"2.0","id":9999999999999999999,"method":"tools/call","x":"', None),
    (b'{"jsonrpc":"2.0","\\u0069d":"escaped-key","x":"', "escaped-key"),
    (b'{"jsonrpc":"2.0","method":"tools/call","params":{"x":"', None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping","x":"', None),
    (b"\x00" * 600, None),
]


@pytest.mark.parametrize(("head", "expected"), HEADS)
def test_the_id_is_the_requests_own_and_valid_or_none(head: bytes, expected: Any) -> None:
    assert request_id(head[:512]) == expected


def test_oversized_lines_with_bad_or_nested_ids_are_answered_and_reading_goes_on() -> None:
    read_fd, write_fd = os.pipe()
    replies: list[dict[str, Any]] = []

    async def reply(message: dict[str, Any]) -> None:
        replies.append(message)

    async def scenario() -> list[str]:
        return [line async for line in _Lines(read_fd, 4096, reply)]

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            for head, _ in HEADS:
                pipe.write(head + b"y" * 8192 + b'"}}\n')
            pipe.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')

    writer = threading.Thread(target=feed)
    writer.start()
    lines = asyncio.run(scenario())
    writer.join()
    os.close(read_fd)
    assert [json.loads(line)["id"] for line in lines] == [2]
    assert [r["id"] for r in replies] == [expected for _, expected in HEADS]
    assert all(r["error"]["code"] == -32600 for r in replies)
