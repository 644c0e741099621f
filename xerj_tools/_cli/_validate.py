"""`xerj-tools validate`: one call, or every call of a file, checked offline.

In one process (the reports written as they come), or with `--jobs N` in N processes over
blocks of JSON Lines (`xerj_tools._offline._batch`), with the same report in the same order.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ._common import UsageError, _read_argument, _registry

__all__ = ["validate"]


def validate(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    args.jobs = _usable_jobs(args.jobs, err)
    with contextlib.ExitStack() as closing:
        return _validate_in(args, out, err, stdin, closing)


def _usable_jobs(jobs: int, err: TextIO) -> int:
    """`--jobs`, at most the cores this process may run on: more processes than cores only
    share them (and a number such as 100000 would start that many)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not on every platform)
        cores = os.cpu_count() or 1
    if jobs > cores:
        err.write(f"xerj-tools: --jobs {jobs}: this machine runs {cores} at once; using {cores}\n")
        return cores
    return jobs


def _writer(args: argparse.Namespace, out: TextIO) -> Any:
    from .._offline._report import JsonReport, SummaryReport, TextReport

    if args.summary:
        return SummaryReport(out, args.format)
    return JsonReport(out) if args.format == "json" else TextReport(out)


_NOT_UTF8 = "the input is not UTF-8 text"


@contextlib.contextmanager
def _reporting(writer: Any) -> Iterator[None]:
    """An input found unreadable midway: the reports written so far stand, the report says why
    it stops, and the command exits 2 with the reason."""
    from .._offline._parquet import ParquetError
    from .._offline._validate import InputError

    try:
        yield
    except (InputError, ParquetError) as exc:
        writer.abort(str(exc))
        raise UsageError(str(exc)) from None
    except UnicodeDecodeError:
        writer.abort(_NOT_UTF8)
        raise UsageError(_NOT_UTF8) from None


def _validate_in(
    args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO, closing: contextlib.ExitStack
) -> int:
    from .._json import _load as load_orjson
    from .._offline._validate import FoundCall, read_calls, validate_calls

    load_orjson()  # orjson decodes every record and call where installed (the `fast` extra)
    registry = _registry(args.tools_file)
    if args.tool:
        if args.args is None:
            raise UsageError(
                f"--tool {args.tool} needs its arguments: --args JSON (or @file, or - for stdin)"
            )
        if args.input:
            raise UsageError("give --tool NAME with --args, or an input file, not both")
        found: Any = [FoundCall(args.tool, _read_argument(args.args, stdin), None, None, 1)]
    elif args.input and args.input.endswith(".parquet"):
        found = _parquet_calls(args.input, args.column)
    elif args.input and args.input != "-" and (binary := _seekable(args.input, closing)):
        from .._offline._lines import jsonl_head

        head = jsonl_head(binary)
        if head.final:  # one line, the whole file, and no JSON (or no UTF-8): said once read
            raise UsageError(head.error)
        if head.jsonl:  # the valid lane, over the file's bytes (xerj_tools._offline._lane)
            if args.jobs > 1:
                return _validate_ranges(args, binary, out, err)
            return _validate_lines(args, registry, binary, out, err)
        binary.close()
        found = read_calls(closing.enter_context(open(args.input, encoding="utf-8")))  # noqa: SIM115
    elif args.input:
        try:
            stream = (
                _utf8(stdin)
                if args.input == "-"
                else closing.enter_context(open(args.input, encoding="utf-8"))  # noqa: SIM115
            )
        except OSError as exc:
            raise UsageError(f"cannot read {args.input}: {exc.strerror}") from None
        if args.jobs > 1:
            return _validate_parallel(args, stream, out, err)
        found = read_calls(stream)
    else:
        raise UsageError("give an input file (or -), or --tool NAME --args JSON")

    # Each report is written as it comes and not kept: memory stays flat on any input length.
    writer, progress = _writer(args, out), Progress(err, out)
    with _reporting(writer):
        summary = validate_calls(
            registry,
            found,
            repair=not args.strict,
            progress=progress.shown(),
            on_report=writer.report,
        )
    return _finish(summary, writer, err, progress)


def _utf8(stdin: TextIO) -> Any:
    """stdin read as a file is: UTF-8, strictly, lines ended as text mode ends them (the
    process's own stdin may decode with the locale's codec, or turn bytes that are not UTF-8
    into surrogates). Each line is decoded alone, so a line that is not UTF-8 stops the reading
    right there whatever the pipe's timing (a text stream decodes what the pipe happened to
    hand over at once, and refuses the good lines around the bad one with it)."""
    buffer = getattr(stdin, "buffer", None)
    return stdin if buffer is None else _Utf8Lines(buffer)  # (a caller's stream: text already)


class _Utf8Lines:
    """The lines of a binary stream as text mode reads them (`__iter__`), and the rest
    (`read`), decoded as strict UTF-8 one line at a time."""

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer

    def __iter__(self) -> Any:
        from .._offline._lines import _split

        for raw in iter(self.buffer.readline, b""):
            for part in _split(raw):
                yield _text_mode(part.decode("utf-8"))

    def read(self) -> str:
        return _text_mode(self.buffer.read().decode("utf-8"))


