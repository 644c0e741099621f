"""The lines offline validation reads: a binary stream cut into blocks of lines, numbered
as text mode numbers them, for the lane (`_lane`) and the full path; and whether an input is JSON
Lines at all (`jsonl_head`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, NamedTuple

__all__ = ["CHUNK", "Block", "Head", "LaneLines", "blocks_of", "jsonl_head"]

_NEWLINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
CHUNK = 1 << 20  # bytes read at a time: memory stays flat in the input's size

Block = tuple[int, list[bytes], bytes, "list[Any] | None"]
"""(the number of the first line, the lines as the lane reads them, the ending each line's
text needs back for the full path, the full path's own lines where they differ (else None))."""


def _split(raw: bytes) -> list[bytes]:
    """One line as text mode reads it: a lone ``\r`` ends a line too."""
    if b"\r" in raw and not (raw.endswith(b"\r\n") and raw.count(b"\r") == 1):
        return _NEWLINE.findall(raw)
    return [raw]


class LaneLines:
    """The lines of a binary stream numbered as text mode numbers them (universal newlines), from
    `start`: `blocks` reads the stream in large chunks and hands over their lines a list at a
    time, cut at ``\n`` (a chunk holding a ``\r`` is cut as text mode cuts it, line by line)."""

    def __init__(self, stream: BinaryIO, start: int = 1) -> None:
        self.stream, self.start = stream, start

    def blocks(self) -> Iterator[Block]:
        number = self.start
        read = self.stream.read
        rest = b""
        held: list[bytes] = []  # chunks of a line longer than a chunk, joined once it ends
        while True:
            chunk = read(CHUNK)
            if not chunk:
                break
            cut = chunk.rfind(b"\n")
            if cut < 0:
                held.append(chunk)  # (`rest += chunk` would copy the line at every chunk)
                continue
            if held:
                rest = b"".join([rest, *held])
                held = []
            if chunk.find(b"\r", 0, cut) < 0 and b"\r" not in rest:
                # the chunk's own lines, split in place (no copy of the chunk): its first joins
                # what the last chunk left, its last (after the last newline) is left for the next
                lines = chunk.split(b"\n")
                tail = lines.pop()
                if rest:
                    lines[0] = rest + lines[0]
                rest = tail
                yield number, lines, b"\n", None
            else:
                body, rest = rest + chunk[:cut], chunk[cut + 1 :]
                lines = [part for raw in body.split(b"\n") for part in _split(raw + b"\n")]
                yield number, lines, b"", None
            number += len(lines)
        if held:
            rest = b"".join([rest, *held])
            held = []
        if rest:
            last, rest = _split(rest), b""  # (the reader may drop the line: nothing here keeps it)
            yield number, last, b"", None


def blocks_of(lines: Iterable[tuple[int, Any]]) -> Iterator[Block]:
    """Numbered lines of any kind (bytes, text, decoded records, None) as blocks: runs of bytes
    lines numbered one after another together (up to 1,024), any other line alone; the lane reads
    bytes and UTF-8 text, and sees nothing it can pass in the rest."""
    run: list[bytes] = []
    first = 0
    for number, line in lines:
        if type(line) is bytes:
            if run and number == first + len(run) and len(run) < 1024:
                run.append(line)
                continue
            if run:
                yield first, run, b"", None
            first, run = number, [line]
            continue
        if run:
            yield first, run, b"", None
            run = []
        yield number, [_utf8(line)], b"", [line]
    if run:
        yield first, run, b"", None


def _utf8(line: Any) -> bytes:
    """Text as UTF-8 (b"" where it holds a lone surrogate); anything else b"" (no JSON)."""
    if type(line) is str:
        try:
            return line.encode()
        except UnicodeEncodeError:
            return b""
    return b""


class Head(NamedTuple):
    """What the head of an input says (`jsonl_head`)."""

    jsonl: bool
    error: str | None = None  # where not JSON Lines: why its first non-blank line is no JSON
    final: bool = False  # `error` is what `read_calls` would say of the whole input


_NOT_UTF8 = "the input is not UTF-8 text"


def jsonl_head(stream: BinaryIO) -> Head:
    """Whether a seekable binary input is JSON Lines, as `read_calls` decides it (its first
    non-blank line is a JSON value), and why not; the stream is left at its start. Where the
    first non-blank line is the whole input (no line ends it) or is not UTF-8, `error` is
    `final`: `read_calls` would read that same line again as one document and refuse it so, and
    the caller can say it without a second reading. The line is held once, as text: a line of
    gigabytes costs about twice its size."""
    from .._json import _load
    from ._validate import jsonl_error

    orjson = _load()
    try:
        for _, lines, ending, _ in LaneLines(stream).blocks():
            for at, raw in enumerate(lines):
                if not raw.strip():
                    raw.decode("utf-8")  # (blank, but maybe not UTF-8)
                    continue
                if orjson and len(raw) <= CHUNK:  # (refusing a long line, orjson copies it)
                    try:  # a JSON value to orjson (stricter than `json`) is one to `read_calls`
                        orjson.loads(raw)
                        return Head(True)
                    except ValueError:
                        pass
                whole = at == len(lines) - 1 and not ending and not raw.endswith((b"\n", b"\r"))
                text = raw.decode("utf-8")
                del raw
                lines.clear()  # the bytes go: the text is what is read from here on
                error = jsonl_error(text, fast=False)
                return Head(error is None, error, whole and error is not None)
        return Head(True)  # empty: no line, no call, as the text path reads it
    except UnicodeDecodeError:
        return Head(False, _NOT_UTF8, True)
    finally:
        stream.seek(0)
