"""The request a tool builds: `HttpRequest`, and `Handler`, a function from a tool's validated
arguments to it. The XERJ tools' own handlers are part of their `Tool` (`xerj_tools.tools`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["Handler", "HttpRequest", "RequestKind", "VECTOR_SUFFIXES"]

# What a plain handler's reply is read as (``handlers={name: fn}``, see `xerj_tools.tools`), and
# "listing" for the dispatcher's own index listing. A `Tool` reads its replies itself.
RequestKind = Literal["search", "memory_store", "memory_recall", "listing", "other"]

# XERJ keeps each semantic_text field's embedding inside `_source` as `<field>_vector`, and a
# document longer than one chunk also its passage embeddings as `<field>_vector_chunks`
# (index.rs:5077, 5277-5289 at e6e8e6a). Its `_source` filter cannot drop them by pattern: on
# the general path a `*` is a trailing wildcard only (index.rs:15826-15832 `field_matches`,
# used by `filter_object` when no pattern has a dot), so `*_vector` matches no field; and kNN
# and `semantic` searches return before any `_source` filter runs (index.rs:6690-6726,
# 6786-6787 return from `search_inner` ahead of `apply_source_filter` at 9930). So requests name
# exact fields, where a search names them (see `_vector_fields`), and the embeddings that still
# arrive are dropped while the answer is decoded (`_hits.decode_search`).
VECTOR_SUFFIXES = ("_vector", "_vector_chunks")


@dataclass(frozen=True)
class HttpRequest:
    """One request to XERJ: method, percent-encoded path and JSON body.

    `idempotent` says whether sending it twice is harmless; retries after the request may have
    reached the server (timeouts, dropped connections) happen only when it is.
    `notes` are sentences the model should read with the result (an argument that was dropped).
    `kind` matters only for a plain handler's request: its reply is read as that kind's tool
    reads it (``"search"``, ``"memory_store"``, ``"memory_recall"``; ``"other"``: the JSON).
    """

    method: str
    path: str
    body: Mapping[str, Any] | None = None
    kind: RequestKind = "other"
    idempotent: bool = True
    notes: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def reranked(self) -> bool:
        """True when the body asks XERJ for its second-stage reranker."""
        return self.body is not None and self.body.get("rerank") is not None

    def without_rerank(self) -> HttpRequest:
        body = {k: v for k, v in (self.body or {}).items() if k != "rerank"}
        return replace(self, body=body)


Handler = Callable[[Mapping[str, Any]], HttpRequest]
"""Turns validated arguments into an `HttpRequest`. Pure: no I/O, no clock."""
