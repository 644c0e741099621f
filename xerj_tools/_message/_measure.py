"""A hit's length in the tool message, counted rather than written, and where its long strings
are: what the hits fitter needs to choose without serialising or copying anything.

`measure` adds up a hit's JSON as the message writer (`_json.dumps`: compact, not ASCII-only)
would write it: a string is its length and two quotes unless JSON escapes something in it (a
quote, a backslash, a control character, all of which `str.isprintable` refuses, so only then
is it encoded to be counted); a number is its `repr`, which is what `json` writes. Only plain
JSON types are counted so; a value of any other type (a subclass, an enum member, a date), a
number JSON cannot carry, a float written with an exponent, or nesting past `MAX_DEPTH` is
measured by writing it, as before. What was counted, orjson writes as `json` does: the fitted
message can then be written by orjson without looking for the numbers it writes otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from json.encoder import encode_basestring  # what `json` writes a str as (ensure_ascii=False)
from typing import Any

from .._json import ENCODER, MAX_DEPTH, clean, dumps

__all__ = [
    "IDENTITY",
    "MIN_CUT",
    "Long",
    "encoded",
    "json_length",
    "measure",
    "path",
    "put",
]

MIN_CUT = 200  # a cut field keeps at least this many characters

# A string a cut can touch (longer than `MIN_CUT`): [text, length, JSON length (-1 until
# `encoded` is asked), the keys from the hit to it, its path (None until `path` is asked)].
Long = list[Any]

_NUMBERS = frozenset({int, float})
_INF = float("inf")


class _Unplain(Exception):
    """Not counted: the value is measured by writing it."""


def _number(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return len(int.__repr__(value))  # how `json` writes an int (ValueError past 4,300 digits)
    if kind is float and -_INF < value < _INF:  # NaN and infinities: `clean` makes them null
        return _float(value)
    if kind is bool:
        return 4 if value else 5
    if value is None:
        return 4
    raise _Unplain


def _float(value: float) -> int:
    text = float.__repr__(value)
    if "e" in text:  # written with an exponent, which orjson writes otherwise (see `measure`)
        raise _Unplain
    return len(text)


def _count(value: Any, keys: tuple[Any, ...], longs: list[Long], named: dict[str, int]) -> int:
    """Characters of container `value` in compact JSON, its long strings aside (noted in
    `longs`, in the order `json` writes them); `named` holds the JSON length of each key seen."""
    if len(keys) >= MAX_DEPTH:
        raise _Unplain  # `clean` would cut it
    pairs: Iterable[tuple[Any, Any]]
    if type(value) is dict:
        total = 2 * len(value) + (1 if value else 2)  # braces, a colon per key, the commas
        for key in value:
            try:
                total += named[key]
            except KeyError:
                if type(key) is not str:
                    raise _Unplain from None
                named[key] = len(encode_basestring(key))
                total += named[key]
        pairs = value.items()
    elif type(value) is list:
        if len(value) > 16 and set(map(type, value)) <= _NUMBERS:
            # An embedding the model asked for: the C encoder writes it faster than it is counted
            text = ENCODER.encode(value)  # ValueError on NaN: measured by writing, below
            if "e" in text:
                raise _Unplain  # an exponent: see `measure`
            return len(text)
        total = len(value) + (1 if value else 2)  # brackets and the commas
        pairs = enumerate(value)
    else:
        raise _Unplain
    for key, item in pairs:  # a dict's keys, a list's indices
        kind = type(item)
        if kind is str:
            if len(item) > MIN_CUT:
                longs.append(_long(item, (*keys, key)))
            else:
                total += len(encode_basestring(item))
        elif kind is dict or kind is list:
            total += _count(item, (*keys, key), longs, named)
        elif kind is float and -_INF < item < _INF:
            total += _float(item)
        else:
            total += _number(item)
    return total


def _long(text: str, keys: tuple[Any, ...]) -> Long:
    return [text, len(text), -1, keys, None]


def path(long: Long, known: dict[tuple[Any, ...], str]) -> str:
    """Where a long string is, as `cut_strings` writes it: its dict keys (all str in a value
    `_count` measured), not its list indices. `known`: the paths found so far, by keys (the
    hits of one answer have theirs in the same places)."""
    if long[4] is None:
        where = known.get(long[3])
        if where is None:
            where = ""
            for key in long[3]:
                if type(key) is str:
                    where = f"{where}.{key}" if where else key
            known[long[3]] = where
        long[4] = where
    return str(long[4])


def json_length(text: str) -> int:
    """Characters of `text` as a JSON string: its length and quotes, unless JSON escapes some
    of it (a quote, a backslash, a control character: all unprintable)."""
    if '"' in text or "\\" in text or not text.isprintable():
        return len(encode_basestring(text))
    return len(text) + 2


def encoded(long: Long) -> int:
    """The JSON length of a long string, read (once) only when asked: a 4,500-character body
    that is only ever shown cut is never scanned whole."""
    if long[2] < 0:
        long[2] = json_length(long[0])
    return int(long[2])


# A hit's own name is never cut, however long: a model told to fetch the rest by `_id` needs it
# whole; a memory's `id` alike.
IDENTITY = frozenset({"_id", "_index", "id"})
_WHOLE = frozenset((key,) for key in IDENTITY)


def measure(hit: Any, named: dict[str, int] | None = None) -> tuple[Any, int, list[Long], bool]:
    """`hit` (cleaned, as `_json.clean` makes it, where that changes it), the characters of its
    JSON less those of its long strings, its long strings (those a cut may touch: never the
    hit's own `_id`, `_index` or memory `id`), and whether it was counted: made of plain JSON
    types, with no number written with an exponent, so that orjson (which writes ``1e-07`` as
    ``1e-7``, ``1e-05`` as ``0.00001``) writes it as `json` does. `named`: the JSON length of
    each key seen so far (the hits of one answer share their keys)."""
    hit, total, longs, counted = _measure(hit, named)
    if longs and isinstance(hit, dict):
        for long in [long for long in longs if long[3] in _WHOLE]:
            longs.remove(long)
            total += encoded(long)
    return hit, total, longs, counted


def _measure(hit: Any, named: dict[str, int] | None) -> tuple[Any, int, list[Long], bool]:
    longs: list[Long] = []
    try:
        kind = type(hit)
        if kind is dict or kind is list:
            return hit, _count(hit, (), longs, {} if named is None else named), longs, True
        if kind is str and len(hit) > MIN_CUT:
            return hit, 0, [_long(hit, ())], True
        return hit, len(encode_basestring(hit)) if kind is str else _number(hit), longs, True
    except (_Unplain, ValueError, RecursionError):
        pass
    longs = []
    try:
        text = ENCODER.encode(hit)
        _walk(hit, (), "", longs)
    except (ValueError, RecursionError):
        text = ""
    # Brackets outside the long strings, as `_fit_hits.clean_json` counts them: a value that
    # may nest deeper than `MAX_DEPTH` (or was refused) is cleaned, then measured.
    brackets = text.count("[") + text.count("{")
    brackets -= sum(long[0].count("[") + long[0].count("{") for long in longs)
    if not text or brackets > MAX_DEPTH:
        hit, longs = clean(hit), []
        text = dumps(hit)
        _walk(hit, (), "", longs)
    return hit, len(text) - sum(encoded(long) for long in longs), longs, False


def _walk(value: Any, keys: tuple[Any, ...], where: str, longs: list[Long]) -> None:
    """Note each string longer than `MIN_CUT` in `value` of any type, as `cut_strings` finds
    them (`isinstance`: subclasses too) and names them."""
    if isinstance(value, str):
        if len(value) > MIN_CUT:
            longs.append([value, len(value), len(ENCODER.encode(value)), keys, where])
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, (*keys, k), f"{where}.{k}" if where else k, longs)
    elif isinstance(value, list):
        for n, v in enumerate(value):
            _walk(v, (*keys, n), where, longs)


def put(value: Any, keys: tuple[Any, ...], new: Any) -> Any:
    """`value` with the item at `keys` replaced by `new`: the containers on the way copied (as
    plain dicts and lists, as `cut_strings` copies them), the rest shared."""
    if not keys:
        return new
    top = copy = dict(value) if isinstance(value, dict) else list(value)
    for key in keys[:-1]:
        inner = copy[key]
        copy[key] = copy = dict(inner) if isinstance(inner, dict) else list(inner)
    copy[keys[-1]] = new
    return top
