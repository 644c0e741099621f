"""How XERJ reads a request body before a handler runs: its extractors and serde's messages.

Citations are XERJ paths at commit e6e8e6a (``engine/crates/xerj-api/src/…``); the table in
``CONTRACT.md`` lists them all. Messages follow serde_json's wording; the ``line``/``column``
suffix is computed from the raw bytes the way serde_json reports it for the cases the
tools can reach (a wrong top-level value, a missing or unknown field).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BodyError",
    "check_content_type",
    "first_unknown_key",
    "optional_json",
    "parse_exception",
    "serde_struct",
]


class BodyError(Exception):
    """A body XERJ's extractor refuses: (status, ES-shaped body without root_cause)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason

    def body(self) -> dict[str, Any]:
        return parse_exception(self.status, self.reason)


def parse_exception(status: int, reason: str) -> dict[str, Any]:
    # extract.rs:80-103: `parse_exception`, no `root_cause`, top-level `status`.
    return {"error": {"type": "parse_exception", "reason": reason}, "status": status}


@dataclass(frozen=True)
class TopLevel:
    """Where one top-level key and its value sit in the raw body (1-based line/column)."""

    key: str
    key_end: tuple[int, int]  # serde position after the key (and any blanks before `:`)
    value_start: tuple[int, int]  # Jackson position of the value's first byte
    value_end: tuple[int, int] | None  # serde position after the value; None: it never ends
    first_byte: int


class _Scanner:
    """A port of XERJ's `SearchKeyScanner` (es_compat.rs:2326-2442): position-tracking, lenient."""

    def __init__(self, raw: bytes) -> None:
        self.b, self.i, self.line, self.col = raw, 0, 1, 1

    def cur(self) -> int | None:
        return self.b[self.i] if self.i < len(self.b) else None

    def adv(self) -> None:
        c = self.cur()
        if c is None:
            return
        self.line, self.col = (self.line + 1, 1) if c == 0x0A else (self.line, self.col + 1)
        self.i += 1

    def skip_ws(self) -> None:
        while self.cur() in (0x20, 0x09, 0x0D, 0x0A):
            self.adv()

    def read_string(self) -> str | None:
        if self.cur() != 0x22:
            return None
        self.adv()
        out = bytearray()
        while (c := self.cur()) is not None:
            if c == 0x22:
                self.adv()
                return out.decode("utf-8", "replace")
            if c == 0x5C:
                self.adv()
                if (e := self.cur()) is not None:
                    out.append(e)
                    self.adv()
                continue
            out.append(c)
            self.adv()
        return None

    def skip_value(self) -> bool:
        self.skip_ws()
        c = self.cur()
        if c is None:
            return False
        if c == 0x22:
            return self.read_string() is not None
        if c in (0x7B, 0x5B):
            depth = 0
            while (c := self.cur()) is not None:
                if c == 0x22:
                    if self.read_string() is None:
                        return False
                    continue
                if c in (0x7B, 0x5B):
                    depth += 1
                elif c in (0x7D, 0x5D):
                    depth -= 1
                    if depth == 0:
                        self.adv()
                        return True
                self.adv()
            return False
        while (c := self.cur()) is not None and c not in b",}] \t\r\n":
            self.adv()
        return True

    def serde_pos(self) -> tuple[int, int]:
        return self.line, self.col - 1  # serde counts bytes consumed on the line


def scan_top_level(raw: bytes) -> tuple[list[TopLevel], tuple[int, int] | None]:
    """The top-level keys of an object body, and serde's position after its closing brace.

    The scan stops at what it cannot read; a value it cannot read to its end still has its key
    listed last, with no `value_end` (an unknown key is reported before its value is read)."""
    s = _Scanner(raw)
    s.skip_ws()
    found: list[TopLevel] = []
    if s.cur() != 0x7B:
        return found, None
    s.adv()
    while True:
        s.skip_ws()
        c = s.cur()
        if c == 0x7D:
            s.adv()
            return found, s.serde_pos()
        if c == 0x2C:
            s.adv()
            continue
        if c != 0x22 or (key := s.read_string()) is None:
            return found, None
        s.skip_ws()
        key_end = s.serde_pos()
        if s.cur() != 0x3A:
            return found, None
        s.adv()
        s.skip_ws()
        first = s.cur()
        if first is None:
            return found, None
        start = (s.line, s.col)
        if not s.skip_value():
            found.append(TopLevel(key, key_end, start, None, first))
            return found, None
        found.append(TopLevel(key, key_end, start, s.serde_pos(), first))


_TOKENS = {0x22: "VALUE_STRING", 0x7B: "START_OBJECT", 0x5B: "START_ARRAY", 0x74: "VALUE_BOOLEAN"}


def first_unknown_key(raw: bytes, allowed: frozenset[str]) -> dict[str, Any] | None:
    """ES's 400 for the first top-level `_search` key off the allow-list (es_compat.rs:2462-2513).

    The scan runs before the typed parse (es_compat.rs:2800-2810), so an unknown key wins over
    a malformed value after it.
    """
    unknown = next((t for t in scan_top_level(raw)[0] if t.key not in allowed), None)
    if unknown is None:
        return None
    first = unknown.first_byte
    token = _TOKENS.get(first, "VALUE_BOOLEAN" if first == 0x66 else "VALUE_NUMBER")
    token = "VALUE_NULL" if first == 0x6E else token
    reason = f"Unknown key for a {token} in [{unknown.key}]."
    line, col = unknown.value_start
    error = {"type": "parsing_exception", "reason": reason, "line": line, "col": col}
    return {"error": {"root_cause": [dict(error)], **error}, "status": 400}


