"""A budget in tokens: an estimate of what a text costs a model, and the character room it buys.

The model pays tokens, not characters, and the two differ by kind of text: prose runs near four
characters a token, numbers and JSON punctuation near two (an embedding printed as
``0.05123456567525864,`` costs about nine tokens for its twenty characters). `estimate_tokens`
is a heuristic, not a tokenizer: it counts letters, digits and punctuation apart, each at the
rate BPE tokenizers of the GPT-4o family (o200k, cl100k) show on English and on JSON numbers,
and rounds up. It errs high rather than low, so a message fitted to N estimated tokens stays
within N real ones on ordinary text. For an exact count pass a tokenizer's counter as
``Budget(tokens=..., count=...)``, e.g. ``lambda s: len(tiktoken.get_encoding("o200k_base")
.encode(s))`` -- the dispatcher never loads one itself, since loading an encoding may download
it on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Budget", "estimate_tokens"]

_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"[0-9]+")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]+")
_SPACES = re.compile(r"\s{2,}|[^\S ]")  # a single space rides with the next word, for free
_OTHER = re.compile(r"[^\x00-\x7f]")


def _runs(pattern: re.Pattern[str], text: str) -> tuple[int, int]:
    found = pattern.findall(text)
    return sum(map(len, found)), len(found)


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` costs: letters at 4 a token, digits at 3 (tokenizers split
    numbers in groups of three), punctuation at 2, each run rounded up on average; each run of
    whitespace other than one space, and each non-ASCII character, one token."""
    letters, words = _runs(_LETTERS, text)
    digits, numbers = _runs(_DIGITS, text)
    punct, marks = _runs(_PUNCT, text)
    spaces = len(_SPACES.findall(text))
    other = len(_OTHER.findall(text)) if not text.isascii() else 0
    estimate = (letters + 1.5 * words) / 4 + (digits + numbers) / 3 + (punct + 0.5 * marks) / 2
    return int(estimate + 0.999) + spaces + other


@dataclass(frozen=True)
class Budget:
    """A tool message's budget in characters or in tokens (one of the two).

    ``Budget(tokens=3000)`` fits each message into about 3,000 tokens as `count` measures them
    (by default `estimate_tokens`, an estimate): the fitter works in characters, so the token
    room is turned into characters at the rate of the message at hand, and the message is fitted
    again, smaller, if it still counts more tokens than allowed. ``Budget(chars=12000)`` is the
    same as ``budget=12000``.
    """

    chars: int | None = None
    tokens: int | None = None
    count: Callable[[str], int] = field(default=estimate_tokens, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.chars is None) == (self.tokens is None):
            raise ValueError("a Budget has either chars or tokens")
