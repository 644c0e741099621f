"""Fitting hits (or memories) into a room of characters, with each hit measured once.

The order of sacrifice: hits are kept whole while they fit; then long strings inside hits are
cut (to the longest length that lets every hit fit, never below `MIN_CUT`) with a visible marker
``…[+N chars]``; then whole hits are dropped from the end.

Finding the cut length is a search over lengths, and a search that re-serialised every hit at
every step cost several raw HTTP calls on 50 hits. Here each hit is serialised once, when the
search first reaches it, and its strings longer than `MIN_CUT` are noted: the size of the hit
with its strings cut at any length is then arithmetic (the JSON of a cut string is the JSON of
its prefix plus the marker), exactly equal to serialising the cut copy.
"""

from __future__ import annotations

import json
from typing import Any

from ._body import MAX_DEPTH, clean
from ._format import dumps
from ._json import fast_dumps

__all__ = [
    "MIN_CUT",
    "Measured",
    "choose",
    "clean_envelope",
    "clean_json",
    "cut_strings",
    "marker",
    "size",
]

MIN_CUT = 200  # a cut field keeps at least this many characters


def size(value: Any) -> int:
    """Characters of `value` in the tool message (`dumps`, compact JSON)."""
    return len(dumps(value))


def marker(omitted: int) -> str:
    return f"…[+{omitted} chars]"


def cut_strings(value: Any, cap: int, path: str, cut: list[str]) -> Any:
    """Copy `value` with every string longer than `cap` cut and marked; record each path cut."""
    if isinstance(value, str):
        if len(value) > cap:
            cut.append(path)
            return value[:cap] + marker(len(value) - cap)
        return value
    if isinstance(value, dict):
        return {k: cut_strings(v, cap, f"{path}.{k}" if path else k, cut) for k, v in value.items()}
    if isinstance(value, list):
        return [cut_strings(v, cap, path, cut) for v in value]
    return value


def _encoded(text: str) -> int:
    """Characters of `text` as a JSON string: its length and quotes, unless JSON escapes some
    of it (a quote, a backslash, a control character: all unprintable)."""
    if '"' in text or "\\" in text or not text.isprintable():
        return size(text)
    return len(text) + 2


def _blank(value: Any, longs: list[str]) -> Any:
    """A copy of `value` with each string a cut can touch (longer than `MIN_CUT`) made empty,
    and those strings, in order, in `longs`: the hit's skeleton, cheap to serialise."""
    if isinstance(value, str):
        if len(value) > MIN_CUT:
            longs.append(value)
            return ""
        return value
    if isinstance(value, dict):
        return {k: _blank(v, longs) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v, longs) for v in value]
    return value


# `dumps`'s encoder, but raising where `dumps` would clean: a non-finite number, a deep value
_STRICT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False)


def clean_json(value: Any, *, plain: bool = False) -> tuple[Any, str]:
    """`value` made safe as `_body.clean` makes it, and its JSON (as `dumps` writes it), with
    the walk and copy of `clean` only where they may change something: the encoder refuses a
    number that is not finite, and a text with no more brackets than `MAX_DEPTH` cannot nest
    deeper than that. `plain`: `value` holds plain JSON types only (no enum member), so orjson
    may write it (`_json.fast_dumps`, the same characters)."""
    text = fast_dumps(value) if plain else None
    if text is not None and text.count("[") + text.count("{") <= MAX_DEPTH:
        return value, text
    try:
        text = _STRICT.encode(value)
    except (ValueError, RecursionError):
        text = ""
    if not text or text.count("[") + text.count("{") > MAX_DEPTH:
        value = clean(value)
        text = dumps(value)
    return value, text


