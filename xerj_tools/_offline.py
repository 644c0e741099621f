"""Offline validation: find every tool call in recorded model output and validate it, streaming.

Nothing here touches the network stack: neither httpx2, nor tenacity, nor openai is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from ._bounds import MAX_ARGUMENT_DEPTH, TooDeep, loads
from ._problems import Problem, ValidationResult
from ._registry import ToolRegistry
from ._shapes import SHAPES, shape_named

__all__ = [
    "CallReport",
    "FoundCall",
    "Unrecognised",
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
    api: str | None = None  # the wire shape it came in; None for a plain record

    @property
    def position(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"call #{self.index}"
        return f"{where}, id {self.call_id}" if self.call_id else where


# Where any shape's transcripts nest their calls: messages, tool_calls, choices[].message
# (Chat); input, output (Responses); messages[].content, a response's content (Anthropic).
_CONTAINERS = frozenset(key for shape in SHAPES for key in shape.containers)
_DEFINITIONS = frozenset({"tools", "functions", "tool_choice"})  # definitions, not calls


@dataclass(frozen=True)
class Unrecognised:
    """An item that looks like a tool call but that no wire shape reads (a hosted tool's call,
    another vendor's format): counted, so that an input of only such items does not pass."""

    kind: str
    line: int | None = None


def _call_like(value: Mapping[str, Any]) -> str | None:
    kind = value.get("type")
    if isinstance(kind, str) and kind.endswith(("_call", "tool_use", "tool_call")):
        return kind
    for key in ("function_call", "functionCall", "toolUse"):  # legacy Chat, Gemini, Bedrock
        if isinstance(value.get(key), Mapping):
            return key
    return None


def find_calls(value: Any) -> Iterator[FoundCall | Unrecognised]:
    """Every tool call inside `value`, in order, each as a `FoundCall` (its `index` and `line`
    left for the caller), and an `Unrecognised` for each call-like item no shape reads.

    Each wire shape's adapter recognises its own calls (Chat Completions tool calls, Responses
    ``function_call`` items, Anthropic ``tool_use`` blocks), wherever that shape's transcripts
    hold them: message lists and request bodies, responses, bare lists. Plain
    ``{"name"|"tool": ..., "arguments": ...}`` records are read too.
    """
    if isinstance(value, list):
        for item in value:
            yield from find_calls(item)
        return
    if not isinstance(value, Mapping):
        return
    for shape in SHAPES:
        if shape.claims(value):
            call = shape.read(value)
            yield FoundCall(call.name, call.arguments, call.call_id or None, api=shape.name)
            return
    if ("name" in value or "tool" in value) and "arguments" in value and "role" not in value:
        name = value["name"] if "name" in value else value.get("tool")
        call_id = value["id"] if "id" in value else value.get("call_id")
        yield FoundCall(str(name), value.get("arguments"), call_id)
        return
    if (kind := _call_like(value)) is not None:
        yield Unrecognised(kind)
    for key, inner in value.items():
        if key in _CONTAINERS and isinstance(inner, (list, Mapping)):
            yield from find_calls(inner)
        elif key not in _DEFINITIONS:
            yield from _call_like_inside(inner)


def _call_like_inside(value: Any) -> Iterator[Unrecognised]:
    """Outside the places where the shapes keep calls, only call-like items are looked for:
    an input in a format no shape reads (Gemini's ``contents[].parts[].functionCall``, say)
    is then told apart from one without calls."""
    if isinstance(value, list):
        for item in value:
            yield from _call_like_inside(item)
    elif isinstance(value, Mapping):
        if (kind := _call_like(value)) is not None:
            yield Unrecognised(kind)
            return
        for key, inner in value.items():
            if key not in _DEFINITIONS:
                yield from _call_like_inside(inner)


class InputError(Exception):
    """The input cannot be read at all (exit status 2)."""


def read_calls(stream: TextIO) -> Iterator[FoundCall | Unrecognised | tuple[int, str]]:
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
        for found in find_calls(document):
            if isinstance(found, FoundCall):
                index += 1
                found = replace(found, index=index)
            yield found
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
        for found in find_calls(record):
            if isinstance(found, FoundCall):
                index += 1
                yield replace(found, line=number, index=index)
            else:
                yield replace(found, line=number)


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
    # Call-like items no wire shape reads, by kind (``web_search_call``, ``functionCall``…).
    unrecognised: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Invalid calls or unreadable lines; or no call read at all from an input that held
        call-like items: that input is in a shape this validator does not know, not valid."""
        return bool(self.invalid or self.unreadable or (self.unrecognised and not self.calls))

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
        if isinstance(item, Unrecognised):
            summary.unrecognised[item.kind] = summary.unrecognised.get(item.kind, 0) + 1
            continue
        summary.calls += 1
        shape = shape_named(item.api) if item.api and item.name in registry else None
        malformed = shape.arguments_error(item.arguments) if shape is not None else None
        result = (
            registry.validate(item.name, item.arguments, repair=repair)
            if malformed is None
            else ValidationResult(False, None, malformed.problems)
        )
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
