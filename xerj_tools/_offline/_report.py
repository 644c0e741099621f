"""How `xerj-tools validate` writes its reports: text, or one JSON document written as it goes.

Each report is written when it is made, so memory stays flat however long the input is, and
nothing from the input reaches a terminal raw: ids, names and values are escaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TextIO

__all__ = ["JsonReport", "SummaryReport", "TextReport", "formats_tried", "printable", "shifted"]


def formats_tried() -> str:
    """Every format `validate` reads, for the verdict on an input in which none found a call."""
    from ._formats import formats_tried as record_formats

    return record_formats() + "; Parquet (a column of calls)"


# Terminal controls a recorded call could carry in its id, name or arguments: C0 and C1
# controls (ESC, BEL, CSI…), DEL, and the invisible or direction-changing format characters;
# and lone surrogates (``"\udfff"`` in a JSON string decodes to one), which no output encodes.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff]"
)


def printable(text: str) -> str:
    """`text` with every terminal control and lone surrogate shown as an escape (``\\x1b``,
    ``\\u202e``, ``\\udfff``)."""
    return _UNSAFE.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text
    )


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


# `json.dumps(value, ensure_ascii=False)`'s own C encoder, made once: `dumps` makes a
# `JSONEncoder` and its C encoder on every call, which cost as much as the encoding of a report.
# Without a cycle check (a report holds plain values only), so one encoder serves every call.
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_ENCODE: Any = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(
        None, _refuse, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
)


def _json_line(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` (its separators), in which no terminal control
    appears raw (each is a ``\\u`` escape)."""
    # (`dumps` itself on an interpreter without json's C accelerator)
    text = json.dumps(value, ensure_ascii=False) if _ENCODE is None else "".join(_ENCODE(value, 0))
    return _escaped(text)


def _escaped(text: str) -> str:
    """JSON `text` with every terminal control and lone surrogate a ``\\u`` escape (a lone
    surrogate's is what `json.dumps` writes for it with its default `ensure_ascii`)."""
    if text.isascii() and "\x7f" not in text:
        return text  # (json escapes the C0 controls: in ASCII, only DEL could be left)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


_string = json.encoder.encode_basestring  # what `dumps` writes a str with (ensure_ascii=False)


class Rendered(NamedTuple):
    """A call's report as `JsonReport` writes it, cut after its numbers: `tail` is the rest of
    the JSON line, escaped. A `--jobs` worker renders it; the parent moves `line` and `index` on
    (`shifted`) and writes it, in place of the report's plain form."""

    ok: bool
    line: int | None
    call_index: int  # (`index` is a tuple's method)
    tail: str

    def text(self, lines: int = 0, calls: int = 0) -> str:
        """The JSON line, moved past `lines` lines and `calls` calls."""
        line = None if self.line is None else self.line + lines
        return _numbered(self.ok, line, self.call_index + calls, self.tail)


def _numbered(ok: bool, line: int | None, index: int, tail: str) -> str:
    """A call's report line: its numbers, then `tail` (`_tail`)."""
    return (
        f'{{"ok": {"true" if ok else "false"}, '
        f'"line": {"null" if line is None else line}, "index": {index}{tail}'
    )


def shifted(reports: Iterable[Any], lines: int, calls: int) -> Iterator[Any]:
    """`reports` of a batch that follows `lines` lines and `calls` calls."""
    for report in reports:
        report = dict(report)
        if report.get("line") is not None:
            if "tool" not in report:  # an unreadable line: its message names the line too
                before = f"line {report['line']} "
                after = f"line {report['line'] + lines} "
                report["problems"] = [
                    {**p, "message": after + p["message"][len(before) :]}
                    if p["message"].startswith(before)
                    else p
                    for p in report.get("problems", ())
                ]
            report["line"] += lines
        if "index" in report:
            report["index"] += calls
        yield report


def render(report: Any) -> Rendered | None:
    """A `CallReport` of a call as `Rendered`, written straight from its fields (no dict, no
    encoder: a third of the time), or None where a field is not of the plain type this writes
    exactly as `json` does (the caller then takes the long way). (The numbers are ASCII digits:
    escaping the tail alone escapes the whole line.)"""
    tail = _tail(report)
    if tail is None:
        return None
    call = report.call
    return Rendered(report.ok, call.line, call.index, tail)


