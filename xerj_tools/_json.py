"""The JSON seam: every writer the tool message and its budget rely on, and orjson where it is
installed (the ``fast`` extra) and gives the same result as the standard library.

One encoder (`ENCODER`: compact, not ASCII-only, strict) writes every tool message (`dumps`,
`written`) and is the one the fitter measures with (`_message/_measure.py`): the budget's
guarantee, measured length = written length, holds because there is no second one.

Each function here returns exactly what the standard-library path would: the same Python values
from a decode, the same characters from an encode (a test holds both, with and without orjson).
Where orjson reads or writes something differently, the call goes to the standard library:

- decoding: an integer of 19 digits or more (orjson makes a float of one past 64 bits), NaN or
  Infinity, a number past a double's range, a lone surrogate, text not in UTF-8: orjson refuses
  or differs, so the text is decoded again by `json`;
- encoding: orjson writes ``1e-7`` and ``0.00001`` where Python writes ``1e-07`` and ``1e-05``,
  and NaN as null where the strict encoder refuses; output with a number of such a shape (or
  text that looks like one) is written again by `json` (see `_may_differ`). A value that is
  not plain JSON (a subclass of str, int, dict or list, a dataclass, a date) goes to `json`
  too, through `default`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = [
    "ENCODER",
    "MAX_DEPTH",
    "checked",
    "clean",
    "dumps",
    "fast_dumps",
    "fast_loads",
    "fast_raw",
    "written",
]

MAX_DEPTH = 100  # levels of nesting kept from an engine value; deeper values are cut, marked

# The tool message's encoder. It raises where `dumps` cleans: a non-finite number, a deep value.
ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)

_T = TypeVar("_T")


def clean(value: _T, max_depth: int = MAX_DEPTH) -> _T:
    """`value` with every non-finite float made null and every container deeper than
    `max_depth` replaced by a marker string. Iterative: any depth is safe. Returns a copy."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        item, parent, key, depth = stack.pop()
        if isinstance(item, float):
            parent[key] = item if math.isfinite(item) else None
        elif isinstance(item, (dict, list)):
            if depth >= max_depth:
                parent[key] = f"…[nested deeper than {max_depth} levels]"
                continue
            if isinstance(item, dict):
                copy: Any = dict.fromkeys(item)
                stack.extend((v, copy, k, depth + 1) for k, v in item.items())
            else:
                copy = [None] * len(item)
                stack.extend((v, copy, i, depth + 1) for i, v in enumerate(item))
            parent[key] = copy
        else:
            parent[key] = item
    return root[0]  # type: ignore[no-any-return]


def dumps(payload: Mapping[str, Any]) -> str:
    """Compact, strict JSON, the form every tool message takes. A value JSON cannot carry (NaN,
    an infinity) becomes null, and one nested past `MAX_DEPTH` a marker, rather than an error."""
    try:
        return ENCODER.encode(payload)
    except (ValueError, RecursionError):
        return ENCODER.encode(clean(payload))


def written(value: Any, *, plain: bool = False) -> str:
    """`value` as the tool message writes it (`dumps`), by orjson where `plain` (only plain JSON
    types, no enum member) and it writes the same characters (`fast_dumps`)."""
    return (fast_dumps(value) if plain else None) or dumps(value)


_orjson: Any = None  # the module, once imported; False when it is not installed


def _load() -> Any:
    # Imported on first use: orjson imports uuid, datetime and enum (~6 ms) as it loads.
    global _orjson, _OPTIONS
    if _orjson is None:
        try:
            import orjson
        except ImportError:  # the `fast` extra is not installed
            _orjson = False
        else:
            _OPTIONS = (
                orjson.OPT_PASSTHROUGH_SUBCLASS
                | orjson.OPT_PASSTHROUGH_DATACLASS
                | orjson.OPT_PASSTHROUGH_DATETIME
            )
            _orjson = orjson
    return _orjson


_OPTIONS = 0

# Bytes seen through a mask: each digit 0, `e`/`E` e, `.` itself, anything else a space; one
# substring search then finds a run of digits or a number's shape (a regular expression such as
# [0-9]{19} tries each position, and cost ~15 µs on a 3 KB answer).
_MASK = bytes(
    48 if 48 <= i <= 57 else 101 if i in (69, 101) else 46 if i == 46 else 32 for i in range(256)
)


def _long_digits(raw: bytes) -> bool:
    """19 digits in a row: an integer orjson may read as a float (Python keeps an int)."""
    return b"0" * 19 in raw.translate(_MASK)


def _may_differ(out: bytes) -> bool:
    """Whether orjson's `out` may not be what `json` writes: a number with an exponent (`1e-7`,
    Python `1e-07`), many leading zeros (`0.00001`, Python `1e-05`) or 17 digits in a row (how
    a large float is written differs between the two), or null (orjson's NaN, which the strict
    encoder refuses so that `clean` replaces it in the payload too). A match inside a string
    only sends the value to `json`: slower, never different."""
    if b"null" in out or b"0.0000" in out:
        return True
    masked = out.translate(_MASK)
    return b"0e" in masked or b"0" * 17 in masked


def _refuse(value: Any) -> Any:
    raise TypeError  # not plain JSON: the standard library writes it (with its own `default`)


def fast_loads(data: bytes | str) -> Any:
    """`data` decoded by orjson, or `NotImplemented` where only `json` reads it the same way."""
    orjson = _orjson or _load()
    if not orjson:
        return NotImplemented
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _long_digits(raw):
        return NotImplemented
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NotImplemented


def fast_raw(value: Any) -> bytes | None:
    """orjson's UTF-8 JSON of `value`, unchecked (its numbers may be written differently from
    `json`, see `_may_differ`), or None where orjson does not write it."""
    orjson = _orjson or _load()
    if not orjson:
        return None
    try:
        out: bytes = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return out


def fast_dumps(value: Any) -> str | None:
    """`value` as compact JSON, exactly as `dumps` writes plain JSON values, or None where
    the standard library must write it. Only for values made of plain JSON types and enum-free:
    orjson writes an `enum.Enum` member as its value, `json` (with ``default=str``) by name."""
    return checked(fast_raw(value))


def checked(out: bytes | None) -> str | None:
    """`fast_raw`'s JSON as text where it is what `json` writes, else None."""
    if out is None or _may_differ(out):
        return None
    return out.decode()
