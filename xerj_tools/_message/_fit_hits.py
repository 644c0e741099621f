"""Fitting hits (or memories) into a room of characters, with each hit measured once.

The order of sacrifice: hits are kept whole while they fit; then long strings inside hits are
cut (to the longest length that lets every hit fit, never below `MIN_CUT`) with a visible marker
``…[+N chars]``; then whole hits are dropped from the end.

Finding the cut length is a search over lengths, and a search that re-serialised every hit at
every step cost several raw HTTP calls on 50 hits. Here each hit is measured once, when the
search first reaches it (`_measure`: its JSON length counted, and where its strings longer
than `MIN_CUT` are): the size of the hit with its strings cut at any length is then arithmetic
(the JSON of a cut string is the JSON of its prefix plus the marker), exactly equal to
serialising the cut copy. Nothing is copied until the choice is made, and then only the
containers on the way to a cut string.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._json import ENCODER, MAX_DEPTH, checked, clean, dumps, fast_dumps
from ._measure import IDENTITY, MIN_CUT, Long, encoded, json_length, measure, path, put

__all__ = [
    "MIN_CUT",
    "Choice",
    "Measured",
    "choose",
    "clean_envelope",
    "clean_json",
    "cut_strings",
    "marker",
    "size",
    "surely_longer",
]


def size(value: Any) -> int:
    """Characters of `value` in the tool message (`dumps`, compact JSON)."""
    return len(dumps(value))


def surely_longer(raw: bytes | None, limit: int) -> bool:
    """Whether a message orjson wrote as `raw` (`_json.fast_raw`) is longer than `limit`
    characters as `json` writes it, without the checks `fast_dumps` makes: orjson writes a
    number differently only where `json` writes it with an exponent (``1e-07``, ``1e+16``:
    orjson ``1e-7``, ``1e16``, shorter) or as ``1e-05`` to ``9.99e-05`` (orjson ``0.00001``:
    longer, and starting with ``0.0000``). So, with no ``0.0000`` in it, orjson's JSON is never
    longer than `json`'s. False when orjson did not write it or cannot tell."""
    return raw is not None and raw.isascii() and len(raw) > limit and b"0.0000" not in raw


def marker(omitted: int) -> str:
    return f"…[+{omitted} chars]"


