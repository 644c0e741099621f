"""`xerj-tools validate FILE --jobs N` over a seekable file: byte ranges read by the workers.

The parent never reads the lines. It cuts the file into ranges of about `CHUNK_BYTES`, each
ending where a line starts, and hands each range (a path and two offsets) to a pool of N
processes; a worker opens the file, reads its range line by line through the valid lane
(`_lane.validate_lines`) and returns the range's counts, its line count and its reports (the
`_batch.validate_batch` form, lines counted from the range's start). The parent writes the
reports in input order, lines and indexes moved past the ranges before (`_report.shifted`), so
the report is the one a single process prints. At most twice N ranges are in flight, and a
range is small (a range of only invalid calls holds a few thousand reports), so memory stays flat
however long the file is.

Input that cannot be sought (stdin, a pipe) keeps the block path of `_batch.validate_parallel`.

Workers are forked where the process holds no other thread (the CLI's case: the registry and
the compiled checks are inherited, nothing is pickled but offsets and results), else spawned:
forking a process with threads can copy a lock another thread holds.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from ._batch import BatchResult, _counts, _orjson, _registry, add_counts, empty_result
from ._pool import in_order

__all__ = ["CHUNK_BYTES", "chunk_bounds", "validate_range", "validate_ranges"]

CHUNK_BYTES = 1 << 20  # a range per task: ~4,000 recorded calls


def chunk_bounds(path: str, size: int = CHUNK_BYTES) -> Iterator[tuple[int, int]]:
    """(start, end) byte ranges covering the file, each of about `size` bytes and ending just
    after a newline (or at the end of the file): every range starts where a line starts."""
    with open(path, "rb") as stream:
        total = os.fstat(stream.fileno()).st_size
        start = 0
        while start < total:
            end = start + max(size, 1)
            if end >= total:
                end = total
            else:
                stream.seek(end - 1)
                stream.readline()  # to the end of the line holding byte end - 1
                end = min(stream.tell(), total)
            yield start, end
            start = end


class _Range:
    """Bytes [start, end) of a file as a stream (`read` only): a range cut on line starts holds
    whole lines; should the file have grown since it was cut, the range still ends at `end`."""

    def __init__(self, stream: BinaryIO, start: int, end: int) -> None:
        stream.seek(start)
        self.stream, self.left = stream, end - start

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        data = self.stream.read(self.left if size < 0 else min(size, self.left))
        self.left = self.left - len(data) if data else 0
        return data


def validate_range(
    path: str,
    start: int,
    end: int,
    tools_file: str | None = None,
    repair: bool = True,
    rendered: bool = False,
) -> BatchResult:
    """Validate the lines of bytes [start, end) of a JSONL file: `validate_batch`'s result
    (lines and indexes counted from the range's start). With `rendered`, a call's report is
    `_report.Rendered` (its JSON line made here, in the worker) where it can be, else its plain
    form."""
    from ._lane import validate_lines
    from ._lines import LaneLines
    from ._report import render

    class Counted(LaneLines):  # the range's lines read a block at a time, as one process reads
        last = 0

        def blocks(self) -> Iterator[Any]:
            for block in super().blocks():
                if block[1]:
                    self.last = block[0] + len(block[1]) - 1
                yield block

    registry = _registry(tools_file)
    _orjson()
    results: list[Any] = []  # plain forms, or `Rendered` reports
    with open(path, "rb") as stream:
        read = Counted(_Range(stream, start, end))  # type: ignore[arg-type]  # read() is all it asks
        try:
            summary = validate_lines(
                registry,
                read,
                repair=repair,
                on_report=(
                    (lambda r: results.append(render(r) or r.as_dict()))
                    if rendered
                    else (lambda r: results.append(r.as_dict()))
                ),
            )
        except UnicodeDecodeError as exc:
            # the reports made before the line that is not UTF-8 go out, as one process
            # writes them before it stops (`validate_ranges` raises after writing them)
            return {**empty_result(), "results": results, "not_utf8": exc.reason}
    return {"lines": read.last, **_counts(summary), "results": results}


def _start_worker(tools_file: str | None) -> None:
    from ._lane import lane_for

    lane_for(_registry(tools_file))  # orjson loaded and the schema checks compiled, once


def start_method() -> str:
    """ "fork" where this process runs no other thread and the platform has it, else "spawn"."""
    import multiprocessing

    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def validate_ranges(
    path: str,
    jobs: int,
    *,
    tools_file: str | None,
    repair: bool,
    on_reports: Callable[[list[Any], int, int], None],
    progress: Callable[[int], None] | None = None,
    rendered: bool = False,
    reached: Callable[[int], None] | None = None,
) -> BatchResult:
    """Validate a seekable JSONL file in `jobs` processes, by byte ranges; each range's reports
    go to `on_reports` in input order, with the lines and calls before the range (a report
    writer's `moved_on` numbers them as one process does). Returns the merged counts.
    With `rendered` (the JSON report), the workers write each call's report line themselves
    (`_report.Rendered`) and the parent only moves its numbers on: the parent's share of the
    work, which competes with the workers for the cores, is a fraction of what it was.
    `reached` is told the byte offset up to which the reports are written, range by range.
    No more processes start than the file has ranges."""
    import multiprocessing

    total = empty_result()
    size = CHUNK_BYTES
    jobs = max(1, min(jobs, -(-os.stat(path).st_size // size)))
    method = start_method()
    if method == "fork":
        _start_worker(tools_file)  # compiled here once, inherited by every worker

    def take(args: tuple[Any, ...], result: BatchResult) -> None:
        on_reports(result["results"], total["lines"], total["calls"])
        if "not_utf8" in result:
            raise UnicodeDecodeError("utf-8", b"", 0, 1, result["not_utf8"])
        if reached is not None:
            reached(args[2])  # the range's end
        add_counts(total, result, progress)

    ranges = (
        (path, start, end, tools_file, repair, rendered) for start, end in chunk_bounds(path, size)
    )
    in_order(multiprocessing.get_context(method), jobs, validate_range, ranges, take,
             initializer=_start_worker, initargs=(tools_file,))  # fmt: skip
    return total