def _tail(report: Any) -> str | None:
    """The report's JSON line after its numbers, escaped; None where a field is not of the
    plain type this writes exactly as `json` does."""
    call = report.call
    if call is None:
        return None
    line, index, call_id, name = call.line, call.index, call.call_id, call.name
    if not (
        type(report.ok) is bool
        and type(index) is int
        and type(name) is str
        and (line is None or type(line) is int)
        and (call_id is None or type(call_id) is str)
    ):
        return None
    text = (
        f', "call_id": {"null" if call_id is None else _string(call_id)}, "tool": {_string(name)}'
    )
    if report.problems:
        shown = []
        for problem in report.problems:
            path, message = problem.path, problem.message
            if type(path) is not str or type(message) is not str:
                return None
            shown.append(f'{{"path": {_string(path)}, "message": {_string(message)}}}')
        text += f', "problems": [{", ".join(shown)}]'
    if report.repairs:
        if any(type(repair) is not str for repair in report.repairs):
            return None
        text += f', "repairs": [{", ".join(map(_string, report.repairs))}]'
    return _escaped(text + "}")


class TextReport:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def report(self, report: Any) -> None:
        """Write one report: a `CallReport`, or its plain form (`CallReport.as_dict`)."""
        data = report if isinstance(report, dict) else report.as_dict()
        if "tool" in data:
            where = f"line {data['line']}" if data["line"] is not None else f"call #{data['index']}"
            where += f", id {data['call_id']}" if data["call_id"] else ""
            tool = f" {data['tool']}"
        else:
            where, tool = f"line {data['line']}", ""
        lines = [f"{where}{tool}: {'repaired' if data['ok'] else 'invalid'}"]
        lines += [f"  {p['path']}: {p['message']}" for p in data.get("problems", ())]
        lines += [f"  repaired {repair}" for repair in data.get("repairs", ())]
        self.out.write("".join(printable(line) + "\n" for line in lines))

    def moved_on(self, reports: Sequence[Any], lines: int, calls: int) -> None:
        """Write a batch's reports, moved past `lines` lines and `calls` calls (`shifted`)."""
        for report in shifted(reports, lines, calls):
            self.report(report)

    def abort(self, message: str) -> None:
        pass  # the error goes to stderr; what was written stands

    def summarize(self, summary: Any) -> None:
        noun = "call" if summary.calls == 1 else "calls"
        self.out.write(
            f"{summary.calls} {noun}: {summary.valid} valid ({summary.repaired} after repair), "
            f"{summary.invalid} invalid"
            + (f"; {summary.unreadable} unreadable lines" if summary.unreadable else "")
            + "\n"
        )
        if summary.unrecognised:
            kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(summary.unrecognised.items()))
            verdict = "no tool call could be read" if not summary.calls else "not validated"
            self.out.write(
                printable(f"{verdict}: call-like items of no known shape: {kinds}") + "\n"
            )
        if not summary.calls:
            self.out.write(f"no tool call recognised; formats tried: {formats_tried()}\n")


