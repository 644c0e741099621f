"""Index expressions and memory namespaces: what a model may put into a URL path segment."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ._validation import Problem

__all__ = ["index_problem", "namespace_problem"]

# memory_api.rs:101-124 `validate_namespace`; used with `fullmatch`.
_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,199}")
_INDEX_FORBIDDEN = set('/\\?#%"<>| ,')


def _bad_character(name: str) -> str | None:
    for ch in name:
        if ch in _INDEX_FORBIDDEN or ch.isspace() or unicodedata.category(ch)[0] == "C":
            return ch
        if not ch.isascii() and (
            unicodedata.category(ch)[0] not in "LN" or unicodedata.normalize("NFKC", ch) != ch
        ):
            # Look-alikes such as FULLWIDTH SOLIDUS or DIVISION SLASH could turn into `/` or
            # `..` in a proxy that normalises Unicode; a real index name never needs them.
            return ch
    return None


def index_problem(value: Any, path: str = "$.index") -> Problem | None:
    """Why `value` cannot be an index expression, or None. Guards the URL path segment."""
    if not isinstance(value, str):
        return None
    if not value:
        return Problem(
            path, "must not be empty; name an index, a comma list or a pattern like logs-*"
        )
    if len(value) > 1024:
        return Problem(path, f"is too long ({len(value)} characters)")
    for position, part in enumerate(value.split(",")):
        if not part:
            return Problem(path, "has an empty name in its comma list")
        if len(part.encode()) > 255:
            return Problem(path, f"index name {part[:40]!r}… is longer than 255 bytes")
        if ".." in part or part in {".", ".."}:
            return Problem(path, f"index name {part!r} must not contain '..'")
        bad = _bad_character(part)
        if bad is not None:
            return Problem(
                path,
                f"index name {part!r} contains {bad!r} (U+{ord(bad):04X}); index names have no "
                "'/', '\\', '?', '#', '%', spaces, quotes or control characters",
            )
        if part.startswith("_") and part != "_all":
            return Problem(path, f"index name {part!r} must not start with '_' (only _all may)")
        if part.startswith("+") or (part.startswith("-") and position == 0):
            return Problem(path, f"index name {part!r} must not start with {part[0]!r}")
    return None


def namespace_problem(value: Any, path: str = "$.namespace") -> Problem | None:
    """Why `value` cannot be a memory namespace (memory_api.rs:101-124), or None."""
    if not isinstance(value, str):
        return None
    if not _NAMESPACE.fullmatch(value):  # not `match`: `$` also matches before a final "\n"
        return Problem(
            path,
            f"invalid namespace {value[:60]!r}: 1-200 characters from a-z 0-9 _ - ., "
            "starting with a letter or digit",
        )
    if ".." in value:
        return Problem(path, f"invalid namespace {value!r}: must not contain '..'")
    if value.endswith("-edges"):
        return Problem(path, f"invalid namespace {value!r}: names ending in -edges are reserved")
    return None
