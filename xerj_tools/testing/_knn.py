"""The stand-in's kNN: the query-DSL `knn` clause and the top-level `knn` of a `_search` body.

Citations are XERJ paths at commit e6e8e6a (``engine/crates/…``); ``CONTRACT.md`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._embed import cosine_score
from ._engine import Index, QueryError, _parse_error, boost_of, score, top, union
from ._numbers import count

__all__ = ["knn", "knn_k", "multi_knn", "top_level_knn"]

# The keys `knn_spec_to_query_json` copies from a top-level `knn` into the query-DSL clause
# (es_compat.rs:5811-5826). `vector` is not among them: the query-DSL clause accepts it
# (parser.rs:2269-2273), a top-level `knn` with `vector` alone is therefore refused.
_TOP_LEVEL_KEYS = ("field", "query_vector", "k", "num_candidates", "filter", "boost", "similarity")


def knn_k(spec: Any) -> int:
    """`k`, else `num_candidates`, else 10 (parser.rs:2258-2267; es_compat.rs:5792-5804)."""
    return count(spec, "k", count(spec, "num_candidates", 10))


def knn(index: Index, spec: Any, extra_filter: Any = None) -> list[tuple[float, str]]:
    """The query-DSL `knn` clause (parser.rs:2251-2322): the top `k` by (1 + cos) / 2, each
    score multiplied by `boost` (index.rs:17353-17357)."""
    if not isinstance(spec, Mapping):
        raise _parse_error("`knn` must be an object")
    fieldname = spec.get("field")
    if not isinstance(fieldname, str):
        raise _parse_error("`field` must be a non-empty string")  # parser.rs:2847-2852
    vector = spec.get("query_vector", spec.get("vector"))
    if not isinstance(vector, list):
        raise _parse_error("`knn` requires `query_vector` (or `vector`) as a float array")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in vector):
        raise _parse_error("`knn.query_vector` must contain numbers")
    filters = spec.get("filter")
    filters = filters if isinstance(filters, list) else [] if filters is None else [filters]
    filters += [] if extra_filter is None else [extra_filter]
    for f in filters:
        score(f, {}, "")  # a malformed filter is refused even on an empty index
    boost = boost_of(spec.get("boost"))
    hits = []
    for doc_id, src in index.docs.items():
        stored = src.get(fieldname)
        if not isinstance(stored, list) or any(score(f, src, doc_id) is None for f in filters):
            continue
        s = cosine_score([float(x) for x in vector], stored)
        if s is not None:
            hits.append((s * boost, doc_id))
    return top(hits, knn_k(spec))


def _illegal(reason: str) -> QueryError:
    return QueryError(400, "illegal_argument_exception", reason)


def top_level_knn(value: Any, has_query: bool) -> list[dict[str, Any]]:
    """A top-level `knn` as the query-DSL clauses XERJ turns it into (es_compat.rs:5770-5893).

    `[]` is refused; a one-element array is the object; several clauses beside a `query` are
    refused (es_compat.rs:5865-5883). Each clause keeps only the keys `knn_spec_to_query_json`
    copies; a clause that is not an object becomes `{}` and fails in the parser.
    """
    if value is None:
        return []
    if isinstance(value, list):
        if not value:
            raise _illegal("[knn] must not be empty")  # es_compat.rs:5770-5785
        if len(value) > 1 and has_query:
            raise _illegal(
                "multiple [knn] clauses combined with a [query] are not supported by this XERJ "
                "version; run the knn array without [query], or a single knn clause with [query]"
            )
    clauses = value if isinstance(value, list) else [value]
    return [
        {k: c[k] for k in _TOP_LEVEL_KEYS if k in c} if isinstance(c, Mapping) else {}
        for c in clauses
    ]


def multi_knn(index: Index, clauses: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """Each clause's own top `k`; a document found by several scores the sum; the union
    (`run_multi_knn_brute_force`, index.rs:4868-4921)."""
    return union(knn(index, clause) for clause in clauses)
