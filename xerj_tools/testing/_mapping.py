"""The stand-in's ``GET /{index}/_mapping`` and ``GET /_cat/indices/{pattern}``.

Both follow XERJ 1.0.0-rc.4 (engine/crates/xerj-api/src at e6e8e6a); see ``CONTRACT.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._engine import Index
from ._listing import cat_indices
from ._selector import expand, get_index, glob_match_simple, index_not_found

__all__ = ["cat_indices_pattern", "get_mapping"]


def _type_of(value: Any) -> str:
    # xerj-engine index.rs:18298-18316 `infer_field_type` (the dynamic schema of an index
    # created without a mapping): a string is text, an array its first non-null item's type
    # (so an embedding is `double`), null text.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        first = next((v for v in value if v is not None), None)
        return _type_of(first) if first is not None else "text"
    return "text"


def derived_properties(index: Index) -> dict[str, Any]:
    """es_compat.rs:12247-12266 `schema_to_es_properties`: one `type` per top-level field,
    the first document that has the field deciding (index.rs:10470-10485 maps new keys only)."""
    out: dict[str, Any] = {}
    for source in index.docs.values():
        for key, value in source.items():
            out.setdefault(key, {"type": _type_of(value)})
    return out


def get_mapping(
    indices: Mapping[str, Index], spec: str, aliases: Mapping[str, Sequence[str]]
) -> tuple[int, Any]:
    """es_compat.rs:1458-1497: 404 when the selector selects nothing; each selected index that
    exists answers its stored mapping, else its derived one; a missing exact name is skipped
    (so ``GET /missing/_mapping`` is 200 ``{}``). An alias is kept by its name (patterns expand
    over indices only, es_compat.rs:14131-14162), read through `get_index` (its first backing
    index, engine.rs:956-967), and no mapping is stored under the alias's name
    (es_compat.rs:1472-1478), so it answers the derived one: ``semantic_text`` as ``text``, no
    ``dims`` (es_compat.rs:12232-12266)."""
    # es_compat.rs:14131-14162 `resolve_index_selector`: an exact name is kept whether or not it
    # exists ("the caller decides").
    targets = expand([p.strip() for p in spec.split(",") if p.strip()], sorted(indices))
    if not targets:
        return 404, index_not_found(spec)
    out: dict[str, Any] = {}
    for name in targets:
        index = get_index(indices, aliases, name)
        if index is None:
            continue
        stored = index.mappings if index.name == name else None
        mappings = stored or {"properties": derived_properties(index)}
        out[name] = {"mappings": mappings}
    return 200, out


def cat_indices_pattern(listed: Mapping[str, tuple[int, int]], pattern: str) -> tuple[int, Any]:
    """es_compat.rs:410-441: a concrete name that is no index is 404 index_not_found; the
    rest (``_all``, ``*``, globs, names) narrows the listing; no match is an empty 200."""
    parts = [p.strip() for p in pattern.split(",") if p.strip()]
    for part in parts:
        if part != "_all" and "*" not in part and part not in listed:
            return 404, index_not_found(part)
    chosen = {
        name: row for name, row in listed.items()
        if any(p == "_all" or glob_match_simple(p, name) for p in parts)
    }  # fmt: skip
    return 200, cat_indices(chosen)
