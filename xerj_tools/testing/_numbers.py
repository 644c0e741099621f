"""How XERJ reads a number out of a request's JSON: serde_json's `as_f64` and `as_u64`, neither
of which takes a boolean (Python's `bool` is an `int`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["count", "number"]


def number(value: Any) -> float | None:
    """`as_f64`: an integer or a float, as a float; None for anything else."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def count(body: Any, key: str, default: int) -> int:
    """`body[key]` read with `as_u64`: a non-negative integer, else `default`."""
    value = body.get(key) if isinstance(body, Mapping) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else default  # type: ignore[return-value]
