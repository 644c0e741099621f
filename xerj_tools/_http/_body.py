"""What the engine sent, made safe to hold: bounded decoding of a body, and JSON that is finite
and nested at most `MAX_DEPTH` levels (`_json.clean`).

The engine is untrusted input. A compressed body is decoded here, with an output bound, because
httpx2 decodes a whole network chunk at once (a 2 KB ``gzip, gzip`` body holds a gigabyte);
JSON that Python cannot decode (too deep) or that JSON cannot encode (NaN, ``1e999``) never
reaches the code that shapes a tool message.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

    from ._deadline import Deadline

__all__ = [
    "BodyReader",
    "YIELDING_BYTES",
    "TooLarge",
    "Undecodable",
    "decode_json",
    "read_async",
    "reader",
]

_STEP = 64 * 1024  # decoded bytes produced per step, so that memory stays near the cap


class TooLarge(Exception):
    """The decoded body passed the cap."""


class Undecodable(Exception):
    """The body's content coding cannot be (or will not be) decoded."""


class BodyReader:
    """Collects a body from its raw (still content-coded) chunks, decoding as it goes and
    counting decoded bytes against `limit`.

    The dispatcher asks for ``Accept-Encoding: identity`` and XERJ never compresses (its router's
    layers are auth, request id, trace, CORS and body limit: engine/crates/xerj-api/src/
    router.rs:152-160; tower-http is built without "compression": engine/Cargo.toml:35), so a
    coded body comes from something in between. One layer of ``gzip`` or ``deflate`` is decoded;
    anything else (``br``, ``zstd``, stacked codings) is refused rather than trusted.
    """

    def __init__(self, content_encoding: str | None, limit: int, *, raw: bool = True) -> None:
        self.raw = raw  # False: the chunks come already decoded
        codings = (
            [c.strip().lower() for c in content_encoding.split(",")] if content_encoding else []
        )
        codings = [c for c in codings if c and c != "identity"]
        self._limit = limit
        self._size = 0
        self._data = bytearray()
        self._inflater: Any = None
        self._deflate = False
        self._head = b""
        if len(codings) > 1:
            raise Undecodable(
                f"stacked content codings are refused (Content-Encoding: {content_encoding})"
            )
        if codings and codings[0] in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif codings and codings[0] == "deflate":
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS)
            self._deflate = True
        elif codings:
            raise Undecodable(f"the content coding {codings[0]!r} is not supported")

    def feed(self, chunk: bytes) -> None:
        if self._inflater is None:
            self._keep(chunk)
            return
        if self._deflate:  # zlib-wrapped as the RFC says, or raw as some servers send it
            self._head += chunk
            if len(self._head) < 2:
                return
            chunk, self._head, self._deflate = self._head, b"", False
            if (chunk[0] & 0x0F) != 8 or (chunk[0] << 8 | chunk[1]) % 31:
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        try:
            while chunk and not self._inflater.eof:
                self._keep(self._inflater.decompress(chunk, _STEP))
                chunk = self._inflater.unconsumed_tail
        except zlib.error as exc:
            raise Undecodable(f"the compressed body is corrupt ({exc})") from None

    def decoded(self) -> bytes:
        """The decoded body; raises `Undecodable` when a compressed body was cut short."""
        if self._inflater is not None:
            try:
                # all input is consumed: what zlib still holds is at most one match long
                out = b"" if self._deflate else self._inflater.flush()
            except zlib.error as exc:
                raise Undecodable(f"the compressed body is corrupt ({exc})") from None
            self._keep(out)
            if self._deflate or not self._inflater.eof:
                raise Undecodable("the compressed body ended before its end")
        return bytes(self._data)

    def _keep(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._limit:
            raise TooLarge
        self._data += data


YIELDING_BYTES = 256 * 1024  # a body larger than this is decoded letting other threads run


def _unchanged(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


def decode_json(body: bytes) -> tuple[Any, str | None]:
    """The body as JSON and None, or None and why it could not be read.

    ``NaN``, ``Infinity`` and numbers past a double (``1e999``) become null: JSON has no such
    values, and a tool message must be strict JSON.
    """
    if not body:
        return None, None
    # A large body is decoded with an object_hook that changes nothing: the decoder calls it as
    # each object closes, and a Python call is where the interpreter hands the GIL to another
    # thread (every 5 ms), which one C call through megabytes never does. Decoded on a worker
    # thread (`AsyncDispatcher`), it leaves the event loop's thread free to run meanwhile.
    hook = _unchanged if len(body) > YIELDING_BYTES else None
    try:
        return json.loads(body, parse_constant=lambda _: None, object_hook=hook), None
    except RecursionError:
        return None, "the JSON is nested too deeply to read"
    except ValueError:
        return None, None


def reader(response: httpx2.Response, limit: int) -> BodyReader:
    # A response built from bytes (a caller's `httpx2.MockTransport`) was read, and decoded, by
    # httpx2 when it was made; only a streamed one is read raw and decoded here.
    if response.is_stream_consumed:
        return BodyReader(None, limit, raw=False)
    return BodyReader(response.headers.get("content-encoding"), limit)


async def read_async(response: httpx2.Response, body: BodyReader, deadline: Deadline) -> bool:
    """Feed `body` the raw chunks of `response`; False when the deadline passed first.

    Stopping early (cap, bad coding, deadline) must not leave httpx2's chain of async generators
    to the garbage collector, whose finalizers need a running loop (on 3.13 a closed loop turns
    them into errors): the response is closed, and the chain run to its end, which then comes
    at once.
    """
    chunks = response.aiter_raw()
    try:
        async for chunk in chunks:
            body.feed(chunk)
            if deadline.expired:
                await _abandon(response, chunks)
                return False
    except (TooLarge, Undecodable):
        await _abandon(response, chunks)
        raise
    return True


async def _abandon(response: httpx2.Response, chunks: AsyncGenerator[bytes, None]) -> None:
    from ._deadline import http_library  # here: offline validation imports no httpx2

    lib = http_library(response)  # httpx2, or a caller's plain httpx client's
    await response.aclose()
    with contextlib.suppress(StopAsyncIteration, lib.HTTPError, lib.StreamError):
        for _ in range(16):  # what h11 had buffered, then a read error from the closed socket
            await anext(chunks)
    await chunks.aclose()
