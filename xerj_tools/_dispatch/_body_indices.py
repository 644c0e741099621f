"""Indices a query names inside its body, beside the one in the URL path.

Elasticsearch's query language has a few clauses that read a document from an index of their
own. What XERJ does with each, at e6e8e6a:

- terms lookup, ``{"terms": {"<field>": {"index": I, "id": D, "path": P}}}``: honoured. Before
  parsing, `resolve_terms_lookups` finds every ``terms`` key anywhere in the query *and in the
  aggregations* and fetches ``I/D`` with ``state.engine.get_index`` — no check of who may read
  ``I`` (engine/crates/xerj-api/src/es_compat.rs:3229-3299, called at 6262-6273; `_count` at
  13060). A model could turn any index, a memory index among them, into search terms.
- ``more_like_this`` ``like``/``unlike`` entries ``{"_index", "_id"}``: ignored today, only
  strings and inline ``doc`` objects are read (engine/crates/xerj-query/src/parser.rs:2932-2958).
- ``percolate`` with ``index``/``id``: refused with a 400 (parser.rs:3037-3063).
- ``geo_shape`` (and ``shape``) ``indexed_shape``: refused, only inline ``shape`` is read
  (parser.rs:3381-3384).
- ``pinned`` ``docs`` with ``_index``: not parsed, only ``ids`` (parser.rs:3073-3099).
- ``wrapper``: a base64-encoded query, decoded and parsed (parser.rs:3106-3130). Its content
  cannot be checked here without decoding it, so it is refused outright.

Every one of them is checked against the policy, honoured today or not, so that a later XERJ
that honours more of them does not widen what a model can read. In the same spirit, a key is
matched whatever its case (XERJ reads ``"index"`` only: es_compat.rs:3274), and a ``terms``
object whose ``"index"`` is one string, which XERJ reads as no lookup (es_compat.rs:3263-3285;
a ``terms`` aggregation has no such option either), is checked as naming that index.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._problems import json_path

__all__ = ["WRAPPER", "may_name_indices", "named_indices", "named_places", "renamed"]

WRAPPER = object()
"""Stands for the index of a ``wrapper`` query: unknown, so never allowed."""


_LEAVES = frozenset({str, int, float, bool, type(None)})
# The clauses that can name an index (see the module docstring).
_CLAUSES = frozenset(
    {"terms", "more_like_this", "percolate", "geo_shape", "shape", "pinned", "wrapper"}
)


def _keyed(spec: Mapping[Any, Any], name: str) -> Iterator[tuple[str, Any]]:
    """(key, value) for each key of `spec` that reads `name` whatever its case."""
    for key, value in spec.items():
        if isinstance(key, str) and key.casefold() == name:
            yield key, value


def _entries(value: Any, key: str) -> Iterator[tuple[list[str | int], Any]]:
    """``{"_index": …}`` entries under `key`, given as one object or a list of them."""
    if isinstance(value, Mapping):
        yield [key], value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield [key, i], item


def _named_here(key: str, value: Any) -> Iterator[tuple[list[str | int], Any]]:
    """(path below `key`, the index named) for the clause ``{key: value}``."""
    if key == "wrapper":
        yield [], WRAPPER
    if not isinstance(value, Mapping):
        return
    if key == "terms":
        for field, spec in value.items():
            if isinstance(spec, Mapping):
                for name, named in _keyed(spec, "index"):
                    yield [field, name], named
            elif isinstance(spec, str) and isinstance(field, str) and field.casefold() == "index":
                yield [field], spec
    elif key == "more_like_this":
        for side in ("like", "unlike"):
            for path, entry in _entries(value.get(side), side):
                if isinstance(entry, Mapping):
                    for name, named in _keyed(entry, "_index"):
                        yield [*path, name], named
    elif key == "percolate":
        for name, named in _keyed(value, "index"):
            yield [name], named
    elif key in ("geo_shape", "shape"):
        for field, spec in value.items():
            shape = spec.get("indexed_shape") if isinstance(spec, Mapping) else None
            if isinstance(shape, Mapping):
                for name, named in _keyed(shape, "index"):
                    yield [field, "indexed_shape", name], named
    elif key == "pinned":
        for path, entry in _entries(value.get("docs"), "docs"):
            if isinstance(entry, Mapping):
                for name, named in _keyed(entry, "_index"):
                    yield [*path, name], named


def may_name_indices(raw: object, arguments: Mapping[str, Any]) -> bool:
    """False only when `raw`, the JSON text `arguments` were decoded from, cannot name an index
    in its body. Every clause above names one under a key ``"index"`` or ``"_index"``, or is a
    ``"wrapper"`` (in any case, as `_named_here` reads them); so the text needs one of those
    beyond the URL's own ``"index"``. A backslash always counts: an escape could spell a key,
    and a JSON string that a repair decodes has its quotes escaped."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str) or "\\" in raw:
        return True
    text = raw.casefold()
    if '"_index"' in text or '"wrapper"' in text:
        return True
    return text.count('"index"') > ("index" in arguments)


def _keys(entry: _Entry, *below: str | int) -> tuple[str | int, ...]:
    parts: list[str | int] = list(reversed(below))
    node: _Entry | None = entry
    while node is not None:
        parts.append(node[2])
        node = node[1]
    return tuple(reversed(parts))


_Entry = tuple[Any, "_Entry | None", "str | int"]  # (value, its parent's entry, key in parent)


def named_indices(arguments: Mapping[str, Any], skip: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """(JSON path, what is named there) for each index the arguments name inside a query (see
    `named_places`)."""
    for keys, named in named_places(arguments, skip):
        yield json_path(keys), named


def renamed(
    arguments: Mapping[str, Any], names: Mapping[tuple[str | int, ...], str]
) -> dict[str, Any]:
    """`arguments` with the index named at each key path of `names` (from `named_places`)
    replaced; only the containers on those paths are copied."""
    out = dict(arguments)
    for keys, name in names.items():
        node: Any = out
        for key in keys[:-1]:
            child = node[key]
            child = dict(child) if isinstance(child, Mapping) else list(child)
            node[key] = child
            node = child
        node[keys[-1]] = name
    return out


def named_places(
    arguments: Mapping[str, Any], skip: frozenset[str]
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(key path, what is named there) for each index the arguments name inside a query.

    Walks every argument but those in `skip` (the URL's own `index`, a memory's stored
    `metadata`), without recursion; arguments are already bounded in depth. The value named
    is yielded as found (a string, or anything else, which the policy refuses), or `WRAPPER`.
    Paths are only built for what is yielded, which keeps the usual walk cheap.
    """
    stack: list[_Entry] = [
        (value, None, key)
        for key, value in arguments.items()
        if key not in skip and type(value) not in _LEAVES
    ]
    while stack:
        entry = stack.pop()
        node = entry[0]
        if type(node) is dict or isinstance(node, Mapping):
            for key, value in node.items():
                if key in _CLAUSES:
                    for below, named in _named_here(key, value):
                        yield _keys(entry, key, *below), named
                if type(value) not in _LEAVES:
                    stack.append((value, entry, key))
        elif type(node) is list:
            for index, item in enumerate(node):
                if type(item) not in _LEAVES:
                    stack.append((item, entry, index))
