"""Fitting any JSON result, or one document, into a room of characters.

The result is rendered with four caps, each loosened as far as the room allows:

1. strings longer than the string cap are cut, marked ``…[+N chars]``;
2. arrays longer than the item cap keep their first items and end with ``"…[+N items]"``;
3. objects wider than the key cap keep their first keys and a key ``"…"`` counting the rest;
4. containers deeper than the depth cap become one line, ``"…[object: N keys: a, b, …]"``.

The caps are tightened in that order, each only when the ones before it at their floor do not
make the result fit; then they are loosened again as far as the room allows, the string cap
first (so that only the longest strings stay cut), then the others. So the structure is kept
breadth first: the top of the result, its long strings shortened and its long arrays reduced,
before anything deep. The ``truncated`` block lists the paths cut (array indices
written ``[]``), how many items and keys were left out where, and what to ask for instead.

A document keeps its metadata (``_index``, ``_id``, ``found``, ``_version``, ...) whole; the
cuts fall on its ``_source``, longest strings first, then largest arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ._fit_hits import cut_strings, marker, size

__all__ = ["NextPage", "fit_document", "fit_json"]

# the arguments that fetch what follows the first n items, or None where the tool cannot page
NextPage = Callable[[int], "Mapping[str, Any] | None"]

STRING_FLOOR = 100  # strings are cut no shorter than this before arrays are touched
_TIGHTEST = 30  # the string cap of the last resort
_LISTED = 10  # paths listed per kind of cut; the counts cover the rest
_RESERVE = 320  # room kept for the `truncated` block while choosing the caps
_PROTECTED = ("ok",)  # the envelope's own key is never cut
DOC_META = ("_index", "_id", "found", "_version", "_seq_no", "_primary_term", "_routing")


@dataclass(frozen=True)
class _Caps:
    string: int | None = None
    items: int | None = None
    keys: int | None = None
    depth: int | None = None


@dataclass
class _Cuts:
    """What one rendering cut, by path, and the shape of what it walked."""

    strings: dict[str, int] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)
    summarised: dict[str, int] = field(default_factory=dict)
    trimmed: list[int] = field(default_factory=list)  # items shown, per array trimmed
    longest: int = 0
    widest: int = 0
    deepest: int = 0

    def any(self) -> bool:
        return bool(self.strings or self.items or self.keys or self.summarised)


def _count(table: dict[str, int], path: str, n: int = 1) -> None:
    table[path] = table.get(path, 0) + n


def _summary(value: dict[str, Any] | list[Any]) -> str:
    if isinstance(value, list):
        return f"…[array: {len(value)} items]"
    names = ", ".join(k if len(k) <= 30 else k[:30] + "…" for k in list(value)[:5])
    return f"…[object: {len(value)} keys: {names}{', …' if len(value) > 5 else ''}]"


class _Render:
    def __init__(self, caps: _Caps, protected: frozenset[str]) -> None:
        self.caps, self.protected, self.cuts = caps, protected, _Cuts()

    def value(self, value: Any, path: str, depth: int) -> Any:
        caps, cuts = self.caps, self.cuts
        if isinstance(value, str):
            if caps.string is not None and len(value) > caps.string:
                _count(cuts.strings, path)
                return value[: caps.string] + marker(len(value) - caps.string)
            return value
        if not isinstance(value, (dict, list)):
            return value
        cuts.deepest = max(cuts.deepest, depth + 1)
        if caps.depth is not None and depth >= caps.depth and value:
            _count(cuts.summarised, path)
            return _summary(value)
        if isinstance(value, list):
            return self._array(value, path, depth)
        return self._object(value, path, depth)

    def _array(self, value: list[Any], path: str, depth: int) -> list[Any]:
        caps, cuts = self.caps, self.cuts
        cuts.longest = max(cuts.longest, len(value))
        shown = value if caps.items is None else value[: caps.items]
        out = [self.value(v, path + "[]", depth + 1) for v in shown]
        if len(shown) < len(value):
            _count(cuts.items, path, len(value) - len(shown))
            cuts.trimmed.append(len(shown))
            out.append(f"…[+{len(value) - len(shown)} items]")
        return out

    def _object(self, value: dict[str, Any], path: str, depth: int) -> dict[str, Any]:
        caps, cuts = self.caps, self.cuts
        cuts.widest = max(cuts.widest, len(value))
        out: dict[str, Any] = {}
        shown = 0
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if child in self.protected:
                out[key] = item
                continue
            if caps.keys is not None and shown >= caps.keys:
                continue
            name = key
            if caps.string is not None and len(key) > max(caps.string, STRING_FLOOR):
                name = key[: caps.string] + "…"  # only a hostile key is this long
            if name in out:
                continue
            out[name] = self.value(item, child, depth + 1)
            shown += 1
        others = len(value) - len(out)
        if others > 0:
            _count(cuts.keys, path or "(top)", others)
            out["…"] = f"+{others} keys"
        return out


def _render(
    payload: Mapping[str, Any], caps: _Caps, protected: frozenset[str]
) -> tuple[Any, _Cuts]:
    render = _Render(caps, protected)
    return render.value(dict(payload), "", 0), render.cuts


def _largest(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest n in [lo, hi] with fits(n), given fits(lo): doubling, then halving, so that
    no probe renders much more than fits."""
    good, step = lo, max(lo, 1)
    while good < hi:
        trial = min(good + step, hi)
        if not fits(trial):
            hi = trial - 1
            break
        good, step = trial, step * 2
    while good < hi:
        mid = (good + hi + 1) // 2
        if fits(mid):
            good = mid
        else:
            hi = mid - 1
    return good


