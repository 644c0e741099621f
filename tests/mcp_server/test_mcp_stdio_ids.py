"""The stdio reader of `xerj-tools mcp`: an oversized line is skipped as it arrives, never held
whole, and answered with an id read from the line's start, only as the request's own member, and
only when it is a valid id; whatever the start holds, the reader goes on with the next line (one
malformed message never ends the server)."""

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


def read(chunks: list[bytes]) -> tuple[list[Any], list[dict[str, Any]]]:
    """What `_Lines` (at most 4096 bytes a line) reads of `chunks`, written to a pipe by a thread:
    the ids of the lines it hands on, and its replies."""
    read_fd, write_fd = os.pipe()
    replies: list[dict[str, Any]] = []

    async def reply(message: dict[str, Any]) -> None:
        replies.append(message)

    async def scenario() -> list[Any]:
        lines = _Lines(read_fd, 4096, reply)
        ids = []
        async for line in lines:
            ids.append(json.loads(line)["id"])
            assert len(lines.buffer) <= 4096 + 64 * 1024  # never the whole long line
        return ids

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            for chunk in chunks:
                pipe.write(chunk)

    writer = threading.Thread(target=feed)
    writer.start()
    ids = asyncio.run(scenario())
    writer.join()
    os.close(read_fd)
    return ids, replies


PING_1, PING_2 = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'


def test_a_long_line_is_skipped_as_it_arrives_and_answered_with_its_id() -> None:
    long_line = [b'{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"x":"', *[b"y" * 65536] * 64, b'"}}\n']
    ids, replies = read([PING_1, *long_line, PING_2])
    assert ids == [1, 2]
    assert [r["id"] for r in replies] == ["call-7"] and replies[0]["error"]["code"] == -32600


def test_oversized_lines_with_bad_or_nested_ids_are_answered_and_reading_goes_on() -> None:
    ids, replies = read([head + b"y" * 8192 + b'"}}\n' for head, _ in HEADS] + [PING_2])
    assert ids == [2]
    assert [r["id"] for r in replies] == [expected for _, expected in HEADS]
    assert all(r["error"]["code"] == -32600 for r in replies)