def check_content_type(content_type: str | None) -> None:
    """A body's Content-Type must name JSON or start ``text/plain`` (extract.rs:134-146)."""
    if content_type is not None:
        lower = content_type.lower()
        if "json" not in lower and not lower.startswith("text/plain"):
            raise BodyError(415, f"unsupported Content-Type: {content_type}")


def optional_json(raw: bytes, content_type: str | None) -> Any:
    """XERJ's `OptionalJson` (extract.rs:114-150): None for an empty body, else the JSON.

    A non-JSON Content-Type beside a body is a 415; malformed JSON a 400. Both raise
    `BodyError`. The serde message is approximated from Python's decoder.
    """
    if not raw:
        return None
    check_content_type(content_type)
    if (column := too_deep(raw)) is not None:
        raise _malformed("recursion limit exceeded", (1, column))
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        msg = _PY_TO_SERDE.get(exc.msg, exc.msg[:1].lower() + exc.msg[1:])
        raise _malformed(msg, (exc.lineno, exc.colno)) from None
    except ValueError as exc:  # bytes that do not decode
        raise _malformed(str(exc)) from None


SERDE_DEPTH = 128
"""serde_json's recursion limit, which XERJ keeps (it never calls `disable_recursion_limit`):
a body nested deeper is refused before it is read."""
_BRACKETS = re.compile(rb'[\[\]{}"]')
_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)


def too_deep(raw: bytes) -> int | None:
    """Where `raw` opens its 129th nested array or object (a 1-based byte column, as serde
    counts on one line), or None: in time linear in its size, without recursion."""
    if raw.count(b"[") + raw.count(b"{") <= SERDE_DEPTH:
        return None
    depth, at = 0, 0
    while (token := _BRACKETS.search(raw, at)) is not None:
        char, at = token.group(), token.end()
        if char == b'"':
            end = _STRING_REST.match(raw, at)
            if end is None:
                return None  # a string that never closes: the decoder says where
            at = end.end()
        elif char in b"[{":
            depth += 1
            if depth > SERDE_DEPTH:
                return at
        else:
            depth -= 1
    return None


_PY_TO_SERDE = {
    "Expecting value": "expected value",
    "Extra data": "trailing characters",
    "Unterminated string starting at": "EOF while parsing a string",
    "Expecting ',' delimiter": "expected `,` or `}`",
    "Expecting property name enclosed in double quotes": "key must be a string",
    "Expecting ':' delimiter": "expected `:`",
}


def _unexpected(value: Any) -> str:
    # serde_json's `JsonUnexpected` wording (null, not "unit value").
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value!r}`"
    if isinstance(value, str):
        return f"string {json.dumps(value)}"
    return "sequence" if isinstance(value, list) else "map"


def _type_error(value: Any, kind: str) -> str | None:
    """serde's message for `value` read as `kind`, or None when it fits."""
    if kind == "any":
        return None
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if value is None:
        return None if optional else f"invalid type: null, expected {_EXPECTED[kind]}"
    if kind == "usize":
        if isinstance(value, int) and not isinstance(value, bool):
            return None if value >= 0 else f"invalid value: {_unexpected(value)}, expected usize"
    elif kind == "string":
        if isinstance(value, str):
            return None
    elif kind == "bool":
        if isinstance(value, bool):
            return None
    elif kind == "f32":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return None
    elif kind == "vec_f32" and isinstance(value, list):
        for item in value:
            if (problem := _type_error(item, "f32")) is not None:
                return problem
        return None
    return f"invalid type: {_unexpected(value)}, expected {_EXPECTED[kind]}"


_EXPECTED = {
    "usize": "usize",
    "string": "a string",
    "bool": "a boolean",
    "f32": "f32",
    "vec_f32": "a sequence",
}


def _malformed(problem: str, pos: tuple[int, int] | None = None) -> BodyError:
    where = "" if pos is None else f" at line {pos[0]} column {pos[1]}"
    return BodyError(400, f"malformed JSON in request body: {problem}{where}")


def _one_of(names: Sequence[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def serde_struct(
    name: str,
    body: Any,
    raw: bytes,
    fields: Mapping[str, str],
    *,
    required: Sequence[str] = (),
    deny_unknown: bool = False,
) -> None:
    """Raise `BodyError` where serde's `#[derive(Deserialize)]` for `name` refuses `body`.

    `fields` maps each field to its type: ``usize``, ``string``, ``bool``, ``f32``,
    ``vec_f32``, ``any``; a trailing ``?`` makes it an `Option` (null allowed). Fields are read
    in document order, so the first offending key wins, as in serde.
    """
    if not isinstance(body, Mapping):
        raise _malformed(f"invalid type: {_unexpected(body)}, expected struct {name}")
    located, end = scan_top_level(raw)
    where = {t.key: t for t in located}
    for key, value in body.items():
        place = where.get(key)
        if key not in fields:
            if deny_unknown:
                problem = f"unknown field `{key}`, expected {_one_of(list(fields))}"
                raise _malformed(problem, place.key_end if place else None)
            continue
        if (wrong := _type_error(value, fields[key])) is not None:
            raise _malformed(wrong, place.value_end if place else None)
    for key in required:
        if key not in body:
            raise _malformed(f"missing field `{key}`", end)
