"""Offline validation in batches: plain, mergeable results, and `xerj-tools validate --jobs N`.

`validate_batch` validates one batch of JSONL lines (or of decoded records) and returns a plain
dict, the JSON report of `xerj-tools validate` for those lines alone, plus their line count.
Lines and call indexes in it count from the batch's start; `merge_results` adds batches up in
input order, moving each batch's lines and indexes past those before it. So any engine that
maps a function over partitions in order (a process pool, Dask, Ray, Spark) gets exactly the
report one process would print. Everything in a result is plain data (ints, strings, lists,
dicts): it pickles, and it travels as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from .._schema._registry import ToolRegistry, load_registry
from ._pool import in_order
from ._report import shifted
from ._validate import ValidationSummary

__all__ = ["merge_results", "report_of", "summary_of", "validate_batch", "write_report"]

BatchResult = dict[str, Any]
_COUNTS = ("calls", "valid", "invalid", "repaired", "unreadable_lines")


def validate_batch(
    lines: Iterable[Any],
    registry: ToolRegistry | None = None,
    *,
    repair: bool = True,
    tools_file: str | None = None,
) -> BatchResult:
    """Validate a batch of JSONL lines (a partition); the lines are numbered from 1 here. A line
    is text or bytes (a JSON record), a record already decoded (a Parquet struct), or None.

    Returns ``{"lines", "calls", "valid", "invalid", "repaired", "unreadable_lines",
    "unrecognised", "results"}``: the report of `xerj-tools validate --format json` for these
    lines, with ``lines`` counted for `merge_results`. `registry` defaults to the tools file
    `tools_file`, else the bundled tools (loaded once per process).
    """
    if registry is None:
        registry = _registry(tools_file)
    _orjson()
    count = 0

    def numbered() -> Iterator[tuple[int, Any]]:
        nonlocal count
        for number, line in enumerate(lines, start=1):
            count = number
            yield number, line

    from ._lane import validate_lines

    summary = validate_lines(registry, numbered(), repair=repair)
    return {"lines": count, **summary.as_dict()}


def _counts(summary: ValidationSummary) -> dict[str, Any]:
    out = summary.as_dict()
    del out["results"]
    return out


_REGISTRIES: dict[str | None, ToolRegistry] = {}


def _registry(tools_file: str | None) -> ToolRegistry:
    found = _REGISTRIES.get(tools_file)
    if found is None:
        found = _REGISTRIES[tools_file] = load_registry(tools_file)
    return found


def _orjson() -> None:
    from .._json import _load

    _load()  # decoded with orjson where installed, as the CLI does


def merge_results(results: Iterable[BatchResult]) -> BatchResult:
    """Batches' results, in input order, as one: counts added, lines and indexes moved on."""
    merged = empty_result()
    for result in results:
        merged["results"].extend(shifted(result["results"], merged["lines"], merged["calls"]))
        add_counts(merged, result)
    return merged


def empty_result() -> BatchResult:
    return {"lines": 0, **dict.fromkeys(_COUNTS, 0), "unrecognised": {}, "results": []}


def add_counts(
    total: BatchResult, result: BatchResult, progress: Callable[[int], None] | None = None
) -> None:
    """Add `result`'s counts (not its reports) to `total`; `progress` is told the calls so
    far each time they pass a multiple of 10,000."""
    before = total["calls"] // 10_000
    total["lines"] += result["lines"]
    for key in _COUNTS:
        total[key] += result[key]
    unrecognised = total["unrecognised"]
    for kind, n in result["unrecognised"].items():
        unrecognised[kind] = unrecognised.get(kind, 0) + n
    if progress is not None and total["calls"] // 10_000 > before:
        progress(total["calls"])


def report_of(result: BatchResult) -> dict[str, Any]:
    """A merged result as `xerj-tools validate --format json` prints it: reports first."""
    from ._report import formats_tried

    out = {"results": result["results"]}
    out.update((k, v) for k, v in result.items() if k not in ("results", "lines"))
    if not result["calls"]:
        out["formats_tried"] = formats_tried()
    return out


def write_report(report: dict[str, Any], out: TextIO, format: str = "text") -> int:
    """Print a report (`report_of`'s document) as `xerj-tools validate` prints it, text or
    ``"json"``; returns the exit status the command would (0 all valid, 1 otherwise)."""
    from ._report import JsonReport, TextReport

    writer = JsonReport(out) if format == "json" else TextReport(out)
    for item in report["results"]:
        writer.report(item)
    summary = summary_of(report)
    writer.summarize(summary)
    return 1 if summary.failed else 0


def summary_of(result: BatchResult) -> ValidationSummary:
    """The counts of a result as a `ValidationSummary` (its verdict: `failed`)."""
    return ValidationSummary(
        calls=result["calls"],
        valid=result["valid"],
        invalid=result["invalid"],
        repaired=result["repaired"],
        unreadable=result["unreadable_lines"],
        unrecognised=dict(result["unrecognised"]),
    )


# ---------------------------------------------------------------- `--jobs N`

BLOCK_LINES = 4000  # lines per task: big enough to pay for the trip, small enough to stream


def _start_worker(tools_file: str | None) -> None:
    _registry(tools_file)
    _orjson()


def _task(lines: list[str], tools_file: str | None, repair: bool) -> BatchResult:
    return validate_batch(lines, _registry(tools_file), repair=repair)


def validate_parallel(
    blocks: Iterable[list[str]],
    jobs: int,
    *,
    tools_file: str | None,
    repair: bool,
    on_reports: Callable[[list[Any], int, int], None],
    progress: Callable[[int], None] | None = None,
) -> BatchResult:
    """Validate blocks of lines in `jobs` processes; each block's reports go to `on_reports` in
    input order, with the lines and calls before the block (a report writer's `moved_on`
    numbers them as one process would). At most twice `jobs` blocks are in flight, so
    memory stays flat. Returns the merged counts (without the reports)."""
    total = empty_result()
    import multiprocessing

    def take(args: tuple[Any, ...], result: BatchResult) -> None:
        on_reports(result["results"], total["lines"], total["calls"])
        add_counts(total, result, progress)

    # spawned: no fork of a process that may hold threads; the input stopping being text
    # (`line_blocks` cuts the last block short) reports the blocks read before, then raises
    tasks = ((block, tools_file, repair) for block in blocks)
    in_order(multiprocessing.get_context("spawn"), jobs, _task, tasks, take,
             initializer=_start_worker, initargs=(tools_file,))  # fmt: skip
    return total


def line_blocks(lines: Iterable[str]) -> Iterator[list[str]]:
    """`lines` in lists of `BLOCK_LINES`."""
    block: list[str] = []
    try:
        for line in lines:
            block.append(line)
            if len(block) >= BLOCK_LINES:
                yield block
                block = []
    except UnicodeDecodeError:
        if block:  # the lines read before the input stopped being text, then the error
            yield block
        raise
    if block:
        yield block
