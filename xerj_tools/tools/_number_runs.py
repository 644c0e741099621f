"""Long arrays of numbers in a large search answer, counted instead of read.

Most of the time spent decoding a large answer goes to its embeddings: `json` turns each
number into a float (about 0.2 µs each; 6.5 million numbers, 25 MB of ``0.5,``, cost 1.5-2 s),
and the model reads none of them (`_source_view` leaves out every array of more than
`LONG_ARRAY` numbers it did not name). So before a large body is decoded, each array of more
than `LONG_ARRAY` numbers outside a string is replaced by a stand-in, ``[tag, k, n]``: `tag` a
random number drawn for this body, `k` the array's place, `n` its length. A hit's `_source`
gets, as the hit is decoded, a full-length stand-in for each (``[tag, k, 0, 0, …]``, `n` numbers,
made at C speed), so that whether an array is left out, and the marker that says so
(``"<4096 numbers omitted>"``), are the same as for the array itself; any stand-in still there
once the hits are shaped (a named embedding, an array outside `_source`) is replaced by its
array, decoded from the body's own bytes.

An array that is left out is counted, not decoded: a malformed number inside one goes
unnoticed where decoding the whole body would have refused it as not JSON.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
from collections.abc import Callable
from typing import Any

from ._source_view import LONG_ARRAY

__all__ = ["Counted", "count_runs"]

# An array of digits, signs, points, exponents, commas and whitespace only: `[` is not among
# them, so each innermost array is one match. More than LONG_ARRAY numbers take at least
# 2 * LONG_ARRAY + 1 characters.
_RUN = re.compile(rb"\[[-+.0-9eE,\s]{%d,}\]" % (2 * LONG_ARRAY + 1))
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_QUOTE = b'"'
_ESCAPED_QUOTE = b'\\"'


def _runs(body: bytes) -> list[tuple[int, int]]:
    """Where the arrays of more than LONG_ARRAY numbers lie, outside strings, in order."""
    spans: list[tuple[int, int]] = []
    at, inside = 0, False
    for match in _RUN.finditer(body):
        start, end = match.span()
        if body.count(b",", start, end) < LONG_ARRAY:
            continue
        # the quotes between here and the last place looked at, escaped ones not counted (in
        # JSON a backslash escapes one character, never a `[`: `at` is never inside an escape)
        if body.find(_QUOTE, at, start) >= 0:
            quotes = body.count(_QUOTE, at, start)
            if body.find(b"\\", at, start) >= 0:
                quotes -= _ESCAPE.findall(body, at, start).count(_ESCAPED_QUOTE)
            inside ^= bool(quotes & 1)
        at = end  # a run holds no quote
        if not inside:
            spans.append((start, end))
    return spans


class Counted:
    """A body whose long arrays of numbers stand in for themselves (`count_runs`)."""

    def __init__(self, body: bytes, spans: list[tuple[int, int]]) -> None:
        self._body = body
        self._spans = spans
        self._tag = secrets.randbits(62) | 1 << 62
        pieces: list[bytes] = []
        at = 0
        for k, (start, end) in enumerate(spans):
            items = body.count(b",", start, end) + 1
            pieces += (body[at:start], b"[%d,%d,%d]" % (self._tag, k, items))
            at = end
        pieces.append(body[at:])
        self.text = b"".join(pieces)

    def _stands_in(self, value: Any) -> bool:
        return (
            type(value) is list
            and len(value) >= 3
            and type(value[0]) is int
            and value[0] == self._tag
        )

    def expand(self, source: dict[str, Any]) -> dict[str, Any]:
        """`source` (in place) with each stand-in in it made as long as its array."""
        self._each(source, self._full)
        return source

    def restored(self, data: Any) -> Any:
        """`data` (decoded from `text`) with each stand-in left replaced by its array, decoded.
        Raises ValueError when such an array is not JSON (as decoding the body would have)."""
        if self._stands_in(data):
            return self._original(data)
        self._each(data, self._original)
        return data

    def _full(self, stand_in: list[Any]) -> list[Any]:
        if len(stand_in) != 3:
            return stand_in  # made full already
        items = stand_in[2]
        return [self._tag, stand_in[1], *itertools.repeat(0, items - 2)]

    def _original(self, stand_in: list[Any]) -> Any:
        start, end = self._spans[stand_in[1]]
        return json.loads(self._body[start:end])  # ValueError when it is no JSON array

    def _each(self, data: Any, replace: Callable[[list[Any]], Any]) -> None:
        """Each stand-in inside `data`, at any depth, replaced (in place) by `replace(it)`."""
        stack = [data]
        while stack:
            value = stack.pop()
            items = value.items() if type(value) is dict else enumerate(value)
            for key, item in items:
                if type(item) is dict:
                    stack.append(item)
                elif type(item) is list:
                    if self._stands_in(item):
                        value[key] = replace(item)
                    else:
                        stack.append(item)


def count_runs(body: bytes) -> Counted | None:
    """`body` with its long arrays of numbers standing in for themselves; None when it has
    none (then it is decoded as it is)."""
    spans = _runs(body)
    return Counted(body, spans) if spans else None