def _choose(payload: Mapping[str, Any], room: int, protected: frozenset[str]) -> _Caps:
    """The loosest caps, tightened in order (strings, items, keys, depth), that fit `room`."""

    def fits(caps: _Caps) -> bool:
        return size(_render(payload, caps, protected)[0]) <= room

    caps = _Caps(string=STRING_FLOOR)
    shape = _render(payload, caps, protected)[1]  # one walk of everything, for the bounds
    tops = {"string": room, "items": shape.longest, "keys": shape.widest, "depth": shape.deepest}
    tightened: list[str] = []
    for name in (None, "items", "keys", "depth"):
        if name is not None:
            caps = replace(caps, **{name: 1})  # the floor of each
            tightened.append(name)
        if fits(caps):
            break
    else:
        return _Caps(string=_TIGHTEST, items=1, keys=1, depth=1)
    # Loosen: strings first (so a string is cut only where it is among the longest), then the
    # others, the last tightened first.
    for name in ["string", *reversed(tightened)]:
        low = getattr(caps, name)
        best = _largest(lambda n: fits(replace(caps, **{name: n})), low, max(low, tops[name]))  # noqa: B023
        caps = replace(caps, **{name: best})
    return caps


def _paths(table: dict[str, int]) -> list[str]:
    return list(table)[:_LISTED]


