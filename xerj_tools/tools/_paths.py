"""What a model may put into a URL path segment: index expressions, memory namespaces, document
ids; and how a value becomes one segment."""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any
from urllib.parse import quote, unquote

from .._exceptions import ArgumentsError
from .._problems import Problem

__all__ = [
    "MAX_ID_BYTES",
    "MAX_ID_URL",
    "QUICK_ID_CHARS",
    "document_id_problem",
    "dot_segment",
    "index_problem",
    "namespace_problem",
    "segment",
]

_DOT_SEGMENTS = frozenset({".", ".."})


def dot_segment(path: str) -> str | None:
    """The first segment of `path` that is ``.`` or ``..`` (also percent-encoded), or None.

    httpx2 resolves such segments before sending (RFC 3986 dot-segment removal: ``/a/../b`` is
    sent as ``/b``), and a server may decode ``%2e%2e`` into one: either way the request would
    reach another endpoint than the one built. No XERJ name is ``.`` or ``..``.
    """
    for part in path.split("/"):
        if unquote(part) in _DOT_SEGMENTS:
            return part
    return None


def segment(value: str, *, keep: str = "", path: str = "$") -> str:
    """`value` as one path segment. Everything but unreserved characters is percent-encoded, so
    no value can leave its segment (an index list keeps its commas and wildcards via `keep`).
    `.` and `..` are unreserved, so they are refused here rather than let httpx2 resolve them."""
    if value in _DOT_SEGMENTS:
        raise ArgumentsError(
            f"{value!r} cannot be a path segment",
            problems=(
                Problem(path, f"{value!r} is not a name: it would be read as a relative path"),
            ),
        )
    return quote(value, safe=keep)


# memory_api.rs:101-124 `validate_namespace`; used with `fullmatch`.
_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,199}")
_INDEX_FORBIDDEN = set('/\\?#%"<>| ,')


def _bad_character(name: str) -> str | None:
    if name.isascii() and name.isprintable() and _INDEX_FORBIDDEN.isdisjoint(name):
        return None  # the usual name, decided in C: no control character, no space, none above
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
    if len(value) <= 256:  # the same few names come again and again: each is judged once
        return _index_problem_of(value, path)
    return _index_problem(value, path)


def namespace_problem(value: Any, path: str = "$.namespace") -> Problem | None:
    """Why `value` cannot be a memory namespace (memory_api.rs:101-124), or None."""
    if not isinstance(value, str):
        return None
    if len(value) <= 256:
        return _namespace_problem_of(value, path)
    return _namespace_problem(value, path)


def _index_problem(value: str, path: str) -> Problem | None:
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


def _namespace_problem(value: str, path: str) -> Problem | None:
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


MAX_ID_BYTES = 65_535
"""The longest document id XERJ keeps, in UTF-8 bytes. Its REST layer checks no length
(`index_doc`, `get_doc`: es_compat.rs:1740-1760, 1972-2008 at e6e8e6a); its ids sidecar and
tombstones write an id's length as a 16-bit number (`id.len() as u16`: xerj-storage
index_store.rs:945, segment.rs:157), so this is the longest id that survives there."""

MAX_ID_URL = 60_000
"""The longest document id sent, percent-encoded, in characters: the request line must stay
within httpx's 65,536 characters (a longer URL raises `InvalidURL`), with room for the index and
the rest of the path. An id of ASCII letters and digits may be 60,000 bytes long; one of
multi-byte characters, 20,000 bytes."""

QUICK_ID_CHARS = MAX_ID_URL // 12
"""An id of at most this many characters is within both bounds whatever its characters (four
UTF-8 bytes each at most, each written as three URL characters): the quick paths test this."""


def document_id_problem(value: Any, path: str = "$.id") -> Problem | None:
    """Why `value` cannot be a document id in ``/{index}/_doc/{id}``, or None. Any non-empty
    text within `MAX_ID_BYTES` and `MAX_ID_URL` is sent percent-encoded as one segment, except
    ``.`` and ``..`` (see `dot_segment`)."""
    if not isinstance(value, str):
        return None
    if not value:
        return Problem(path, "must not be empty; give the document's _id")
    if len(value) > QUICK_ID_CHARS:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_ID_BYTES:
            return Problem(
                path,
                f"is {size} bytes long; a XERJ document id is at most {MAX_ID_BYTES} bytes (UTF-8)",
            )
        if (sent := len(quote(value, safe="", errors="surrogatepass"))) > MAX_ID_URL:
            return Problem(
                path,
                f"is {sent} characters once percent-encoded for the URL; at most {MAX_ID_URL} "
                "fit in a request (fewer non-ASCII characters, or fetch it with xerj_search and "
                "an `ids` query)",
            )
    if value in _DOT_SEGMENTS:
        return Problem(path, f"{value!r} is not a document id: it would be read as a relative path")
    return None


# Bounded caches of the verdicts (a `Problem` is immutable, so one can be handed out many times).
_index_problem_of = functools.lru_cache(maxsize=4096)(_index_problem)
_namespace_problem_of = functools.lru_cache(maxsize=4096)(_namespace_problem)