def clean_envelope(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` made safe to fit and serialise (`_body.clean`: finite, at most `MAX_DEPTH`
    deep) except its list of hits, which `Measured` cleans one by one as it reaches them: of a
    1,000-hit answer only the hits that can be shown are ever walked and copied."""
    return {
        k: v if type(v) in _SAFE or (k == "hits" and isinstance(v, list)) else clean(v)
        for k, v in payload.items()
    }


_SAFE = frozenset({str, int, bool, type(None)})  # what `clean` would copy unchanged


class Measured:
    """The hits, each cleaned and measured on first need.

    A hit is measured as its skeleton (`_blank`: its long strings emptied) serialised, plus
    each long string: whole, its JSON length (computed once, when first needed); cut at a cap,
    the JSON length of its prefix and the marker. So a 4,500-character body is read whole only
    where it may be shown whole. `hits` holds the hits cleaned as far as they were measured.
    """

    def __init__(self, hits: list[Any]) -> None:
        self.hits = list(hits)
        self._skeletons: list[int] = []  # characters of each skeleton, its long strings aside
        self._longs: list[list[list[Any]]] = []  # per hit: [text, length, JSON length or -1]

    def _measure(self, upto: int) -> None:
        for i in range(len(self._skeletons), min(upto + 1, len(self.hits))):
            longs: list[str] = []
            try:
                text = _STRICT.encode(_blank(self.hits[i], longs))
            except (ValueError, RecursionError):
                text = ""
            if not text or text.count("[") + text.count("{") > MAX_DEPTH:  # see `clean_json`
                self.hits[i] = clean(self.hits[i])
                longs = []
                text = dumps(_blank(self.hits[i], longs))
            self._skeletons.append(len(text) - 2 * len(longs))
            self._longs.append([[s, len(s), -1] for s in longs])

    def size(self, i: int, cap: int | None) -> int:
        """Characters of hit `i` with its strings cut at `cap` (None: whole; 0: the fewest it
        can take with a cap of `MIN_CUT` or more, a lower bound)."""
        if i >= len(self._skeletons):
            self._measure(i)
        total = self._skeletons[i]
        for entry in self._longs[i]:
            text, length, encoded = entry
            if cap == 0 and length + 2 >= MIN_CUT + 13:
                total += MIN_CUT + 13  # cut or whole, it takes at least this much
            elif cap is None or cap == 0 or length <= cap:
                if encoded < 0:
                    encoded = entry[2] = size(text)
                total += min(encoded, MIN_CUT + 13) if cap == 0 else encoded
            else:
                if encoded < 0 and length <= 4 * cap:  # read it whole once, not a prefix per cap
                    encoded = entry[2] = size(text)
                if encoded == length + 2:  # nothing in it is escaped: nor in its prefix
                    prefix = cap + 2
                else:
                    prefix = size(text[:cap]) if encoded > 0 else _encoded(text[:cap])
                total += prefix + 10 + len(str(length - cap))  # + marker(length - cap)
        return total

    def count(self, cap: int | None, room: int) -> int:
        """How many hits, from the first, fit in `room` with strings cut at `cap`."""
        used = -1  # n hits take n - 1 commas
        hit_size = self.size
        for i in range(len(self.hits)):
            used += hit_size(i, cap) + 1
            if used > room:
                return i
        return len(self.hits)


def keep(measured: Measured, cap: int | None, room: int) -> tuple[list[Any], list[str]]:
    """The longest prefix of the hits (cut at `cap`) whose serialized size fits in `room`."""
    n = measured.count(cap, room)  # the first n hits are measured, so cleaned
    if cap is None:
        return measured.hits[:n], []
    cut: list[str] = []
    return [cut_strings(h, cap, "", cut) for h in measured.hits[:n]], cut


def choose(measured: Measured, room: int) -> tuple[list[Any], list[str]]:
    """The hits to show in `room` characters: whole while they fit; else every hit cut to the
    longest length that lets all fit; else as many as fit cut to `MIN_CUT`; and at least the
    first hit, cut shorter still, when even that one does not fit."""
    if measured.count(None, room) == len(measured.hits):
        return list(measured.hits), []
    # A cap of `room` or more cuts nothing that could fit: the search stays below it, and never
    # needs the longest string (which would mean measuring every hit of a 1,000-hit answer).
    lo, hi, best = MIN_CUT, max(room, MIN_CUT), None
    if measured.count(0, room) < len(measured.hits):
        lo = hi + 1  # not all can fit, whatever the cap: no search (the answer would be None)
    while lo <= hi:
        mid = (lo + hi) // 2
        if measured.count(mid, room) == len(measured.hits):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return keep(measured, best, room)
    kept, cut = keep(measured, MIN_CUT, room)
    for cap in (120, 60, 30):  # a page that shows nothing would leave `next` where it was
        if kept or not measured.hits:
            break
        cut = []
        measured.size(0, None)  # cleaned
        first = cut_strings(measured.hits[0], cap, "", cut)
        kept = [first] if size(first) <= room else []
    return kept, cut
