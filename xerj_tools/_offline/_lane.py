"""The valid lane of offline validation (issue 24): a JSONL line holding one plain, valid Chat
Completions tool call is counted in a few microseconds, without the objects of the full path.

Per line (bytes), `Lane.valid` decodes the record with orjson, recognises the Chat tool-call
record ``{"type": "function", "function": {"name", "arguments"}}`` (no ``custom_id``, no
``messages``: never a Batch output line nor a fine-tuning example), decodes the arguments, and
asks the tool's compiled schema check (jsonschema-rs, compiled at once) and its quick yes for the
prose limits (`Tool.yes_for`; where a tool has none, its checks themselves). It says
True only when the full path (`_offline._validate.line_calls` + `validate_calls`) would count one valid
call with nothing to report; anything else goes to that path, line by line, which writes the
report it always wrote. So the lane changes the speed, never the report (tests/test_lane.py
compares both, with `ENABLED` off, on mixed files and on a file of hostile lines).

What sends a line to the full path, each for the guarantee it keeps:
- text orjson refuses: not JSON, a UTF-8 BOM, NaN or Infinity, a number past a double, a lone
  surrogate escape, bytes that are not UTF-8 (the full path says each as it always did);
- a record of another shape, or one with keys beyond ``id``, ``type``, ``function``, ``index``
  (or an ``id`` or ``index`` that is a list or an object) that holds ``custom_id`` (a Batch output line), ``messages`` (a fine-tuning example) or more
  than `RECORD_DEPTH` brackets (`_bounds`' record depth limit; a count bounds the depth);
- arguments that are not text, or that `_quick.quick_object` does not decode at once: more than
  `MAX_ARGUMENT_DEPTH` brackets, a run of 19 digits (`_json`'s long integers, which orjson reads
  as floats), a lone surrogate, more than 4,096 characters, blank, not a JSON object;
- a tool the registry lacks or whose schema is not compiled, a schema check that says no, a
  quick yes that says no (the full path runs the checks and explains), or, for a tool without a
  quick yes, a check that finds a problem.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from .._schema._fastcheck import Predicate
from .._schema._quick import quick_object
from .._schema._registry import ToolRegistry
from ._validate import (
    RECORD_DEPTH,
    CallReport,
    FoundCall,
    ValidationSummary,
    line_calls,
    validate_calls,
)

__all__ = ["ENABLED", "Lane", "lane_lines", "validate_lines"]

ENABLED = True
"""Internal switch: False sends every line to the full path (the tests compare the two)."""


# A record of only these keys (and a function of only name and arguments) is two levels deep:
# no bracket count needed for `RECORD_DEPTH`.
_RECORD_KEYS = frozenset({"id", "type", "function", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_FLAT = frozenset({str, int, float, bool, type(None)})


class Lane:
    """The lane's verdict on lines, for one registry: `valid(line)`."""

    def __init__(self, registry: ToolRegistry) -> None:
        from .._json import _load

        self._orjson = _load() or None
        self.tools: dict[str, tuple[Predicate, Predicate | None, tuple[Any, ...]]] = {}
        for spec in registry:
            schema = _schema_yes(spec.fast_check)
            if schema is not None:
                self.tools[spec.name] = (schema, spec.fast_yes, tuple(spec.checks))

    def valid(self, line: bytes) -> bool:
        """True only when `line` is one Chat tool call that the full path counts valid with
        nothing to report."""
        orjson = self._orjson
        if orjson is None:
            return False
        try:
            # orjson refuses a BOM, NaN, a number past a double, a lone surrogate, bytes that
            # are not UTF-8: each goes to the full path, which says it as it always did.
            record = orjson.loads(line)
        except ValueError:
            return False
        if type(record) is not dict or record.get("type") != "function":
            return False
        function = record.get("function")
        if type(function) is not dict:
            return False
        if not (
            record.keys() <= _RECORD_KEYS
            and function.keys() <= _FUNCTION_KEYS
            and type(record.get("id")) in _FLAT
            and type(record.get("index")) in _FLAT
        ) and (
            "custom_id" in record
            or "messages" in record
            or line.count(b"{") + line.count(b"[") > RECORD_DEPTH
        ):
            return False  # a Batch output line, a fine-tuning example, or maybe too deep
        name, arguments = function.get("name"), function.get("arguments")
        if type(name) is not str or type(arguments) is not str:
            return False
        entry = self.tools.get(name)
        if entry is None:
            return False
        schema, yes, checks = entry
        value = quick_object(arguments)  # None: the full decode has something to say
        if value is None:
            return False
        try:
            if not schema(value):
                return False
        except Exception:  # a value the compiled check cannot read
            return False
        if yes is not None:  # where it says no, the full path runs the checks and explains
            return bool(yes(value))
        for check in checks:  # no quick yes: the checks decide
            for _ in check(value):
                return False
        return True