def cut_strings(
    value: Any, cap: int, path: str, cut: list[str], whole: frozenset[str] = frozenset()
) -> Any:
    """Copy `value` with every string longer than `cap` cut and marked; record each path cut.
    `whole`: keys of `value` itself (not of what it holds) whose values are kept as they are."""
    if isinstance(value, str):
        if len(value) > cap:
            cut.append(path)
            return value[:cap] + marker(len(value) - cap)
        return value
    if isinstance(value, dict):
        return {
            k: v if k in whole else cut_strings(v, cap, f"{path}.{k}" if path else k, cut)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [cut_strings(v, cap, path, cut) for v in value]
    return value


def clean_json(value: Any, *, plain: bool = False, raw: bytes | None = None) -> tuple[Any, str]:
    """`value` made safe as `_json.clean` makes it, and its JSON (as `dumps` writes it), with
    the walk and copy of `clean` only where they may change something: the encoder refuses a
    number that is not finite, and a text with no more brackets than `MAX_DEPTH` cannot nest
    deeper than that. `plain`: `value` holds plain JSON types only (no enum member), so orjson
    may write it (`_json.fast_dumps`, the same characters); `raw`: what orjson wrote of it."""
    text = (fast_dumps(value) if raw is None else checked(raw)) if plain else None
    if text is not None and text.count("[") + text.count("{") <= MAX_DEPTH:
        return value, text
    try:
        text = ENCODER.encode(value)
    except (ValueError, RecursionError):
        text = ""
    if not text or text.count("[") + text.count("{") > MAX_DEPTH:
        value = clean(value)
        text = dumps(value)
    return value, text


def clean_envelope(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` made safe to fit and serialise (`_json.clean`: finite, at most `MAX_DEPTH`
    deep) except its list of hits, which `Measured` cleans one by one as it reaches them: of a
    1,000-hit answer only the hits that can be shown are ever walked and copied."""
    return {
        k: v if type(v) in _SAFE or (k == "hits" and isinstance(v, list)) else clean(v)
        for k, v in payload.items()
    }


_SAFE = frozenset({str, int, bool, type(None)})  # what `clean` would copy unchanged


class Measured:
    """The hits, each cleaned and measured on first need, and the hits to show built from those
    measures once the choice is made.

    A hit is measured once (`_measure.measure`): the characters of its JSON less its strings
    longer than `MIN_CUT`, the only ones a cut can touch, and for each of those its length, its
    JSON length and where it is. The size of the hit with its strings cut at any cap is then
    arithmetic: the JSON of a cut string is the JSON of its prefix (its length and quotes, when
    nothing in the string is escaped) plus the marker. `hits` holds the hits cleaned as far as
    they were measured.
    """

    def __init__(self, hits: list[Any]) -> None:
        self.hits = list(hits)
        self._skeletons: list[int] = []  # characters of each hit, its long strings aside
        self._longs: list[list[Long]] = []  # per hit, its long strings in the order written
        self._named: dict[str, int] = {}  # the JSON length of each key seen
        self._sizes: dict[int | None, list[int]] = {}  # per cap, the size of each hit so far
        self._paths: dict[tuple[Any, ...], str] = {}  # the path of each long string, by keys
        self.counted = True  # every hit measured so far was counted (see `_measure.measure`)

    def _measure(self, upto: int) -> None:
        for i in range(len(self._skeletons), min(upto + 1, len(self.hits))):
            self.hits[i], skeleton, longs, counted = measure(self.hits[i], self._named)
            self.counted = self.counted and counted
            self._skeletons.append(skeleton)
            self._longs.append(longs)

    def size(self, i: int, cap: int | None) -> int:
        """Characters of hit `i` with its strings cut at `cap` (None: whole; 0: the fewest it
        can take with a cap of `MIN_CUT` or more, a lower bound)."""
        if i >= len(self._skeletons):
            self._measure(i)
        total = self._skeletons[i]
        if cap is None:
            for long in self._longs[i]:
                total += encoded(long)
        elif cap == 0:
            for long in self._longs[i]:  # cut at `MIN_CUT` or more, a string takes 213 or more
                total += MIN_CUT + 13 if long[1] >= MIN_CUT + 11 else min(encoded(long), 213)
        else:
            for long in self._longs[i]:
                total += _cut_length(long, cap)
        return total

    def count(self, cap: int | None, room: int) -> int:
        """How many hits, from the first, fit in `room` with strings cut at `cap`."""
        sizes = self._sizes.setdefault(cap, [])
        used = -1  # n hits take n - 1 commas
        for i in range(len(self.hits)):
            if i == len(sizes):
                sizes.append(self.size(i, cap))
            used += sizes[i] + 1
            if used > room:
                return i
        return len(self.hits)

    def all_fit(self, cap: int | None, room: int) -> bool:
        """Whether every hit fits in `room` with strings cut at `cap`. Whole, a long string
        takes at least its length and quotes: when that is already too much, the strings are
        not read to count their escapes."""
        if cap is None:
            used = -1
            for i in range(len(self.hits)):
                if i >= len(self._skeletons):
                    self._measure(i)
                used += self._skeletons[i] + 1
                for long in self._longs[i]:
                    used += long[1] + 2
                if used > room:
                    return False
        return self.count(cap, room) == len(self.hits)

    def total(self, cap: int) -> int:
        """Characters of all the hits with strings cut at `cap` and the commas between them,
        every hit measured (the search's question, asked of every long string at once)."""
        self._measure(len(self.hits) - 1)
        total = sum(self._skeletons) + len(self.hits) - 1
        for longs in self._longs:
            for long in longs:
                length = long[1]
                if long[2] == length + 2:  # read, and nothing in it escaped: the usual case
                    total += length + 2 if length <= cap else cap + 12 + len(str(length - cap))
                else:
                    total += _cut_length(long, cap)
        return total

    def longest(self) -> int:
        """The length of the longest string a cut can touch, every hit measured."""
        self._measure(len(self.hits) - 1)
        return max((long[1] for longs in self._longs for long in longs), default=0)

    def listed(self, shown: int, cap: int | None) -> int:
        """Characters of the JSON list of the first `shown` hits cut at `cap`."""
        self.count(cap, -1)  # sized, at least the first
        sizes = self._sizes[cap]
        for i in range(len(sizes), shown):
            sizes.append(self.size(i, cap))
        return 1 + sum(sizes[:shown]) + shown + (not shown)

    def paths(self, shown: int, cap: int | None) -> list[str]:
        """The path of each string that cutting the first `shown` hits at `cap` cuts, in order."""
        if cap is None:
            return []
        known = self._paths
        return [path(long, known) for i in range(shown) for long in self._longs[i] if long[1] > cap]

    def cut(self, shown: int, cap: int | None) -> list[Any]:
        """The first `shown` hits with their strings cut at `cap`, as `cut_strings` cuts them
        (copied only on the way to a cut string)."""
        if shown:
            self.size(shown - 1, None)  # measured, so cleaned
        if cap is None:
            return self.hits[:shown]
        kept = []
        for i in range(shown):
            hit = self.hits[i]
            for text, length, _, keys, _ in self._longs[i]:
                if length > cap:
                    hit = put(hit, keys, text[:cap] + marker(length - cap))
            kept.append(hit)
        return kept


def _cut_length(long: Long, cap: int) -> int:
    """Characters of the JSON of a long string cut at `cap` (whole if it is not longer)."""
    text, length, whole = long[0], long[1], long[2]
    if length <= cap:
        return encoded(long)
    if whole < 0 and length <= 4 * cap:  # read it whole once, not a prefix per cap
        whole = encoded(long)
    # nothing escaped in the whole: nor in its prefix; then the marker, `…[+N chars]`
    prefix = cap + 2 if whole == length + 2 else json_length(text[:cap])
    return prefix + 10 + len(str(length - cap))


class Choice(NamedTuple):
    """The hits to show: the first `shown`, strings cut at `cap` (None: whole); or, for the last
    resort, `hits` themselves, with the paths cut in `paths`."""

    shown: int
    cap: int | None
    hits: list[Any] | None = None
    paths: list[str] | None = None

    def size(self, measured: Measured) -> int:
        """Characters of the JSON list of the hits shown."""
        if self.hits is not None:
            return size(self.hits)
        return measured.listed(self.shown, self.cap)

    def build(self, measured: Measured) -> list[Any]:
        """The hits shown."""
        if self.hits is not None:
            return self.hits
        return measured.cut(self.shown, self.cap)

    def paths_cut(self, measured: Measured) -> list[str]:
        """The path of each string cut, in order, without building the hits."""
        if self.hits is not None:
            return self.paths or []
        return measured.paths(self.shown, self.cap)


def choose(measured: Measured, room: int) -> Choice:
    """The hits to show in `room` characters: whole while they fit; else every hit cut to the
    longest length that lets all fit; else as many as fit cut to `MIN_CUT`; and at least the
    first hit, cut shorter still, when even that one does not fit. Only measured: nothing is
    copied until the choice is built."""
    everyone = len(measured.hits)
    if measured.all_fit(None, room):
        return Choice(everyone, None)
    # A cap of `room` or more cuts nothing that could fit: the search stays below it, and never
    # needs the longest string (which would mean measuring every hit of a 1,000-hit answer).
    lo, hi, best, longest = MIN_CUT, max(room, MIN_CUT), None, 0
    if measured.count(0, room) < everyone:
        lo = hi + 1  # not all can fit, whatever the cap: no search (the answer would be None)
    else:
        longest = measured.longest()  # a cap as long cuts nothing: all whole, which do not fit
    while lo <= hi:
        mid = (lo + hi) // 2
        if mid < longest and measured.total(mid) <= room:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return Choice(everyone, best)
    shown = measured.count(MIN_CUT, room)
    if shown or not measured.hits:
        return Choice(shown, MIN_CUT)
    measured.size(0, None)  # cleaned
    for cap in (120, 60, 30):  # a page that shows nothing would leave `next` where it was
        cut: list[str] = []
        first = cut_strings(measured.hits[0], cap, "", cut, IDENTITY)
        if size(first) <= room:
            return Choice(1, cap, [first], cut)
    return Choice(0, 30, [], cut)  # nothing shown; the block still counts what the cut took
