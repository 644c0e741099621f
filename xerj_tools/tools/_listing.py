"""The index list an `index_not_found` answer carries: which request, how to read it, a cache.

XERJ (1.0.0-rc.4, engine/crates/xerj-api/src) serves two listings:

- ``GET /_resolve/index/*`` (router.rs:353, es_compat.rs:15816-15863) answers JSON
  ``{"indices": [{"name", "attributes"}], "aliases": [{"name", "indices"}], "data_streams": []}``
  from the engine's in-memory index map. It is asked first.
- ``GET /_cat/indices`` (router.rs:216, es_compat.rs:393-488) takes no query parameters:
  ``format=json`` is ignored and the answer is always ``text/plain`` lines
  ``green open <name> <uuid> 1 0 <docs> 0 <size> <size> <size>`` (es_compat.rs:447-486). It
  sums every index's data directory on disk for the size columns (es_compat.rs:448-457), so it
  is only the fallback, for a node without ``_resolve``. Its third column is the name, as
  XERJ's own client reads it (xerj-autoindex/src/esclient.rs:212-241).

Either listing is kept for `LISTING_TTL` seconds per cluster, so a model that keeps guessing
names costs one listing, not one per typo. It is never retried, and when both requests fail the
message goes without it. The dispatcher resolves every index expression of a call against it
before sending (`xerj_tools._dispatch._index_guard`): a name it does not know makes it read the
listing again at once (`read_listing(..., fresh=True)`), so an alias made after it was cached is
seen before anything is sent. Only ``_resolve`` names aliases; a listing read from
``_cat/indices`` says so (`Listing.knows_aliases` False).

XERJ keeps a data stream as an alias of the stream's name over its backing indices
``.ds-<name>-000001``, ``-000002``… oldest first, a rollover appending the next
(xerj-engine engine.rs:1165-1184, 1199-1210); ``_resolve`` never fills ``data_streams``
(es_compat.rs:15860). `Listing.streams` recognises them by that shape.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .._http._models import HttpRequest, Outcome, Reply
from .._message._format import invalid

__all__ = [
    "CAT_INDICES",
    "LISTING_TTL",
    "RESOLVE_ALL",
    "IndexListing",
    "Listing",
    "alias_targets",
    "aliases_by_index",
    "fetch_listing",
    "is_stream",
    "names_only",
    "read_listing",
    "streams_in",
]

LISTING_TTL = 30.0
"""Seconds a cluster's index list is reused; an index created meanwhile shows up after that."""

RESOLVE_ALL = HttpRequest(
    "GET", "/_resolve/index/*", None, kind="listing", template="/_resolve/index/*"
)
CAT_INDICES = HttpRequest("GET", "/_cat/indices", None, kind="listing", template="/_cat/indices")


def _names(values: Any) -> list[str]:
    if not isinstance(values, list):
        return []
    return [
        row["name"] for row in values if isinstance(row, dict) and isinstance(row.get("name"), str)
    ]


_BACKING = re.compile(r"\.ds-(.+)-\d{6,}")


@dataclass(frozen=True)
class Listing:
    """A cluster's indices, and its aliases with the indices behind each (``_resolve`` only:
    `knows_aliases` is False for a listing read from ``_cat/indices``)."""

    indices: tuple[str, ...]
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    knows_aliases: bool = True

    @cached_property
    def index_set(self) -> frozenset[str]:
        """`indices`, for lookups."""
        return frozenset(self.indices)

    def stream(self, alias: str) -> bool:
        """Whether alias `alias` is a data stream (`is_stream`)."""
        return is_stream(alias, self.aliases.get(alias, ()))


def is_stream(alias: str, behind: Sequence[Any]) -> bool:
    """Whether alias `alias` over `behind` is a data stream: every index behind it is named
    ``.ds-<alias>-NNNNNN`` (engine.rs:1171, 1194), which only a stream's creation and rollover
    make."""
    return bool(behind) and all(
        isinstance(name, str)
        and (m := _BACKING.fullmatch(name)) is not None
        and m.group(1) == alias
        for name in behind
    )


def listing_from_resolve(outcome: Outcome) -> Listing | None:
    """The listing in a ``_resolve/index`` answer (es_compat.rs:15816-15863: each alias with its
    backing ``indices``, 15839-15855), or None when it is not one."""
    if names_from_resolve(outcome) is None:
        return None
    assert isinstance(outcome, Reply)
    data = outcome.data
    aliases: dict[str, tuple[str, ...]] = {}
    for row in data.get("aliases") if isinstance(data.get("aliases"), list) else ():
        if isinstance(row, dict) and isinstance(row.get("name"), str):
            backing = row.get("indices")
            targets = backing if isinstance(backing, list) else [backing]
            aliases[row["name"]] = tuple(t if isinstance(t, str) else "" for t in targets)
    return Listing(tuple(sorted(set(_names(data["indices"])))), aliases)