def _schema_yes(fast: Any) -> Predicate | None:
    """The compiled schema check, without its counting: jsonschema-rs's own `is_valid` where
    installed (`Lane.valid` sends a value it cannot read to the full path), else the closure."""
    if fast is None:
        return None
    if hasattr(fast, "compile_now"):
        fast.compile_now()
        is_valid = getattr(fast, "is_valid", None)
        return is_valid if is_valid is not None else fast.check  # type: ignore[no-any-return]
    return fast  # type: ignore[no-any-return]


# ---------------------------------------------------------------- lines and the loop

_NEWLINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def lane_lines(stream: Iterable[bytes], start: int = 1) -> Iterator[tuple[int, bytes]]:
    """The lines of a binary stream numbered as text mode numbers them (universal newlines: a
    lone ``\\r`` ends a line too), from `start`."""
    number = start - 1
    for raw in stream:
        if b"\r" in raw and not (raw.endswith(b"\r\n") and raw.count(b"\r") == 1):
            for part in _NEWLINE.findall(raw):
                number += 1
                yield number, part
            continue
        number += 1
        yield number, raw


def validate_lines(
    registry: ToolRegistry,
    lines: Iterable[tuple[int, Any]],
    *,
    repair: bool = True,
    progress: Callable[[int], None] | None = None,
    on_report: Callable[[CallReport], None] | None = None,
) -> ValidationSummary:
    """`validate_calls(registry, jsonl_calls(lines))`, with each line the lane says yes to
    counted valid at once. Lines are bytes (the lane's), text, decoded records or None."""
    summary = ValidationSummary()
    valid = Lane(registry).valid if ENABLED else None
    index = lane = 0
    for number, line in lines:
        if valid is not None:
            raw = line
            if type(line) is str:
                try:
                    raw = line.encode()
                except UnicodeEncodeError:
                    raw = None
            if type(raw) is bytes and valid(raw):
                index += 1
                lane += 1
                if progress is not None and (summary.calls + lane) % 10_000 == 0:
                    progress(summary.calls + lane)
                continue
        found: list[Any] = []
        for item in line_calls(number, line):
            if isinstance(item, FoundCall):
                index += 1
                item = FoundCall(
                    item.name, item.arguments, item.call_id, number, index, item.api, item.registry
                )
            found.append(item)
        if found:
            summary.calls += lane
            summary.valid += lane
            lane = 0
            validate_calls(
                registry, found, repair=repair, progress=progress, on_report=on_report,
                summary=summary,
            )  # fmt: skip
    summary.calls += lane
    summary.valid += lane
    return summary


def starts_jsonl(stream: BinaryIO) -> bool:
    """Whether a seekable binary input is JSON Lines, as `read_calls` decides it (its first
    non-blank line is a JSON value); the stream is left at its start. False also where the head
    is not UTF-8: the text path then says so as it always did."""
    from ._validate import is_jsonl

    try:
        for _, line in lane_lines(stream):
            text = line.decode("utf-8")
            if text.strip():
                return is_jsonl(text)
        return True  # empty: no line, no call, as the text path reads it
    except UnicodeDecodeError:
        return False
    finally:
        stream.seek(0)
