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

__all__ = ["MAX_ARGUMENT_DEPTH", "TooDeep", "loads", "may_hold_huge_numbers", "value_problem"]

MAX_ARGUMENT_DEPTH = 64
"""How many objects and arrays may nest inside one another in a tool call's arguments (the
arguments object itself is level 1). A bool query nests three levels per clause
(``{"bool": {"filter": [...]}}``) and an aggregation three per sub-aggregation, so 64 leaves
room for about twenty of either; Elasticsearch itself refuses bool queries nested deeper than
20 (``indices.query.bool.max_nested_depth``) and mappings deeper than 20 objects."""

# A string token, or one bracket outside any string.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
# A float literal can only overflow to infinity with a 3-digit exponent or 200+ digits.
_HUGE_NUMBER = re.compile(r"[eE][+-]?\d{3}|\d{200}")


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
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(text: str, limit: int = MAX_ARGUMENT_DEPTH) -> Any:
    """`json.loads` that raises `TooDeep` for text nested deeper than `limit` (measured before
    decoding, in linear time) and refuses NaN and Infinity, which are not JSON."""
    if _text_depth_exceeds(text, limit):
        raise TooDeep(limit)
    return json.loads(text, parse_constant=_reject_constant)


def may_hold_huge_numbers(text: str) -> bool:
    """False when no number in `text` can have decoded to an infinity (so no walk is needed)."""
    return _HUGE_NUMBER.search(text) is not None


def value_problem(
    value: Any, limit: int = MAX_ARGUMENT_DEPTH
) -> tuple[list[str | int], str] | None:
    """The first place where decoded arguments break a limit, as (path parts, message), or None.

    Checks, without recursion: nesting depth (a value that contains itself is infinitely deep),
    finite numbers, string keys, and JSON types only (a tuple counts as an array).
    """
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 1, [])]
    while stack:
        node, depth, parts = stack.pop()
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, (list, tuple)):
            items = enumerate(node)
        else:
            continue
        if depth > limit:
            return parts, f"is nested deeper than {limit} levels"
        for key, item in items:
            if isinstance(key, int) and isinstance(node, Mapping):
                return parts, f"has a key that is not a string ({key!r})"
            if not isinstance(key, (str, int)):
                return parts, f"has a key that is not a string ({type(key).__name__})"
            if isinstance(item, float):
                if not math.isfinite(item):
                    return [*parts, key], f"must be a finite number; got {item}"
            elif isinstance(item, int):
                if item.bit_length() > _MAX_INT_BITS:
                    return [*parts, key], "is too large a number to send"
            elif isinstance(item, (Mapping, list, tuple)):
                stack.append((item, depth + 1, [*parts, key]))
            elif item is not None and not isinstance(item, (str, int)):
                return [*parts, key], f"is not a JSON value ({type(item).__name__})"
    return None
