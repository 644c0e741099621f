"""Offline validation past one machine, on Dask: JSONL or Parquet partitions, one report.

    from xerj_tools.integrations.dask import validate_jsonl, validate_parquet

    report = validate_jsonl("s3://bucket/calls-2026-11.jsonl")          # a local cluster
    report = validate_jsonl(paths, scheduler="tcp://scheduler:8786")     # a real one
    report = validate_parquet("calls/*.parquet", column="tool_call")

Each partition (a block of lines of a JSONL file, a partition of a Parquet dataset) is validated
by `xerj_tools.validate_batch` on a worker; the plain results come back in partition order and are
merged (`merge_results`) into the document `xerj-tools validate --format json` prints for the same
input: the same counts, the same reports, numbered by line (for Parquet: by row) within each
file. With several files, each report also names its ``file``. `write_report` prints a report as
the command line does (text or JSON).

Needs the ``dask`` extra (dask with its bag and distributed parts, and pyarrow for Parquet;
docs/usage.md#install). `scheduler`: None starts a `distributed.LocalCluster`
(one worker process per core) for the call and closes it after; a ``tcp://`` (or other) address
connects to that scheduler; ``"sync"``, ``"threads"`` or ``"processes"`` use Dask's local
schedulers without a cluster. Or hand in a connected ``client``. The tools file (`tools_file`) and
the input must be readable by the workers at the same path.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Sequence
from typing import Any

from .._offline._batch import merge_results, report_of, validate_batch, write_report

__all__ = ["validate_jsonl", "validate_parquet", "write_report"]


def _module(name: str) -> Any:
    """Dask's modules, untyped to this package (their own annotations are partial)."""
    return importlib.import_module(name)


def validate_jsonl(
    paths: str | Sequence[str],
    *,
    tools_file: str | None = None,
    strict: bool = False,
    scheduler: str | None = None,
    client: Any = None,
    blocksize: str | int | None = "32MiB",
) -> dict[str, Any]:
    """Validate JSONL files (a path, a glob or a list) in partitions of `blocksize` bytes.

    Each file's head is read first, as `xerj-tools validate` reads it: a file that is not JSON
    Lines (its first non-blank line no JSON value: a UTF-8 BOM before it, form feeds or
    vertical tabs for line ends, one document over several lines) or not UTF-8 text raises
    `InputError`, naming the file, where the command line refuses it with exit status 2."""
    dask, db = _module("dask"), _module("dask.bag")
    _check_heads(paths)
    bag = db.read_text(paths, blocksize=blocksize, include_path=True)
    parts = bag.to_delayed()
    tasks = [dask.delayed(_split_path)(part) for part in parts]
    jobs = [
        dask.delayed(_with_path)(
            dask.delayed(validate_batch)(task[0], repair=not strict, tools_file=tools_file), task[1]
        )
        for task in tasks
    ]
    return _merge_by_file(_compute(jobs, scheduler, client))


def _check_heads(paths: str | Sequence[str]) -> None:
    from .._offline._lines import jsonl_head
    from .._offline._validate import InputError

    fsspec = _module("fsspec")  # (what `read_text` opens files with: local, s3://, ...)
    for opened in fsspec.open_files(paths, mode="rb"):
        with opened as stream:
            head = jsonl_head(stream)
        if not head.jsonl:
            raise InputError(f"{opened.path}: {head.error or 'not JSON Lines'}")


def validate_parquet(
    paths: str | Sequence[str],
    *,
    column: str | None = None,
    tools_file: str | None = None,
    strict: bool = False,
    scheduler: str | None = None,
    client: Any = None,
) -> dict[str, Any]:
    """Validate the column of calls of Parquet files (a path, a local glob or a list), one task
    per row group; rows are numbered from 1 in each file, as `xerj-tools validate` numbers them.

    Row groups are read with pyarrow on the workers rather than through `dask.dataframe`: that
    keeps each row's number exact, and keeps pandas (whose reading of Parquet through Dask warns
    of deprecations under pandas 3.1) out of the way.
    """
    from .._offline._parquet import ParquetError, parquet_column

    dask = _module("dask")
    pq = _module("pyarrow.parquet")
    files = _expand(paths)
    jobs = []
    for path in files:
        meta = pq.ParquetFile(path)
        name = parquet_column(meta.schema_arrow.names, column)
        for group in range(meta.num_row_groups):
            part = dask.delayed(_validate_row_group)(path, group, name, tools_file, not strict)
            jobs.append(dask.delayed(_with_path)(part, path))
    if not files:
        raise ParquetError(f"no Parquet file at {paths!r}")
    return _merge_by_file(_compute(jobs, scheduler, client))


def _expand(paths: str | Sequence[str]) -> list[str]:
    import glob

    out: list[str] = []
    for path in [paths] if isinstance(paths, str) else paths:
        out.extend(sorted(glob.glob(path)) if glob.has_magic(path) else [path])
    return out


def _validate_row_group(
    path: str, group: int, column: str, tools_file: str | None, repair: bool
) -> dict[str, Any]:
    pq = _module("pyarrow.parquet")
    cells = pq.ParquetFile(path).read_row_group(group, columns=[column]).column(0).to_pylist()
    return validate_batch(cells, repair=repair, tools_file=tools_file)


def _split_path(part: list[tuple[str, str]]) -> tuple[list[str], str | None]:
    return [line for line, _ in part], (part[0][1] if part else None)


def _with_path(result: dict[str, Any], path: str | None) -> dict[str, Any]:
    return {**result, "path": path}


def _compute(jobs: list[Any], scheduler: str | None, client: Any) -> list[dict[str, Any]]:
    dask = _module("dask")
    if client is not None:
        return list(client.compute(jobs, sync=True))
    if scheduler in ("sync", "synchronous", "threads", "processes"):
        return list(dask.compute(*jobs, scheduler=scheduler))
    distributed = _module("distributed")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    with contextlib.ExitStack() as stack:
        if scheduler is None:
            cluster = stack.enter_context(
                LocalCluster(
                    threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
                )
            )
            connected = stack.enter_context(Client(cluster))
        else:
            connected = stack.enter_context(Client(scheduler))
        return list(connected.compute(jobs, sync=True))


def _merge_by_file(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Partitions in order; lines restart at each file, call indexes run on across files."""
    files = list(dict.fromkeys(r["path"] for r in results if r["path"] is not None))
    if len(files) <= 1:
        return report_of(merge_results(results))
    return report_of(merge_results(_per_file(results, files)))


def _per_file(results: list[dict[str, Any]], files: list[str]) -> Iterator[dict[str, Any]]:
    for path in files:
        one = merge_results(r for r in results if r["path"] == path)
        one["results"] = [{**report, "file": path} for report in one["results"]]
        one["lines"] = 0  # the next file's lines count from 1 again
        yield one
