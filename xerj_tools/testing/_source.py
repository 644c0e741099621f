"""The stand-in's `_source` handling: which hits XERJ filters, and how it filters them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._engine import Index

__all__ = ["source_filter", "unfiltered_ids"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def source_filter(source: Mapping[str, Any], spec: Any) -> dict[str, Any] | None:
    """XERJ's `_source` filter on the general search path; None means no `_source` at all.

    Forms (es_compat.rs:4556-4607 at e6e8e6a): bool, "true"/"false", "a,b" (split, trimmed),
    an array of names, or {includes|include, excludes|exclude}. Matching follows
    index.rs:15672-15832 `apply_source_filter`/`filter_object`: when no pattern has a dot, a
    `*` is a trailing wildcard only (`field_matches`), so `*_vector` matches nothing; with a
    dotted pattern, paths are globbed segment by segment. kNN and `semantic` searches never
    call this (see `_searcher`).
    """
    if spec is None or spec is True or spec == "true":
        return dict(source)
    if spec is False or spec == "false":
        return None
    includes: list[str] = []
    excludes: list[str] = []
    if isinstance(spec, str):
        includes = [s.strip() for s in spec.split(",")]
    elif isinstance(spec, list):
        includes = _strings(spec)
    elif isinstance(spec, Mapping):
        includes = _strings(spec.get("includes", spec.get("include")))
        excludes = _strings(spec.get("excludes", spec.get("exclude")))
    else:
        return dict(source)
    if not any("." in p for p in (*includes, *excludes)):
        return {
            k: v for k, v in source.items()
            if (not includes or any(_field_matches(k, p) for p in includes))
            and not any(_field_matches(k, p) for p in excludes)
        }  # fmt: skip
    filtered = _filter_paths(source, "", includes, excludes)
    return filtered if isinstance(filtered, dict) else {}


def _field_matches(name: str, pattern: str) -> bool:
    # index.rs:15826-15832: a trailing `*` is a prefix match; anything else compares literally.
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def _glob_segment(pattern: str, path: str) -> bool:
    # index.rs:15737-15771: `*` matches any run of characters except `.`.
    if not pattern:
        return not path
    if pattern[0] == "*":
        for end in range(len(path) + 1):
            if end > 0 and path[end - 1] == ".":
                break
            if _glob_segment(pattern[1:], path[end:]):
                return True
        return False
    return bool(path) and pattern[0] == path[0] and _glob_segment(pattern[1:], path[1:])


def _matches_path(path: str, patterns: list[str]) -> bool:
    # index.rs:15772-15778
    for p in patterns:
        if "*" in p:
            if _glob_segment(p, path) or (p.endswith(".*") and path.startswith(p[:-2])):
                return True
        elif path == p or path.startswith(p + "."):
            return True
    return False


def _filter_paths(value: Any, prefix: str, includes: list[str], excludes: list[str]) -> Any:
    # index.rs:15781-15822 `collect_and_filter`: an emptied nested object disappears, and so
    # does a null leaf (`filtered.is_null()`).
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        path = f"{prefix}.{k}" if prefix else k
        keep = (
            not includes
            or _matches_path(path, includes)
            or any(i.startswith(path + ".") for i in includes)
        )
        if keep and not _matches_path(path, excludes):
            filtered = _filter_paths(v, path, includes, excludes)
            if filtered is not None:
                out[k] = filtered
    return None if not out and prefix else out


_VECTOR_KINDS = ("semantic", "knn")


def _kind(query: Any) -> str | None:
    return next(iter(query)) if isinstance(query, Mapping) and len(query) == 1 else None


def unfiltered_ids(
    index: Index, body: Mapping[str, Any], ranked: Callable[[Index, Any], list[tuple[float, str]]]
) -> set[str]:
    """Ids of the hits whose `_source` XERJ returns unfiltered; `ranked` gives a hybrid arm's
    hits, as many as the engine fetches for it.

    A top-level `knn` and a `semantic` query return from `search_inner` before the only
    `apply_source_filter` call (index.rs:6690-6726, 6786-6787, 9930 at e6e8e6a): no hit is
    filtered. A hybrid runs each sub-query as its own search with the same `_source`
    (index.rs:5364), so text sub-queries filter and vector ones do not, and fusion keeps the hit
    from the first list that found it (index.rs:17490-17513).
    """
    query = body.get("query")
    # A top-level `knn` beside a `query` is a `bool.should` (es_compat.rs:5884-5893), which the
    # short-circuits do not peel (index.rs:17397-17405): it takes the filtered path.
    pure_knn = body.get("knn") is not None and query is None
    if pure_knn or _kind(query) in _VECTOR_KINDS:
        return set(index.docs)
    hybrid = query.get("hybrid") if isinstance(query, Mapping) else None
    if _kind(query) != "hybrid" or not isinstance(hybrid, Mapping):
        return set()
    seen: set[str] = set()
    unfiltered: set[str] = set()
    for sub in hybrid.get("queries") or []:
        for _, doc_id in ranked(index, sub["query"]):  # each arm's max(50, from + size) hits
            if doc_id not in seen:
                seen.add(doc_id)
                if _kind(sub["query"]) in _VECTOR_KINDS:
                    unfiltered.add(doc_id)
    return unfiltered
