"""`xerj-tools validate`: one call, or every call of a file, checked offline.

In one process (the reports written as they come), or with `--jobs N` in N processes over
blocks of JSON Lines (`xerj_tools._offline._batch`), with the same report in the same order.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, TextIO

from ._common import UsageError, _read_argument, _registry

__all__ = ["validate"]


def validate(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    with contextlib.ExitStack() as closing:
        return _validate_in(args, out, err, stdin, closing)


def _validate_in(
    args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO, closing: contextlib.ExitStack
) -> int:
    from .._json import _load as load_orjson
    from .._offline._report import JsonReport, TextReport
    from .._offline._validate import FoundCall, InputError, read_calls, validate_calls

    load_orjson()  # orjson decodes every record and call where installed (the `fast` extra)
    registry = _registry(args.tools_file)
    if args.tool:
        if args.input or args.args is None:
            raise UsageError("give --tool NAME with --args, or an input file, not both")
        found: Any = [FoundCall(args.tool, _read_argument(args.args, stdin), None, None, 1)]
    elif args.input and args.input.endswith(".parquet"):
        found = _parquet_calls(args.input, args.column)
    elif args.input and args.input != "-" and (binary := _seekable(args.input, closing)):
        from .._offline._lines import starts_jsonl

        if starts_jsonl(
            binary
        ):  # the valid lane, over the file's bytes (xerj_tools._offline._lane)
            if args.jobs > 1:
                from .._offline._ranges import validate_ranges

                return _finish_parallel(args, out, err, lambda on_reports, progress: validate_ranges(
                    args.input, args.jobs, tools_file=args.tools_file, repair=not args.strict,
                    on_reports=on_reports, progress=progress, rendered=args.format == "json",
                ))  # fmt: skip
            return _validate_lines(args, registry, binary, out, err)
        binary.close()
        found = read_calls(closing.enter_context(open(args.input, encoding="utf-8")))  # noqa: SIM115
    elif args.input:
        try:
            stream = (
                stdin
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
    writer = JsonReport(out) if args.format == "json" else TextReport(out)
    try:
        summary = validate_calls(
            registry,
            found,
            repair=not args.strict,
            progress=_progress(err),
            on_report=writer.report,
        )
    except InputError as exc:
        writer.abort(str(exc))
        raise UsageError(str(exc)) from None
    except UnicodeDecodeError:
        writer.abort("the input is not UTF-8 text")
        raise UsageError("the input is not UTF-8 text") from None
    return _finish(summary, writer, err)


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
    from .._offline._lines import lane_lines
    from .._offline._report import JsonReport, TextReport

    writer = JsonReport(out) if args.format == "json" else TextReport(out)
    try:
        summary = validate_lines(
            registry,
            lane_lines(binary),
            repair=not args.strict,
            progress=_progress(err),
            on_report=writer.report,
        )
    except UnicodeDecodeError:
        writer.abort("the input is not UTF-8 text")
        raise UsageError("the input is not UTF-8 text") from None
    return _finish(summary, writer, err)


def _finish_parallel(args: argparse.Namespace, out: TextIO, err: TextIO, run: Any) -> int:
    from .._offline._batch import summary_of
    from .._offline._report import JsonReport, TextReport

    writer = JsonReport(out) if args.format == "json" else TextReport(out)
    try:
        total = run(writer.moved_on, _progress(err))
    except UnicodeDecodeError:
        writer.abort("the input is not UTF-8 text")
        raise UsageError("the input is not UTF-8 text") from None
    return _finish(summary_of(total), writer, err)


def _progress(err: TextIO) -> Any:
    """Progress on stderr, on a terminal only: calls so far and their rate."""
    if not err.isatty():
        return None
    import time

    started = time.perf_counter()

    def progress(count: int) -> None:
        rate = count / max(time.perf_counter() - started, 1e-9)
        err.write(f"\rvalidated {count:,} calls ({rate:,.0f}/s)…")
        err.flush()

    return progress


def _finish(summary: Any, writer: Any, err: TextIO) -> int:
    if err.isatty() and summary.calls >= 10_000:
        err.write("\n")
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

    def numbered() -> Any:
        yield 1, first
        yield from enumerate(rows, start=2)

    return jsonl_calls(numbered())


def _validate_parallel(args: argparse.Namespace, stream: TextIO, out: TextIO, err: TextIO) -> int:
    """`--jobs N` over JSON Lines; a single JSON document is read in this process."""
    from .._offline._batch import line_blocks, summary_of, validate_parallel
    from .._offline._report import JsonReport, TextReport
    from .._offline._validate import InputError, is_jsonl, read_calls, validate_calls

    head: list[str] = []
    for line in stream:
        head.append(line)
        if line.strip():
            break
    writer = JsonReport(out) if args.format == "json" else TextReport(out)
    try:
        if head and head[-1].strip() and not is_jsonl(head[-1]):  # one document: read whole
            import io

            try:
                summary = validate_calls(
                    _registry(args.tools_file),
                    read_calls(io.StringIO("".join(head) + stream.read())),
                    repair=not args.strict,
                    on_report=writer.report,
                )
            except InputError as exc:
                writer.abort(str(exc))
                raise UsageError(str(exc)) from None
            return _finish(summary, writer, err)
        import itertools

        total = validate_parallel(
            line_blocks(itertools.chain(head, stream)),
            args.jobs,
            tools_file=args.tools_file,
            repair=not args.strict,
            on_reports=writer.moved_on,
            progress=_progress(err),
        )
    except UnicodeDecodeError:
        writer.abort("the input is not UTF-8 text")
        raise UsageError("the input is not UTF-8 text") from None
    return _finish(summary_of(total), writer, err)
