"""The quick decode of a model's `arguments` text: one mask and orjson, for the text
that needs none of `_bounds`' and `_json`'s slower guards.

`quick_object(text)` returns the decoded object only where the full decode
(`_validation.decode_arguments` and its bounds walk) would return the same dict with no
problem; else None, and the full decode runs and says what it finds. What the full decode guards
against, and how it is ruled out here:

- depth past `MAX_ARGUMENT_DEPTH`: at most that many ``{`` and ``[`` in the text (a count);
- an integer of 19 digits or more (orjson reads one past 64 bits as a float, `json` keeps an
  int): no run of 19 digits (signs counted as digits, so a run across a sign is refused too);
- NaN, Infinity, a number past a double's range, a lone surrogate (raw: the text does not encode;
  escaped: orjson refuses it), a BOM, blank text, text that is not JSON: orjson refuses each;
- text longer than 4,096 characters, which the full path walks: not looked at here.

The dispatcher's validation (`validate_arguments`) uses it; the offline lane (`_offline._lane`)
decodes as it does, inline (`quick_bounds` too, for the arguments' text), and asks
`quick_bounds` of a whole record whose arguments are an object already (an Anthropic ``input``,
a Gemini ``args``).
"""

from __future__ import annotations

from typing import Any

from .. import _json
from .._bounds import MAX_ARGUMENT_DEPTH

__all__ = ["MAX_QUICK", "quick_bounds", "quick_object"]  # `_lane` inlines them: _MASK, _LONG

MAX_QUICK = 4096  # `_validation`: longer text is walked for its numbers and strings

# Digits and signs to 0, `{` and `[` to `{`, anything else a space: then one count bounds the
# depth and one search finds a long digit run.
_MASK = bytes(
    48 if 48 <= i <= 57 or i in (43, 45) else 123 if i in (91, 123) else 32 for i in range(256)
)
_LONG = b"0" * 19


def quick_bounds(raw: bytes) -> bool:
    """True where no value in the UTF-8 JSON text `raw` can break a bound once orjson has read
    it: at most `MAX_ARGUMENT_DEPTH` brackets, no run of 19 digits."""
    masked = raw.translate(_MASK)
    # the count first: cheaper than the search
    return masked.count(b"{") <= MAX_ARGUMENT_DEPTH and not (
        masked.count(b"0") >= 19 and _LONG in masked
    )


def quick_object(text: str) -> dict[str, Any] | None:
    """The JSON object `text` holds, where orjson reads it exactly as the full decode does and
    no bound can be broken; else None (the full decode decides)."""
    orjson = _json._orjson if _json._orjson is not None else _json._load()
    if not orjson or len(text) > MAX_QUICK:
        return None
    try:
        raw = text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return None
    if not quick_bounds(raw):
        return None
    try:
        value = orjson.loads(raw)
    except ValueError:
        return None
    return value if type(value) is dict else None
