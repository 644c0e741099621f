"""Offline validation: find every tool call in recorded model output and validate it, streaming.

Nothing here touches the network stack: neither httpx, nor tenacity, nor openai is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ._bounds import MAX_ARGUMENT_DEPTH, TooDeep, loads
from ._registry import ToolRegistry
from ._validation import Problem

__all__ = [
    "CallReport",
    "FoundCall",
    "ValidationSummary",
    "find_calls",
    "read_calls",
    "validate_calls",
]


# A record wraps the arguments in a few levels of its own (a chat completion: choices, message,
# tool_calls, function); deeper than this, a line is unreadable rather than decoded.
RECORD_DEPTH = MAX_ARGUMENT_DEPTH + 16


@dataclass(frozen=True)
class FoundCall:
    """A tool call found in an input: where it stood, its id, tool name and raw arguments."""

    name: str
    arguments: Any
    call_id: str | None = None
    line: int | None = None  # 1-based line of a JSONL input; None in a single JSON document
    index: int = 0  # 1-based position among all calls of the input

    @property
    def position(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"call #{self.index}"
        return f"{where}, id {self.call_id}" if self.call_id else where


def _get(obj: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def find_calls(value: Any) -> Iterator[tuple[str | None, str, Any]]:
    """Yield ``(call_id, name, arguments)`` for every tool call inside `value`.

    Understood shapes: Chat Completions tool calls, assistant messages (``tool_calls``), message
    lists and request bodies (``messages``), chat completion responses (``choices``), Responses
    ``function_call`` items, item lists and responses (``output``, ``input``), and plain
    ``{"name"|"tool": ..., "arguments": ...}`` records.
    """
    if isinstance(value, list):
        for item in value:
            yield from find_calls(item)
        return
    if not isinstance(value, Mapping):
        return
    kind = value.get("type")
    function = value.get("function")
    if kind == "function_call":
        yield _get(value, "call_id", "id"), str(value.get("name", "")), value.get("arguments")
    elif isinstance(function, Mapping) and "name" in function:
        yield value.get("id"), str(function.get("name", "")), function.get("arguments")
    elif ("name" in value or "tool" in value) and "arguments" in value and "role" not in value:
        yield _get(value, "id", "call_id"), str(_get(value, "name", "tool")), value.get("arguments")
    else:
        for key in ("tool_calls", "messages", "input", "output"):
            if isinstance(value.get(key), list):
                yield from find_calls(value[key])
        for choice in value.get("choices") or []:
            if isinstance(choice, Mapping):
                yield from find_calls(choice.get("message"))


class InputError(Exception):
    """The input cannot be read at all (exit status 2)."""


def read_calls(stream: TextIO) -> Iterator[FoundCall | tuple[int, str]]:
    """Stream the calls of a JSONL file, or of one JSON document.

    JSONL is read line by line, so a file of a million calls is never held whole; a line that is
    not JSON is yielded as ``(line, message)`` and validation goes on. Input whose first record
    spans several lines is one JSON document, read whole.
    """
    index = 0
    first = ""
    number = 0
    for number, line in enumerate(stream, start=1):  # noqa: B007
        if line.strip():
            first = line
            break
    if not first:
        return
    try:
        loads(first, RECORD_DEPTH)
        jsonl = True
    except TooDeep:
        jsonl = True  # one line too deep on its own: a JSONL record, reported as such below
    except ValueError:
        jsonl = False
    if not jsonl:
        try:
            document = loads(first + stream.read(), RECORD_DEPTH)
        except TooDeep as exc:
            raise InputError(f"the input is {exc}") from None
        except ValueError as exc:
            raise InputError(f"the input is neither JSON nor JSON Lines: {exc}") from None
        for call_id, name, arguments in find_calls(document):
            index += 1
            yield FoundCall(name, arguments, call_id, None, index)
        return
    lines: Iterable[tuple[int, str]] = _chain((number, first), enumerate(stream, start=number + 1))
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = loads(line, RECORD_DEPTH)
        except TooDeep as exc:
            yield number, f"line {number} is {exc}"
            continue
        except ValueError as exc:
            yield number, f"line {number} is not JSON: {exc}"
            continue
        for call_id, name, arguments in find_calls(record):
            index += 1
            yield FoundCall(name, arguments, call_id, number, index)


def _chain(head: tuple[int, str], rest: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield head
    yield from rest


@dataclass(frozen=True)
class CallReport:
    """The verdict on one call (only calls with something to say are kept)."""

    call: FoundCall | None
    ok: bool
    problems: tuple[Problem, ...] = ()
    repairs: tuple[str, ...] = ()
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok}
        if self.call is not None:
            out.update(
                line=self.call.line,
                index=self.call.index,
                call_id=self.call.call_id,
                tool=self.call.name,
            )
        else:
            out["line"] = self.line
        if self.problems:
            out["problems"] = [p.as_dict() for p in self.problems]
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

    @property
    def failed(self) -> bool:
        return bool(self.invalid or self.unreadable)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "valid": self.valid,
            "invalid": self.invalid,
            "repaired": self.repaired,
            "unreadable_lines": self.unreadable,
            "results": [r.as_dict() for r in self.reports],
        }


def validate_calls(
    registry: ToolRegistry,
    found: Iterable[FoundCall | tuple[int, str]],
    *,
    repair: bool = True,
    progress: Any = None,
    on_report: Callable[[CallReport], None] | None = None,
) -> ValidationSummary:
    """Validate each call; report the invalid and the repaired ones.

    Reports are kept in ``summary.reports``, or, with `on_report`, handed to it as they come
    and not kept, so that memory stays flat however long the input is.
    """
    summary = ValidationSummary()
    report = on_report if on_report is not None else summary.reports.append
    for item in found:
        if isinstance(item, tuple):
            line, message = item
            summary.unreadable += 1
            report(CallReport(None, False, (Problem("$", message),), line=line))
            continue
        summary.calls += 1
        result = registry.validate(item.name, item.arguments, repair=repair)
        if result.ok:
            summary.valid += 1
            if result.repairs:
                summary.repaired += 1
                report(CallReport(item, True, repairs=result.repairs))
        else:
            summary.invalid += 1
            report(CallReport(item, False, result.problems, result.repairs))
        if progress is not None and summary.calls % 10_000 == 0:
            progress(summary.calls)
    return summary