def names_only(reply: Reply, pattern: str, matches: Callable[[str, str], bool]) -> dict[str, Any]:
    """`xerj_list_indices` with `counts: false`: the indices `pattern` names, read from a
    ``_resolve/index/*`` answer (from memory; `_cat/indices` sums every listed index's files on
    disk, es_compat.rs:448-457), with their aliases; `missing`, the exact names that are no
    index (where `_cat/indices/{pattern}` would answer 404, es_compat.rs:418-429)."""
    listing = listing_from_resolve(reply)
    if listing is None:
        raise invalid(reply, "the JSON of `_resolve/index`")
    parts = [p.strip() for p in pattern.split(",") if p.strip()] or ["*"]
    rows = [{"name": n} for n in listing.indices if any(matches(p, n) for p in parts)]
    # the answer itself goes on to the listing's after-step, which reads aliases and streams in it
    out: dict[str, Any] = {"ok": True, "indices": rows, "_pattern": pattern, "_resolved": reply}
    exact = [p for p in parts if p != "_all" and "*" not in p and p not in listing.indices]
    if exact:
        out["missing"] = exact
    return out


def names_from_resolve(outcome: Outcome) -> list[str] | None:
    """Index and alias names from a ``_resolve/index`` answer, or None when it is not one."""
    if not isinstance(outcome, Reply) or outcome.status != 200:
        return None
    data = outcome.data
    if not isinstance(data, dict) or not isinstance(data.get("indices"), list):
        return None
    return sorted({*_names(data["indices"]), *_names(data.get("aliases"))})


def names_from_cat(outcome: Outcome) -> list[str] | None:
    """Index names from a ``_cat/indices`` text table (column 3), or None when it is not one."""
    if not isinstance(outcome, Reply) or outcome.status != 200:
        return None
    if isinstance(outcome.data, (dict, list)):
        return None  # not XERJ's table (a proxy's error page in JSON, say)
    text = outcome.body.decode("utf-8", "replace")
    names = set()
    for line in text.splitlines():
        columns = line.split()
        # XERJ's rows start with the health column; anything else (a proxy's HTML page) is not one
        if len(columns) >= 3 and columns[0] in ("green", "yellow", "red"):
            names.add(columns[2])
    return sorted(names)


class IndexListing:
    """Per cluster: the listing last read, forgotten after `ttl` seconds."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._ttl, self._clock = ttl, clock
        self._entries: dict[str, tuple[float, Listing]] = {}
        self._lock = threading.Lock()

    def get(self, cluster: str) -> Listing | None:
        with self._lock:
            entry = self._entries.get(cluster)
            if entry is None or self._clock() - entry[0] >= self._ttl:
                self._entries.pop(cluster, None)
                return None
            return entry[1]

    def put(self, cluster: str, listing: Listing) -> None:
        if self._ttl > 0:
            with self._lock:
                self._entries[cluster] = (self._clock(), listing)


def fetch_listing(
    cache: IndexListing, cluster: str, *, fresh: bool = False
) -> Generator[HttpRequest, tuple[Outcome, int], Listing | Outcome]:
    """Yield the listing requests still needed; return the listing, or the ``_resolve``
    outcome when none could be read. `fresh`: read it again even when one is cached."""
    listing = None if fresh else cache.get(cluster)
    if listing is not None:
        return listing
    first, _ = yield RESOLVE_ALL
    listing = listing_from_resolve(first)
    if listing is None:
        outcome, _ = yield CAT_INDICES
        names = names_from_cat(outcome)
        if names is None:
            return first
        listing = Listing(tuple(names), knows_aliases=False)
    cache.put(cluster, listing)
    return listing


def read_listing(
    cache: IndexListing, cluster: str, *, fresh: bool = False
) -> Generator[HttpRequest, tuple[Outcome, int], Listing | None]:
    """Yield the listing requests still needed; return the listing, or None when none was read.
    `fresh`: read it again even when one is cached."""
    got = yield from fetch_listing(cache, cluster, fresh=fresh)
    return got if isinstance(got, Listing) else None


def aliases_by_index(outcome: Any) -> dict[str, list[str]] | None:
    """Each index's aliases in a ``_resolve/index`` answer, or None when it is not one."""
    data = outcome.data if isinstance(outcome, Reply) and outcome.status == 200 else None
    if not isinstance(data, dict) or not isinstance(data.get("aliases"), list):
        return None
    out: dict[str, list[str]] = {}
    for alias in data["aliases"]:
        if isinstance(alias, dict) and isinstance(name := alias.get("name"), str):
            for index in alias.get("indices") or ():
                if isinstance(index, str):
                    out.setdefault(index, []).append(name)
    return out


def streams_in(outcome: Any) -> dict[str, list[str]]:
    """Data streams in a ``_resolve`` answer: aliases whose every index is ``.ds-<alias>-N``."""
    data = outcome.data if isinstance(outcome, Reply) and outcome.status == 200 else None
    out: dict[str, list[str]] = {}
    for alias in data.get("aliases") or () if isinstance(data, dict) else ():
        if not isinstance(alias, dict) or not isinstance(name := alias.get("name"), str):
            continue
        behind = alias.get("indices")
        if isinstance(behind, list) and is_stream(name, behind):
            out[name] = list(behind)
    return out


def alias_targets(outcome: Any) -> dict[str, list[str]]:
    """Each alias's indices in a ``_resolve/index`` answer (`[""]` where they are unreadable)."""
    data = outcome.data if isinstance(outcome, Reply) and outcome.status == 200 else None
    out: dict[str, list[str]] = {}
    for alias in data.get("aliases") or () if isinstance(data, dict) else ():
        if isinstance(alias, dict) and isinstance(name := alias.get("name"), str):
            behind = alias.get("indices")
            out[name] = (
                [b if isinstance(b, str) else "" for b in behind or ()]
                if isinstance(behind, list)
                else [""]
            )
    return out
