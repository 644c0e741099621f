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
that honours more of them does not widen what a model can read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ._validation import json_path

__all__ = ["WRAPPER", "named_indices"]

WRAPPER = object()
"""Stands for the index of a ``wrapper`` query: unknown, so never allowed."""


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
            if isinstance(spec, Mapping) and "index" in spec:
                yield [field, "index"], spec["index"]
    elif key == "more_like_this":
        for side in ("like", "unlike"):
            for path, entry in _entries(value.get(side), side):
                if isinstance(entry, Mapping) and "_index" in entry:
                    yield [*path, "_index"], entry["_index"]
    elif key == "percolate":
        if "index" in value:
            yield ["index"], value["index"]
    elif key in ("geo_shape", "shape"):
        for field, spec in value.items():
            shape = spec.get("indexed_shape") if isinstance(spec, Mapping) else None
            if isinstance(shape, Mapping) and "index" in shape:
                yield [field, "indexed_shape", "index"], shape["index"]
    elif key == "pinned":
        for path, entry in _entries(value.get("docs"), "docs"):
            if isinstance(entry, Mapping) and "_index" in entry:
                yield [*path, "_index"], entry["_index"]


def named_indices(arguments: Mapping[str, Any], skip: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """(JSON path, what is named there) for each index the arguments name inside a query.

    Walks every argument but those in `skip` (the URL's own `index`, a memory's stored
    `metadata`), without recursion; arguments are already bounded in depth. The value named
    is yielded as found (a string, or anything else, which the policy refuses), or `WRAPPER`.
    """
    stack: list[tuple[Any, list[str | int]]] = [
        (value, [key]) for key, value in arguments.items() if key not in skip
    ]
    while stack:
        node, parts = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                for below, named in _named_here(key, value):
                    yield json_path([*parts, key, *below]), named
                stack.append((value, [*parts, key]))
        elif isinstance(node, list):
            stack.extend(
                (item, [*parts, i])
                for i, item in enumerate(node)
                if isinstance(item, (Mapping, list))
            )