def _text_mode(text: str) -> str:
    """`text`'s line ends as text mode reads them: ``\\n`` for ``\\r\\n`` and ``\\r``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _seekable(path: str, closing: contextlib.ExitStack) -> Any:
    """The input opened in binary, where it is a seekable file; else None (a pipe, a FIFO)."""
    try:
        stream = closing.enter_context(open(path, "rb"))  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if stream.seekable():
        return stream
    stream.close()
    return None


def _validate_lines(
    args: argparse.Namespace, registry: Any, binary: Any, out: TextIO, err: TextIO
) -> int:
    from .._offline._lane import validate_lines
    from .._offline._lines import LaneLines

    writer = _writer(args, out)
    progress = Progress(err, out, os.fstat(binary.fileno()).st_size, binary.tell)
    with _reporting(writer):
        summary = validate_lines(
            registry,
            LaneLines(binary),
            repair=not args.strict,
            progress=progress.shown(),
            on_report=writer.report,
        )
    return _finish(summary, writer, err, progress)


def _validate_ranges(args: argparse.Namespace, binary: Any, out: TextIO, err: TextIO) -> int:
    """`--jobs N` over a JSON Lines file: N processes, each over byte ranges of it."""
    from .._offline._batch import summary_of
    from .._offline._ranges import validate_ranges

    writer = _writer(args, out)
    progress = Progress(err, out, os.fstat(binary.fileno()).st_size)
    with _reporting(writer):
        total = validate_ranges(
            args.input, args.jobs, tools_file=args.tools_file, repair=not args.strict,
            on_reports=writer.moved_on, progress=progress.shown(), reached=progress.reached,
            rendered=args.format == "json" and not args.summary,
        )  # fmt: skip
    return _finish(summary_of(total), writer, err, progress)


class Progress:
    """Progress on stderr, where stderr is a terminal: the calls so far and their rate, and
    where the input's size is known, how far into it and about how long is left.

    The line is rewritten in place (``\\r``), unless the report goes to the same terminal:
    each is then a line of its own, written after the reports before it."""

    def __init__(
        self, err: TextIO, out: TextIO, size: int | None = None, position: Any = None
    ) -> None:
        self.err, self.out, self.size, self.position = err, out, size, position
        self.on = _isatty(err)
        self.apart = self.on and _isatty(out)  # the reports share the terminal
        self.done, self.written = 0, False
        self.started = time.perf_counter()

    def shown(self) -> Any:
        """The callback for `validate_lines` and the like (None where nothing is shown)."""
        return self if self.on else None

    def reached(self, offset: int) -> None:
        """The input is read up to byte `offset` (a `--jobs` range done)."""
        self.done = offset

    def __call__(self, count: int) -> None:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        text = f"validated {count:,} calls ({count / elapsed:,.0f}/s)"
        if self.size:
            done = self.position() if self.position is not None else self.done
            fraction = min(max(done / self.size, 0.0), 1.0)
            text += f", {fraction:.0%} of {_size(self.size)}"
            if 0 < fraction < 1:
                text += f", about {_duration(elapsed * (1 - fraction) / fraction)} left"
        if self.apart:
            self.out.flush()
            self.err.write(text + "\n")
        else:
            self.err.write(f"\r{text}…\x1b[K")
            self.written = True
        self.err.flush()

    def end(self) -> None:
        if self.written:
            self.err.write("\n")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _size(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000  # type: ignore[assignment]
    raise AssertionError  # (unreachable)


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "less than 1 s"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _finish(summary: Any, writer: Any, err: TextIO, progress: Progress) -> int:
    progress.end()
    writer.summarize(summary)
    if not summary.calls:
        from .._offline._report import formats_tried

        err.write(f"xerj-tools: no tool call recognised; formats tried: {formats_tried()}\n")
    return 1 if summary.failed else 0


def _parquet_calls(path: str, column: str | None) -> Any:
    from .._offline._parquet import ParquetError, parquet_rows
    from .._offline._validate import jsonl_calls

    try:
        rows = parquet_rows(path, column)
        first = next(rows, None)  # opens the file: a missing pyarrow or column is said now
    except ParquetError as exc:
        raise UsageError(str(exc)) from None
    return jsonl_calls(enumerate(itertools.chain([first], rows), start=1))


def _validate_parallel(args: argparse.Namespace, stream: TextIO, out: TextIO, err: TextIO) -> int:
    """`--jobs N` over JSON Lines; a single JSON document is read in this process."""
    from .._offline._batch import line_blocks, summary_of, validate_parallel
    from .._offline._validate import jsonl_error, read_calls, validate_calls

    head: list[str] = []
    for line in stream:
        head.append(line)
        if line.strip():
            break
    writer, progress = _writer(args, out), Progress(err, out)
    with _reporting(writer):
        if head and head[-1].strip() and jsonl_error(head[-1]) is not None:  # one document
            import io

            summary = validate_calls(
                _registry(args.tools_file),
                read_calls(io.StringIO("".join(head) + stream.read())),
                repair=not args.strict,
                on_report=writer.report,
            )
            return _finish(summary, writer, err, progress)
        total = validate_parallel(
            line_blocks(itertools.chain(head, stream)),
            args.jobs,
            tools_file=args.tools_file,
            repair=not args.strict,
            on_reports=writer.moved_on,
            progress=progress.shown(),
        )
    return _finish(summary_of(total), writer, err, progress)
