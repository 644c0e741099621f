"""Recorded calls in a Parquet file: one column holds a call (or a record with calls) per row.

A cell is JSON text (a tool call, a message, a transcript, a Batch output line: any record
`xerj-tools validate` reads from JSONL) or the same record as a Parquet struct. Rows are read in
batches, so a large file is never held whole; a report's ``line`` is the row's 1-based number.
Needs pyarrow (the ``parquet`` extra), imported only when a Parquet file is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["CALL_COLUMNS", "parquet_column", "parquet_rows"]

# The column read when none is named and the file has several: the first of these it has.
CALL_COLUMNS = ("tool_call", "tool_calls", "call", "calls", "messages", "conversation", "record",
                "response", "body", "json")  # fmt: skip


class ParquetError(Exception):
    """The Parquet file cannot be read as asked (no pyarrow, no such column)."""


def _parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        from .._install import install_hint

        raise ParquetError(
            f"reading Parquet needs pyarrow, the `parquet` extra: {install_hint('parquet')}"
        ) from None
    return pq


def parquet_column(names: Sequence[str], column: str | None) -> str:
    """The column of calls among `names`: `column` if given, the only one, or a usual name."""
    if column is not None:
        if column not in names:
            raise ParquetError(f"no column {column!r}; the file has: {', '.join(names)}")
        return column
    if len(names) == 1:
        return names[0]
    for name in CALL_COLUMNS:
        if name in names:
            return name
    raise ParquetError(
        f"which column holds the calls? name it with --column (the file has: {', '.join(names)})"
    )


def parquet_rows(path: str, column: str | None = None, batch_size: int = 4096) -> Iterator[Any]:
    """Each row's cell of the column of calls, in order (text, a decoded struct, or None)."""
    pq = _parquet()
    try:
        file = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ParquetError(f"cannot read {path} as Parquet: {exc}") from None
    name = parquet_column(file.schema_arrow.names, column)
    batches = file.iter_batches(columns=[name], batch_size=batch_size)
    rows = 0
    while True:
        try:  # a page can be corrupt anywhere in the file: it is found when its batch is read
            batch = next(batches, None)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise ParquetError(f"cannot read {path} as Parquet after row {rows:,}: {exc}") from None
        if batch is None:
            return
        rows += batch.num_rows
        yield from batch.column(0).to_pylist()