def _block(cuts: _Cuts, next_page: NextPage | None, hint: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if cuts.strings:
        out["strings_cut"] = sum(cuts.strings.values())
        out["cut_paths"] = _paths(cuts.strings)
    if cuts.items:
        out["items_omitted"] = {p: cuts.items[p] for p in _paths(cuts.items)}
    if cuts.keys:
        out["keys_omitted"] = {p: cuts.keys[p] for p in _paths(cuts.keys)}
    if cuts.summarised:
        out["summarised"] = _paths(cuts.summarised)
    shown = cuts.trimmed[0] if len(cuts.trimmed) == 1 else 0  # one array left short, at `shown`
    if next_page is not None and shown > 0 and (page := next_page(shown)) is not None:
        out["next"] = dict(page)
    out["hint"] = hint + (
        "; call again with the arguments in `next` for the items left out" if "next" in out else ""
    )
    return out


def _fit(
    payload: Mapping[str, Any],
    budget: int,
    protected: frozenset[str],
    hint: str,
    next_page: NextPage | None,
) -> dict[str, Any]:
    prior = payload.get("truncated")
    body = {k: v for k, v in payload.items() if k != "truncated"}
    earlier = {k: v for k, v in prior.items() if k != "hint"} if isinstance(prior, dict) else {}
    reserve = _RESERVE + size(earlier)
    out: dict[str, Any] = {}
    for _ in range(3):
        caps = _choose(body, max(budget - reserve, 0), protected)
        shown, cuts = _render(body, caps, protected)
        if not cuts.any() and not earlier:
            return dict(payload)  # it fits after all (the caller measured a different form)
        block = {**earlier, **_block(cuts, next_page, hint)}
        if isinstance(prior, dict) and isinstance(prior.get("hint"), str):
            block["hint"] = prior["hint"] + "; " + block["hint"]
        out = {**shown, "truncated": block}
        overshoot = size(out) - budget
        if overshoot <= 0:
            return out
        reserve += overshoot
    # The last resort, for an envelope that does not fit even summarised: its own keys, the
    # tightest caps, and the hint alone.
    shown, cuts = _render(body, _Caps(_TIGHTEST, 1, 1, 1), protected)
    out = {**shown, "truncated": {"summarised": ["(everything)"], "hint": hint}}
    if size(out) > budget:
        # Still the protected scalars (a document's `found`: whether it exists at all), a
        # string among them cut with its marker (an `_id` of a megabyte).
        cut: list[str] = []
        out = cut_strings({**_scalars(body, protected), "truncated": {"hint": hint}}, 100, "", cut)
        if cut := [p for p in cut if not p.startswith("truncated")]:
            out["truncated"] = {"cut_paths": cut, "hint": hint}
    return out


def _scalars(body: Mapping[str, Any], protected: frozenset[str]) -> dict[str, Any]:
    """The protected values that are not containers (paths at most two keys long), in order."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key in protected and not isinstance(value, (dict, list)):
            out[key] = value
        elif isinstance(value, dict):
            inner = {
                k: v
                for k, v in value.items()
                if f"{key}.{k}" in protected and not isinstance(v, (dict, list))
            }
            if inner:
                out[key] = inner
    return out


_JSON_HINT = (
    "the result was shortened to fit the message (see the paths above); to read a part whole, "
    "ask for less: a narrower request, fewer fields or a smaller size"
)
_DOCUMENT_HINT = (
    "the document was shortened to fit the message; to read a cut field whole, fetch the "
    "document again with `source` naming only the fields you need"
)


def fit_json(
    payload: Mapping[str, Any], budget: int, *, next_page: NextPage | None = None
) -> dict[str, Any]:
    """`payload` fitted into `budget` characters as any JSON (its `ok` kept).

    `next_page(shown)` gives the arguments that fetch what follows when exactly one array was
    reduced to its first `shown` items, for a tool that pages; None where it does not.
    """
    return _fit(payload, budget, frozenset(_PROTECTED), _JSON_HINT, next_page)


def _document_at(payload: Mapping[str, Any]) -> str | None:
    """Where the document is in the envelope: "" (the envelope itself) or a key, or None."""
    if isinstance(payload.get("_source"), dict) or "found" in payload:
        return ""
    for key in ("document", "result"):
        value = payload.get(key)
        if isinstance(value, dict) and (isinstance(value.get("_source"), dict) or "found" in value):
            return key
    return None


def fit_document(payload: Mapping[str, Any], budget: int) -> dict[str, Any]:
    """`payload` holding one document fitted into `budget` characters: the document's metadata
    whole, its `_source` cut longest strings first, then largest arrays. A payload with no
    document in it is fitted as any JSON."""
    at = _document_at(payload)
    if at is None:
        return fit_json(payload, budget)
    prefix = f"{at}." if at else ""
    protected = frozenset((*_PROTECTED, *(prefix + key for key in DOC_META)))
    return _fit(payload, budget, protected, _DOCUMENT_HINT, None)
