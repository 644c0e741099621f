"""`GET /{index}/_doc/{id}` as XERJ answers it (engine/crates/xerj-api/src/es_compat.rs:1972-2008
at e6e8e6a; `xerj_get_document`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._engine import Index
from ._memory import MEMORY_PREFIX, Memory, memory_index
from ._selector import get_index, index_not_found

__all__ = ["get_document"]


def get_document(
    indices: Mapping[str, Index],
    memories: Mapping[str, Mapping[str, Memory]],
    index: str,
    doc_id: str,
    aliases: Mapping[str, Sequence[str]],
) -> tuple[int, Any]:
    # The index by its exact name, or an alias's first backing index, memory namespaces'
    # `.xerj-memory-<ns>` included; no pattern (engine.rs:956-972 `get_index`); missing: the
    # decorated 404 (es_compat.rs:1983-1986). `_index` is the name as requested, an alias's
    # own (es_compat.rs:1999 `EsGetResponse::found(&index, …)`).
    found = get_index(indices, aliases, index)
    ns = index.removeprefix(MEMORY_PREFIX)
    if found is None and ns != index and ns in memories:
        found = memory_index(ns, memories[ns])
    if found is None:
        return 404, index_not_found(index)
    source = found.docs.get(doc_id)
    if source is None:
        # 404 `{_index, _id, found: false}` (es_compat.rs:2002-2004, responses.rs:212-222)
        return 404, {"_index": index, "_id": doc_id, "found": False}
    # The stand-in keeps no versions: XERJ's fallbacks, 1 and 0 (es_compat.rs:1997-1998), and
    # `_primary_term` 1 (responses.rs:194-210). The whole `_source`, embeddings included.
    return 200, {
        "_index": index,
        "_id": doc_id,
        "_version": 1,
        "_seq_no": 0,
        "_primary_term": 1,
        "found": True,
        "_source": dict(source),
    }
