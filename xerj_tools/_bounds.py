"""Structural limits on model arguments: nesting depth, finite numbers, JSON values only.

Python's json module, jsonschema, `copy.deepcopy` and `repr` all recurse, so ~1,000 levels of
nested arrays raise `RecursionError` from any of them. Text is therefore measured *before* it
is decoded, in one linear scan that stops at the limit, whatever the depth; a value handed over
already decoded is walked without recursion. Either way the limit is `MAX_ARGUMENT_DEPTH`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from . import _json

__all__ = [
    "MAX_ARGUMENT_DEPTH", "TooDeep", "loads", "may_hold_surrogate", "may_overflow", "value_problem",
]  # fmt: skip

MAX_ARGUMENT_DEPTH = 64
"""How many objects and arrays may nest inside one another in a tool call's arguments (the
arguments object itself is level 1). A bool query nests three levels per clause
(``{"bool": {"filter": [...]}}``) and an aggregation three per sub-aggregation, so 64 leaves
room for about twenty of either; Elasticsearch itself refuses bool queries nested deeper than
20 (``indices.query.bool.max_nested_depth``) and mappings deeper than 20 objects."""

# The scan's two steps: the next quote or bracket; from after an opening quote, the rest of the
# string up to its closing quote. Each step starts where the last one ended and never looks
# back, so the scan reads every character at most twice (once more for an unterminated string,
# where it stops): linear in the text, whatever it holds. (A single `finditer` over "a string
# or a bracket" restarts inside an unterminated string at every escaped quote and is quadratic.)
_NEXT_TOKEN = re.compile(r'["\[\]{}]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


# Python refuses to print an int of more than 4,300 digits (and JSON text that long never
# decodes); no engine field holds more than 64 bits. Far past both, such a number is refused.
_MAX_INT_BITS = 1024


class TooDeep(ValueError):
    """Text nested deeper than the limit (a `ValueError`, like every other decoding failure)."""

    def __init__(self, limit: int, path: str = "$") -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit
        self.path = path


def _text_depth_exceeds(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual case, decided in C without a scan
    depth, position = 0, 0
    next_token, string_rest = _NEXT_TOKEN.search, _STRING_REST.match
    while (token := next_token(text, position)) is not None:
        char, position = token.group(), token.end()
        if char == '"':
            closing = string_rest(text, position)
            if closing is None:
                return False  # a string that never closes: not JSON, and the decoder says where
            position = closing.end()
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(text: str, limit: int = MAX_ARGUMENT_DEPTH, *, fast: bool = True) -> Any:
    """`json.loads` that raises `TooDeep` for text nested deeper than `limit` (measured before
    decoding, in linear time) and refuses NaN and Infinity, which are not JSON. `fast=False`
    skips orjson (for text it has refused already)."""
    if _text_depth_exceeds(text, limit):
        raise TooDeep(limit)
    if text.startswith("\ufeff"):  # as `json.loads` says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    # once something imported it: orjson, where it reads text as `json` does (and not past
    # `_FAST_MAX`: refusing text, orjson builds its error from a copy of the whole document,
    # about 12 times its size in memory; `json` reads a long text in no more than it builds)
    if fast and _json._orjson and len(text) <= _FAST_MAX:
        value = _json.fast_loads(text)
        if value is not NotImplemented:
            return value
    return _DECODER.decode(text)


_FAST_MAX = 8 << 20  # characters

# `json.loads` with an argument builds a decoder (and its scanner) on every call; this one is
# built once (decoding keeps no state in it).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


# Digits to 0, E to e, signs dropped: a 3-digit exponent reads "e000" and a long number a run
# of zeros. Nothing is split this way, so a number that could overflow is never missed.
_NUMBER_SHAPES = bytes.maketrans(b"123456789E", b"000000000e")


def may_overflow(text: str) -> bool:
    """False when no number in JSON `text` can decode to an infinity or to an integer past
    `_MAX_INT_BITS`: that takes an exponent of 3 digits or a run of 200 (a float is at most
    1.8e308; past 99 in the exponent or 209 digits before the point it is infinite)."""
    shapes = text.encode("utf-8", "surrogatepass").translate(_NUMBER_SHAPES, b"+-")
    return b"e000" in shapes or b"0" * 200 in shapes


# A lone surrogate: JSON text may write one ("\ud800" is valid JSON), but it is no character,
# UTF-8 cannot encode it, and no request holding it can be sent. A valid pair decodes to one
# character outside the range, so any code point left in it is lone.
_SURROGATE = re.compile("[\ud800-\udfff]")
# In text: such a code point as it is, or escaped (a pair matches too; the walk then finds none).
_SURROGATE_TEXT = re.compile("[\ud800-\udfff]|\\\\u[dD][89abcdefABCDEF]")


def may_hold_surrogate(text: str) -> bool:
    """False when JSON `text` cannot decode to a string holding a lone surrogate."""
    return _SURROGATE_TEXT.search(text) is not None


def _surrogate_problem(text: str) -> str | None:
    if text.isascii() or (found := _SURROGATE.search(text)) is None:
        return None
    return (
        f"holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), "
        "which is not text and cannot be sent; remove it or send the whole character"
    )


def _finite_numbers(values: list[Any]) -> bool:
    """True when every item is a number that converts to a finite float: `math.fsum` converts
    each one (an int past 1024 bits overflows), and its sum is infinite or NaN as soon as one
    item is. Anything else (a string, a list, an overflow) leaves it to the item-by-item walk."""
    try:
        return math.isfinite(math.fsum(values))
    except (TypeError, OverflowError, ValueError):
        return False


def _leaf_problem(item: Any) -> str | None:
    if isinstance(item, float):
        return None if math.isfinite(item) else f"must be a finite number; got {item}"
    if isinstance(item, int):
        return None if item.bit_length() <= _MAX_INT_BITS else "is too large a number to send"
    if isinstance(item, str):
        return _surrogate_problem(item)
    if item is None:
        return None
    return f"is not a JSON value ({type(item).__name__})"


def value_problem(
    value: Any, limit: int = MAX_ARGUMENT_DEPTH, *, decoded: bool = False
) -> tuple[list[str | int], str] | None:
    """The first place where decoded arguments break a limit, as (path parts, message), or None.

    Checks, without recursion: nesting depth (a value that contains itself is infinitely deep),
    finite numbers, integers that can be printed, string keys, text without lone surrogates
    (keys too), and JSON types only (a tuple
    counts as an array). `decoded` says `value` came from `json.loads`, so it holds JSON types
    only; then a list of numbers (a vector) is checked in one C call.
    """
    if not isinstance(value, (Mapping, list, tuple)):
        problem = _leaf_problem(value)
        return None if problem is None else ([], problem)
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 1, [])]
    while stack:
        node, depth, parts = stack.pop()
        mapping = type(node) is dict or isinstance(node, Mapping)
        if depth > limit:
            return parts, f"is nested deeper than {limit} levels"
        if decoded and not mapping and len(node) > 8 and _finite_numbers(node):
            continue
        for key, item in node.items() if mapping else enumerate(node):
            if mapping:
                if not isinstance(key, str):
                    return parts, f"has a key that is not a string ({type(key).__name__})"
                if not key.isascii() and (problem := _surrogate_problem(key)):
                    return parts, f"has a key that {problem}"
            kind = type(item)
            if kind is float:
                if item - item == 0.0:  # finite: inf - inf and nan - nan are nan
                    continue
            elif kind is str:
                if item.isascii():
                    continue
            elif kind is bool or item is None:
                continue
            elif kind is dict or kind is list or isinstance(item, (Mapping, list, tuple)):
                stack.append((item, depth + 1, [*parts, key]))
                continue
            if (problem := _leaf_problem(item)) is not None:
                return [*parts, key], problem
    return None
