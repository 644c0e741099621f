"""The stand-in's index listings: ``GET /_cat/indices`` (text) and ``GET /_resolve/index/{name}``.

Both follow XERJ 1.0.0-rc.4 (engine/crates/xerj-api/src at e6e8e6a). Memory namespaces are
listed too: XERJ keeps each in an ordinary index ``.xerj-memory-<ns>`` (memory_api.rs:72, 93-95).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._engine import Index
from ._memory import Memory
from ._selector import glob_match_simple

__all__ = ["cat_indices", "listed_indices", "resolve_index"]


def listed_indices(
    indices: Mapping[str, Index], memories: Mapping[str, Mapping[str, Memory]]
) -> dict[str, tuple[int, int]]:
    """Every index the node holds: name -> (document count, bytes of its documents)."""
    out = {
        name: (len(ix.docs), sum(len(json.dumps(d)) for d in ix.docs.values()))
        for name, ix in indices.items()
    }
    for ns, store in memories.items():
        out[f".xerj-memory-{ns}"] = (len(store), sum(len(m.text) for m in store.values()))
    return dict(sorted(out.items()))


def _human_bytes(size: int) -> str:
    # es_compat.rs:492-512 `human_bytes`: the largest unit that keeps the value >= 1, one
    # decimal with a trailing ".0" dropped; plain bytes carry no decimal.
    value = float(size)
    for unit in ("tb", "gb", "mb", "kb"):
        scale = 1024.0 ** ("kmgt".index(unit[0]) + 1)
        if value >= scale:
            text = f"{value / scale:.1f}".removesuffix(".0")
            return f"{text}{unit}"
    return f"{size}b"


def cat_indices(listed: Mapping[str, tuple[int, int]]) -> str:
    """``GET /_cat/indices``: XERJ takes no query parameters here (``format=json`` and ``h=``
    are ignored) and always answers ``text/plain; charset=utf-8`` (router.rs:216,
    es_compat.rs:393-488), one line per index in the format of es_compat.rs:459-468, and an
    empty body (not a bare newline) when there is no index (es_compat.rs:471-476)."""
    lines = []
    for name, (docs, size) in listed.items():
        # es_compat.rs:523-534: a stable uuid derived from the name, not a random one per call.
        index_uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"xerj-index:{name}")
        human = _human_bytes(size)
        lines.append(f"green open {name} {index_uuid} 1 0 {docs} 0 {human} {human} {human}")
    return "\n".join(lines) + "\n" if lines else ""


def resolve_index(
    listed: Mapping[str, Any], expr: str, aliases: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """``GET /_resolve/index/{name}`` (router.rs:353, es_compat.rs:15816-15863): a pattern with
    a ``*`` is globbed, anything else matched exactly (a comma list matches nothing); always 200.
    Every index is ``["open"]``, a closed one too (15835). An alias is listed when its own name
    matches, with its backing indices in order (15839-15855); a data stream is one of them, and
    ``data_streams`` is always empty (15860)."""
    wildcard = "*" in expr

    def hit(name: str) -> bool:
        return glob_match_simple(expr, name) if wildcard else name == expr

    return {
        "indices": [{"name": n, "attributes": ["open"]} for n in listed if hit(n)],
        "aliases": [
            {"name": a, "indices": list(behind)}
            for a, behind in aliases.items()
            if hit(a) and behind
        ],
        "data_streams": [],
    }
