"""How XERJ reads numbers out of a request: serde_json's `as_f64` and `as_u64`, neither of which
takes a boolean (Python's `bool` is an `int`), and a string typed as the number it spells."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["count", "number", "number_or_text"]


def number(value: Any) -> float | None:
    """`as_f64`: an integer or a float, as a float; None for anything else."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def count(body: Any, key: str, default: int) -> int:
    """`body[key]` read with `as_u64`: a non-negative integer, else `default`."""
    value = body.get(key) if isinstance(body, Mapping) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else default  # type: ignore[return-value]


def number_or_text(text: str) -> int | float | str:
    """A string as a typed value: an integer as an int, another finite number as a float, anything
    else the string itself."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text
