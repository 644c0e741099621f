"""XERJ's built-in lexical embedder and its similarity score, for the stand-in."""

from __future__ import annotations

import math

__all__ = ["DIMS", "cosine_score", "embed"]

DIMS = 384


def _fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _add_feature(acc: list[float], token: bytes, weight: float) -> None:
    h = _fnv1a64(token)
    acc[h % len(acc)] += weight if (h >> 63) & 1 == 0 else -weight


def embed(text: str) -> list[float]:
    """XERJ's built-in lexical embedder, `local_embed` (xerj-ai/src/local.rs:29-107).

    Signed FNV-1a feature hashing of each lower-cased alphanumeric word (weight 1) and of its
    character trigrams padded with ``#`` (weight 0.35), L2-normalised, 384 dims. Computed in
    f64 here, f32 there, so the last digits may differ; the order of neighbours does not.
    """
    acc = [0.0] * DIMS
    word = ""
    for ch in text.lower() + " ":
        if ch.isalnum():
            word += ch
            continue
        if word:
            _add_feature(acc, word.encode(), 1.0)
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                _add_feature(acc, padded[i : i + 3].encode(), 0.35)
            word = ""
    norm = math.sqrt(sum(v * v for v in acc))
    return [round(v / norm, 6) for v in acc] if norm > 0 else acc


def cosine_score(a: list[float], b: list[float]) -> float | None:
    if len(a) != len(b):
        return None  # a vector of another length is skipped, not an error (index.rs:4831, 5526)
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.5
    # `_score` = (1 + cos) / 2 (index.rs:17185, 17212-17226).
    return (1 + sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)) / 2