class _AsciiJson:
    """A stream for JSON text that cannot encode every character (an ASCII locale): each
    non-ASCII character is written as its ``\\u`` escape, which JSON reads as the character."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(_NON_ASCII.sub(lambda m: json.dumps(m[0])[1:-1], text))

    def flush(self) -> None:
        self.out.flush()


_NON_ASCII = re.compile("[^\x00-\x7f]")


def json_stream(out: TextIO) -> Any:
    """`out`, or where its encoding is not UTF (an ASCII locale) an `_AsciiJson` over it."""
    import codecs

    encoding = getattr(out, "encoding", None)
    try:
        utf = encoding is None or codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        utf = False
    return out if utf else _AsciiJson(out)


class JsonReport:
    """One JSON document, ``{"results": [...], "calls": …}``, written as the results come."""

    def __init__(self, out: TextIO) -> None:
        self.out = json_stream(out)
        self.started = False

    def _open(self) -> str:
        opening = "" if self.started else '{"results":['
        self.started = True
        return opening

    def report(self, report: Any) -> None:
        """Write one report: a `CallReport`, or its plain form (`CallReport.as_dict`)."""
        if isinstance(report, dict):
            line = _json_line(report)
        elif (tail := _tail(report)) is None:
            line = _json_line(report.as_dict())
        else:  # (straight from the report's fields: no dict, no encoder, a third of the time)
            line = _numbered(report.ok, report.call.line, report.call.index, tail)
        self.out.write("," + line if self.started else self._open() + line)

    def moved_on(self, reports: Sequence[Any], lines: int, calls: int) -> None:
        """Write a batch's reports, moved past `lines` lines and `calls` calls (`shifted`), in one
        write: what `report` writes of each, the `Rendered` ones (a --jobs worker's) straight."""
        parts = []
        for report in reports:
            if type(report) is Rendered:
                parts.append(report.text(lines, calls))
            else:
                parts.extend(_json_line(moved) for moved in shifted((report,), lines, calls))
        if parts:
            text = ",".join(parts)
            self.out.write("," + text if self.started else self._open() + text)

    def abort(self, message: str) -> None:
        if self.started:  # keep stdout one valid document
            self.out.write("]," + _json_line({"error": message})[1:] + "\n")

    def summarize(self, summary: Any) -> None:
        totals = {k: v for k, v in summary.as_dict().items() if k != "results"}
        if not summary.calls:
            totals["formats_tried"] = formats_tried()
        self.out.write(self._open() + "]," + _json_line(totals)[1:] + "\n")


class SummaryReport:
    """`xerj-tools validate --summary`: no report per call, but the counts and then each kind of
    problem once, by tool and JSON path: how many calls had it, and where it was first seen (its
    line and message); the repairs likewise. For inputs whose full report would run to
    thousands of lines. At most `KINDS` kinds are kept; the rest are counted together."""

    KINDS = 1000
    SHOWN = 50  # kinds listed in text, the most frequent first

    def __init__(self, out: TextIO, format: str = "text") -> None:
        self.out = json_stream(out) if format == "json" else out
        self.json = format == "json"
        self.problems: dict[tuple[Any, str], list[Any]] = {}  # kind -> [calls, where, message]
        self.repairs: dict[tuple[Any, str], list[Any]] = {}
        self.other = [0, 0]  # problems, repairs past `KINDS` kinds

    def _count(self, table: dict[tuple[Any, str], list[Any]], key: Any, where: Any, text: str,
               other: int) -> None:  # fmt: skip
        found = table.get(key)
        if found is not None:
            found[0] += 1
        elif len(table) < self.KINDS:
            table[key] = [1, where, text]
        else:
            self.other[other] += 1

    def report(self, report: Any) -> None:
        """Count one report: a `CallReport`, or its plain form (`CallReport.as_dict`)."""
        data = report if isinstance(report, dict) else report.as_dict()
        tool = data.get("tool")  # None: a line that is not JSON
        where = {"line": data["line"]} if data.get("line") is not None else {"call": data["index"]}
        for problem in {p["path"]: p for p in data.get("problems", ())}.values():
            self._count(self.problems, (tool, problem["path"]), where, problem["message"], 0)
        for repair in data.get("repairs", ()):
            path = repair.split(":", 1)[0]
            self._count(self.repairs, (tool, path), where, repair, 1)

    def moved_on(self, reports: Sequence[Any], lines: int, calls: int) -> None:
        for report in shifted(reports, lines, calls):
            self.report(report)

    def abort(self, message: str) -> None:
        pass  # the error goes to stderr; nothing was written

    @staticmethod
    def _rows(table: dict[tuple[Any, str], list[Any]]) -> list[dict[str, Any]]:
        ordered = sorted(table.items(), key=lambda item: -item[1][0])
        return [
            {"tool": tool, "path": path, "calls": n, "first": {**where, "message": text}}
            for (tool, path), (n, where, text) in ordered
        ]

    def summarize(self, summary: Any) -> None:
        totals = {k: v for k, v in summary.as_dict().items() if k != "results"}
        problems, repairs = self._rows(self.problems), self._rows(self.repairs)
        if self.json:
            totals["problems"] = problems
            totals["repairs"] = repairs
            if any(self.other):
                totals["other_kinds"] = {"problems": self.other[0], "repairs": self.other[1]}
            if not summary.calls:
                totals["formats_tried"] = formats_tried()
            self.out.write(_json_line(totals) + "\n")
            return
        TextReport(self.out).summarize(summary)
        for title, rows, other in (
            ("problems", problems, self.other[0]),
            ("repairs", repairs, self.other[1]),
        ):
            if not rows:
                continue
            self.out.write(f"{title} by tool and argument (calls; where first seen):\n")
            for row in rows[: self.SHOWN]:
                first = row["first"]
                at = f"line {first['line']}" if "line" in first else f"call #{first['call']}"
                tool = row["tool"] if row["tool"] is not None else "(not JSON)"
                text = f"{row['calls']:>9,}  {tool} {row['path']}  {at}: {first['message']}"
                self.out.write(printable(text[:300]) + "\n")
            hidden = sum(r["calls"] for r in rows[self.SHOWN :]) + other
            if hidden:
                self.out.write(f"{hidden:>9,}  (in {title} of other kinds)\n")
