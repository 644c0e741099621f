"""MCP over stdio with a bound on one message: a line longer than the limit is never held whole.

The SDK's stdio transport reads a whole line before looking at it, so one 256 MB line took the
server past 1.3 GB. Here stdin is read in chunks; once a line passes `max_bytes` the rest of it
is skipped as it arrives (never stored), and the client gets a JSON-RPC error for it (the id is
read from the line's first bytes when it is there, as the request's own member: a request whose
answer never comes would leave the client waiting). Memory stays within about `max_bytes` plus one chunk.

Both descriptors are waited on by the event loop (readable, writable), not by a thread blocked
in read(2) or write(2): cancelling the session (SIGINT, SIGTERM) ends it at once, while the
client keeps stdin open or stops reading stdout, and the process then exits normally. A
descriptor the loop cannot wait on (a regular file, ``/dev/null``) never blocks: it is read and
written on a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "bounded_stdio_server"]

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # the SDK's cap on an HTTP request body
_CHUNK = 64 * 1024
# The tokens of a JSON text's start: a string (closed), a punctuation mark, a bare word or number.
_TOKEN = re.compile(rb'\s*("(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+)')
_ID_NUMBER = re.compile(rb"-?\d{1,18}")


def request_id(head: bytes) -> str | int | None:
    """The ``id`` member of the JSON object `head` begins, if it is within `head` and is a
    string (at most 200 characters) or an integer of at most 18 digits; else None.

    Only the object's own members count: an ``"id"`` inside ``params`` is another object's. A
    string id must be valid JSON (a bad or cut escape is no id), and the scan stops where the
    head is cut or stops being JSON."""
    depth, position, expect_key, key = 0, 0, False, None
    while (match := _TOKEN.match(head, position)) is not None:
        token, position = match.group(1), match.end()
        if token in (b"{", b"["):
            depth += 1
            expect_key = token == b"{" and depth == 1
            if depth == 1 and token == b"[":
                return None  # a batch, not a request
            continue
        if token in (b"}", b"]"):
            depth -= 1
            continue
        if depth != 1:
            continue
        if token == b",":
            expect_key, key = True, None
        elif token == b":":
            expect_key = False
        elif expect_key:
            key = token
        elif key is not None and _is_id_key(key):
            return _id_value(token)
    return None


def _is_id_key(token: bytes) -> bool:
    if token == b'"id"':
        return True
    if b"\\" not in token:  # only an escaped spelling (\u0069d) can still be "id"
        return False
    try:
        return bool(json.loads(token) == "id")
    except ValueError:
        return False


def _id_value(token: bytes) -> str | int | None:
    if _ID_NUMBER.fullmatch(token):
        return int(token)
    if token.startswith(b'"'):
        try:
            value = json.loads(token)
        except ValueError:  # a bad escape (\q), a cut \u escape
            return None
        if isinstance(value, str) and len(value) <= 200:
            return value
    return None


class _Lines:
    """The async iterator of text lines the SDK reads, each at most `max_bytes`; an oversized
    line is answered through `reply` and skipped."""

    def __init__(self, fd: int, max_bytes: int, reply: Any) -> None:
        self.fd, self.max_bytes, self.reply = fd, max_bytes, reply
        self.buffer = bytearray()
        self.skipping: bytes | None = None  # the first bytes of a line being skipped
        self.eof = False

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[: newline + 1])
                del self.buffer[: newline + 1]
                if self.skipping is None and len(line) > self.max_bytes + 1:
                    self.skipping = line[:512]
                if self.skipping is not None:
                    head, self.skipping = self.skipping, None
                    await self._refuse(head)
                    continue
                return line.decode("utf-8", "replace")
            if self.skipping is None and len(self.buffer) > self.max_bytes:
                self.skipping = bytes(self.buffer[:512])
            if self.skipping is not None:
                self.buffer.clear()  # the line is past the limit: its bytes are dropped as read
            if self.eof:
                if self.buffer:
                    line, self.buffer = bytes(self.buffer), bytearray()
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            chunk = await _read(self.fd)
            if not chunk:
                self.eof = True
            self.buffer += chunk

    async def _refuse(self, head: bytes) -> None:
        await self.reply(
            {
                "jsonrpc": "2.0",
                "id": request_id(head),
                "error": {
                    "code": -32600,
                    "message": f"message longer than {self.max_bytes} bytes "
                    "(xerj-tools mcp --max-message-bytes); it was not read",
                },
            }
        )


class _Output:
    """stdout as the SDK writes it (``write`` then ``flush``), shared with the refusals."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = asyncio.Lock()
        self.pending = bytearray()

    async def write(self, text: str) -> int:
        self.pending += text.encode("utf-8")
        return len(text)

    async def flush(self) -> None:
        async with self.lock:
            data, self.pending = bytes(self.pending), bytearray()
            await _write_all(self.fd, data)

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        async with self.lock:
            await _write_all(self.fd, data)


async def _ready(fd: int, writing: bool) -> bool:
    """Wait until the event loop sees `fd` readable (or writable); False if the loop cannot
    wait on it (epoll refuses regular files and ``/dev/null``: they never block)."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    add, remove = (loop.add_writer, loop.remove_writer) if writing else (
        loop.add_reader, loop.remove_reader
    )  # fmt: skip
    try:
        add(fd, wake)
    except PermissionError:
        return False
    try:
        await ready
    finally:
        remove(fd)
    return True


async def _read(fd: int) -> bytes:
    if await _ready(fd, writing=False):
        return os.read(fd, _CHUNK)  # readable: returns at once, with data or at the end
    return await anyio.to_thread.run_sync(os.read, fd, _CHUNK)


async def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        if await _ready(fd, writing=True):
            # A pipe that the loop sees writable takes PIPE_BUF bytes without blocking.
            view = view[os.write(fd, view[: select.PIPE_BUF]) :]
        else:
            view = view[await anyio.to_thread.run_sync(os.write, fd, view) :]


@asynccontextmanager
async def bounded_stdio_server(max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> AsyncIterator[Any]:
    """The SDK's `stdio_server`, fed by a reader that bounds each message to `max_bytes`."""
    from mcp.server import stdio

    claim = getattr(stdio, "_claim_fd", None)
    restore: list[Any] = []
    if claim is not None:  # the SDK moves fd 0/1 aside so stray prints miss the wire
        stdin_file, release_in = claim(0, sys.stdin, "rb", stdio._open_stdin_diversion)
        stdout_file, release_out = claim(1, sys.stdout, "wb", stdio._open_stdout_diversion)
        restore = [release_out, release_in]
        in_fd, out_fd = stdin_file.fileno(), stdout_file.fileno()
    else:  # pragma: no cover - an SDK without it: the descriptors as they are
        in_fd, out_fd = 0, 1
    try:
        output = _Output(out_fd)
        lines = _Lines(in_fd, max_bytes, output.send)
        async with stdio.stdio_server(stdin=lines, stdout=output) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        for release in restore:
            if release is not None:
                release()
