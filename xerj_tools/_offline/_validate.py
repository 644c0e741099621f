"""Offline validation: find every tool call in recorded model output and validate it, streaming.

Nothing here touches the network stack: neither httpx2, nor tenacity, nor openai is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, TextIO

from .._bounds import MAX_ARGUMENT_DEPTH, TooDeep, loads
from .._problems import Problem, ValidationResult
from .._schema._registry import ToolRegistry
from .._shapes import shape_named
from ._records import FoundCall, Unrecognised, find_calls

__all__ = [
    "CallReport",
    "FoundCall",
    "Unrecognised",
    "ValidationSummary",
    "find_calls",
    "jsonl_calls",
    "jsonl_error",
    "read_calls",
    "tally",
    "validate_calls",
]


# A record wraps the arguments in a few levels of its own (a chat completion: choices, message,
# tool_calls, function); deeper than this, a line is unreadable rather than decoded.
RECORD_DEPTH = MAX_ARGUMENT_DEPTH + 16


class InputError(Exception):
    """The input cannot be read at all (exit status 2)."""


def read_calls(stream: TextIO) -> Iterator[FoundCall | Unrecognised | tuple[int, str]]:
    """Stream the calls of a JSONL file, or of one JSON document.

    JSONL is read line by line, so a file of a million calls is never held whole; a line that is
    not JSON is yielded as ``(line, message)`` and validation goes on. Input whose first record
    spans several lines is one JSON document, read whole.
    """
    from ._formats import calls_in

    index = 0
    first = ""
    number = 0
    for number, line in enumerate(stream, start=1):  # noqa: B007
        if line.strip():
            first = line
            break
    if not first:
        return
    if jsonl_error(first) is not None:
        try:
            document = loads(first + stream.read(), RECORD_DEPTH)
        except TooDeep as exc:
            raise InputError(f"the input is {exc}") from None
        except ValueError as exc:
            raise InputError(f"the input is neither JSON nor JSON Lines: {exc}") from None
        if (count := _tool_definitions(document)) is not None:
            raise InputError(
                f"the input is a tools file ({count} tool definitions), not recorded calls: "
                "check it with `xerj-tools lint FILE`, or validate calls against it with "
                "`--tools-file FILE`"
            )
        for found in calls_in(document):
            if isinstance(found, FoundCall):
                index += 1
                found = replace(found, index=index)
            yield found
        return
    yield from jsonl_calls(chain([(number, first)], enumerate(stream, start=number + 1)))


def _tool_definitions(document: Any) -> int | None:
    """How many tool definitions `document` holds, where it is a tools file (a list of them,
    or an object of one key, ``tools``, holding them; a request body that also holds messages is
    no tools file) and nothing else; else None. A definition declares a schema (``parameters``,
    ``input_schema``) and carries no call's ``arguments`` or ``input``."""
    items = document.get("tools") if isinstance(document, dict) and len(document) == 1 else document
    if not isinstance(items, list) or not items:
        return None
    for item in items:
        if not isinstance(item, dict):
            return None
        inner = item.get("function", item)
        if not isinstance(inner, dict) or "name" not in inner:
            return None
        if not ("parameters" in inner or "input_schema" in inner) or (
            "arguments" in inner or "input" in inner
        ):
            return None
    return len(items)


def jsonl_calls(
    lines: Iterable[tuple[int, Any]],
) -> Iterator[FoundCall | Unrecognised | tuple[int, str]]:
    """The calls of numbered JSONL lines, each `FoundCall` with its line and its 1-based index
    among these lines' calls; a line that is not JSON as ``(line, message)``. A line may also be
    a record already decoded (a Parquet cell that is a struct); None is an empty line."""
    index = 0
    for number, line in lines:
        for found in line_calls(number, line):
            if isinstance(found, FoundCall):
                index += 1
                found = replace(found, index=index)
            yield found


def line_calls(number: int, line: Any) -> Iterator[FoundCall | Unrecognised | tuple[int, str]]:
    """The calls of JSONL line `number` (text, bytes, a decoded record or None), each
    `FoundCall` with its line and index 0 (`jsonl_calls` numbers them)."""
    from ._formats import calls_in

    if isinstance(line, bytes):
        line = line.decode("utf-8")
    if isinstance(line, str):
        if not line.strip():
            return
        try:
            record = loads(line, RECORD_DEPTH)
        except TooDeep as exc:
            yield number, f"line {number} is {exc}"
            return
        except ValueError as exc:
            yield number, f"line {number} is not JSON: {exc}"
            return
    elif line is None:
        return
    else:
        record = line
    for found in calls_in(record):
        if isinstance(found, FoundCall):
            yield FoundCall(
                found.name, found.arguments, found.call_id, number, 0, found.api, found.registry
            )
        else:
            yield Unrecognised(found.kind, number)


