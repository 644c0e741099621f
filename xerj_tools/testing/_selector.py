"""Which indices a search selector reads, as XERJ resolves it; the 404 and closed-index bodies.

Citations are XERJ paths at commit e6e8e6a (``engine/crates/…``); ``CONTRACT.md`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ._engine import Index, Result

__all__ = ["closed_index", "expand", "get_index", "glob_match_simple", "index_not_found", "select"]


def glob_match_simple(pattern: str, name: str) -> bool:
    """`glob_match_simple` (es_compat.rs:16552-16563): `*`, `prefix*`, `*suffix`, or literal."""
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return name.endswith(pattern[1:])
    return pattern == name


def expand(parts: list[str], names: list[str]) -> list[str]:
    """The names a selector's parts stand for, in order, each once: `_all` is every one of
    `names`, a part with a `*` those it globs, any other part itself, whether or not it exists."""
    out: list[str] = []
    for part in parts:
        if part == "_all" or "*" in part:
            found = [n for n in names if part == "_all" or glob_match_simple(part, n)]
        else:
            found = [part]
        out += [n for n in found if n not in out]
    return out


def get_index(
    indices: Mapping[str, Index], aliases: Mapping[str, Sequence[str]], name: str
) -> Index | None:
    """`Engine::get_index` (engine.rs:956-967): an alias is read as its *first* backing index
    only; else the index of that exact name."""
    behind = aliases.get(name)
    if behind:
        return indices.get(behind[0])
    return indices.get(name)


def select(
    indices: Mapping[str, Index],
    expr: str,
    closed: frozenset[str],
    aliases: Mapping[str, Sequence[str]],
) -> list[Index]:
    """The indices a selector names (es_compat.rs:5620-5652, 7366-7387).

    Patterns are expanded over index names only, never aliases (es_compat.rs:5626-5652). Each
    name is read through `get_index` (es_compat.rs:7378-7379): an alias reads its first backing
    index, and its hits carry the alias's name, as requested (es_compat.rs:7512, 10149-10150).
    A ``-name`` is no exclusion: a literal name, missing (es_compat.rs:5620-5652).

    A closed index named outright is a 400 `index_closed_exception`; one a wildcard reached is
    dropped (es_compat.rs:5700-5730, the body 27460-27477). This comes before any 404.

    Every index is listed for `*`/`_all`, memory namespaces' ``.xerj-memory-*`` included
    (engine.rs:1036-1048). A selector with a wildcard anywhere skips a missing name (the
    `allow_no_indices` default); otherwise a missing name is a decorated 404 (error.rs:181-232).
    """
    parts = [p.strip() for p in expr.split(",")]
    tolerant = any(p == "_all" or "*" in p for p in parts)
    names = expand(parts, sorted(indices))
    for name in [n for n in names if n in closed]:
        if name in parts:
            raise _NotFound(closed_index(name)[1])
        names.remove(name)
    chosen: list[Index] = []
    for name in names:
        read = get_index(indices, aliases, name)
        if read is not None:
            chosen.append(read if read.name == name else replace(read, name=name))
        elif not tolerant:
            raise _NotFound(index_not_found(name))
    return chosen


def index_not_found(name: str) -> dict[str, Any]:
    """The 404 body for a missing index, decorated as ES does (api error.rs:181-232)."""
    error = {
        "type": "index_not_found_exception",
        "reason": f"no such index [{name}]",
        "resource.type": "index_or_alias",
        "resource.id": name,
        "index_uuid": "_na_",
        "index": name,
    }
    return {"error": {"root_cause": [dict(error)], **error}, "status": 404}


def closed_index(name: str) -> Result:
    """`closed_index_error` (es_compat.rs:27460-27477): 400, reason `closed`, the index named."""
    error = {"type": "index_closed_exception", "reason": "closed"}
    return 400, {"error": {"root_cause": [dict(error)], **error, "index": name}, "status": 400}


class _NotFound(Exception):
    """The selector names an index it may not search: missing (404) or closed (400)."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("not found")
        self.status, self.body = int(body["status"]), body