def jsonl_error(first: str, *, fast: bool = True) -> str | None:
    """None where an input whose first non-blank line is `first` is JSON Lines (that line is a
    JSON value, or one too deep to decode) rather than one JSON document spanning lines; else why
    `first` is no JSON value, as `read_calls` says it when it reads `first` (and what follows) as
    one document. (`fast`: as `_bounds.loads`.)"""
    try:
        loads(first, RECORD_DEPTH, fast=fast)
    except TooDeep:
        return None  # one line too deep on its own: a JSONL record, reported as such
    except ValueError as exc:
        return f"the input is neither JSON nor JSON Lines: {exc}"
    return None


@dataclass(frozen=True)
class CallReport:
    """The verdict on one call (only calls with something to say are kept)."""

    call: FoundCall | None
    ok: bool
    problems: tuple[Problem, ...] = ()
    repairs: tuple[str, ...] = ()
    line: int | None = None

    def __init__(
        self,
        call: FoundCall | None,
        ok: bool,
        problems: tuple[Problem, ...] = (),
        repairs: tuple[str, ...] = (),
        line: int | None = None,
    ) -> None:
        fields = self.__dict__  # (as `Problem.__init__`: the dataclass's fields, set faster)
        fields["call"] = call
        fields["ok"] = ok
        fields["problems"] = problems
        fields["repairs"] = repairs
        fields["line"] = line

    def as_dict(self) -> dict[str, Any]:
        call = self.call
        out: dict[str, Any] = (
            {"ok": self.ok, "line": self.line}
            if call is None
            else {
                "ok": self.ok, "line": call.line, "index": call.index, "call_id": call.call_id,
                "tool": call.name,
            }
        )  # fmt: skip
        if self.problems:  # (each `Problem.as_dict`, written out: this runs once a report)
            out["problems"] = [{"path": p.path, "message": p.message} for p in self.problems]
        if self.repairs:
            out["repairs"] = list(self.repairs)
        return out


@dataclass
class ValidationSummary:
    calls: int = 0
    valid: int = 0
    invalid: int = 0
    repaired: int = 0
    unreadable: int = 0  # JSONL lines that are not JSON
    reports: list[CallReport] = field(default_factory=list)
    # Call-like items no wire shape reads, by kind (``web_search_call``, ``functionCall``…).
    unrecognised: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Invalid calls or unreadable lines; or no call read at all: an input in which no call
        is recognised (in a format this validator does not know, or holding none) never passes."""
        return bool(self.invalid or self.unreadable or not self.calls)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "valid": self.valid,
            "invalid": self.invalid,
            "repaired": self.repaired,
            "unreadable_lines": self.unreadable,
            "unrecognised": dict(self.unrecognised),
            "results": [r.as_dict() for r in self.reports],
        }


def validate_calls(
    registry: ToolRegistry,
    found: Iterable[FoundCall | Unrecognised | tuple[int, str]],
    *,
    repair: bool = True,
    progress: Any = None,
    on_report: Callable[[CallReport], None] | None = None,
    summary: ValidationSummary | None = None,
) -> ValidationSummary:
    """Validate each call; report the invalid and the repaired ones.

    Reports are kept in ``summary.reports``, or, with `on_report`, handed to it as they come
    and not kept, so that memory stays flat however long the input is. With `summary`, the
    counts are added to it (and it is returned).
    """
    summary = ValidationSummary() if summary is None else summary
    report = on_report if on_report is not None else summary.reports.append
    for item in found:
        if isinstance(item, tuple):
            line, message = item
            summary.unreadable += 1
            report(CallReport(None, False, (Problem("$", message),), line=line))
            continue
        if isinstance(item, Unrecognised):
            summary.unrecognised[item.kind] = summary.unrecognised.get(item.kind, 0) + 1
            continue
        summary.calls += 1
        tools = registry if item.registry is None else item.registry
        shape = (
            shape_named(item.api)
            if item.api and item.api != "chat" and item.name in tools
            else None
        )  # (a Chat call's arguments are never malformed in a way of the shape's own)
        malformed = shape.arguments_error(item.arguments) if shape is not None else None
        result = (
            tools.validate(item.name, item.arguments, repair=repair)
            if malformed is None
            else ValidationResult(False, None, malformed.problems)
        )
        tally(summary, item, result, report, progress)
    return summary


def tally(
    summary: ValidationSummary,
    call: FoundCall,
    result: ValidationResult,
    report: Callable[[CallReport], None],
    progress: Any = None,
) -> None:
    """Count a validated call (already counted among ``summary.calls``) as valid or invalid,
    report it where it is invalid or repaired, and tell `progress` at each 10,000th call."""
    if result.ok:
        summary.valid += 1
        if result.repairs:
            summary.repaired += 1
            report(CallReport(call, True, repairs=result.repairs))
    else:
        summary.invalid += 1
        report(CallReport(call, False, result.problems, result.repairs))
    if progress is not None and summary.calls % 10_000 == 0:
        progress(summary.calls)
