"""XERJ autoindex's catalog, read for orientation by `xerj_list_indices` and `xerj_describe_index`.

``xerj autoindex <folder>`` writes what it found into the index `CATALOG_INDEX`
(engine/crates/xerj-autoindex/src at e6e8e6a: catalog.rs:9, mapping catalog.rs:11-52, written
with the run's bulk at lib.rs:698-850). Of its documents only the dataset ones are read here,
``doc_kind: "dataset"`` (catalog.rs:78-102), one per index autoindex created:

- ``index_name``, ``slug``, ``record_count``, ``junk_records``, ``bytes``, ``file_count``,
  ``formats`` (file families, ``"csv(gzip)"`` for a gzipped one: lib.rs:729-742),
  ``time_field``, ``time_min``, ``time_max`` (RFC 3339 millis from a min/max aggregation:
  lib.rs:626-647), ``semantic_field``, ``notes`` (lib.rs:713-727), ``run_id``;
- ``fields_json``: a JSON *string*, the dataset's list of ``FieldSpec`` (infer/mod.rs:304-326:
  ``name``, ``es_type``, ``date_enc``?, ``semantic``? (an entity kind: email, ip, ...),
  ``cardinality_est`` (a count of distinct sampled values, capped at 8192 with
  ``cardinality_overflow``: infer/mod.rs:14, 223-233), ``null_ratio``, ``avg_len``,
  ``coverage``, ``examples`` (at most 3 distinct sampled values of at most 120 characters:
  infer/mod.rs:235-242), ``notes``?, ``date_min``?, ``date_max``?);
- ``sample_queries_json``: a list of JSON *strings*, each ``{class, title, request: "POST
  /<index>/_search", body, note?}`` or, for ``cross_dataset_pivot``, ``{class, title, steps:
  [{request, body, note}], evidence}`` (catalog.rs:133-242).

The file documents (``doc_kind: "file"``, catalog.rs:104-131: path, format, status, records,
junk) name no index, so the policy cannot be applied to them: they are not shown. Neither are
the ``run`` document (lib.rs:829-845: the folder, the node's URL) and the ``correlation`` ones
(correlate.rs:47-65); a pivot they produced reaches the model as a ready query, held to the
policy like any other.

The policy: the catalog is read only when the caller may read `CATALOG_INDEX`, and a dataset
whose ``index_name`` the caller may not read is dropped before anything of it is used, its
example values and ready queries with it (the catalog is a side channel to those indices). A
ready query is given as the arguments of this library's tools (``xerj_search``,
``xerj_hybrid_search``, ``xerj_semantic_search``), never as raw HTTP, and only when every index
it names is allowed; `served_queries` then drops those whose tool the dispatcher does not serve.

Everything here but the two generators is pure: they yield the one catalog search they need
(``kind="listing"``: never retried) and shape what came back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .._http._models import HttpRequest, Outcome, Reply
from .._json import clean
from ._catalog_shapes import CATALOG_INDEX, described, listed
from ._tool import IndexPolicy, Reads

__all__ = [
    "CATALOG_INDEX",
    "catalog_request",
    "dataset_sources",
    "describe_with_catalog",
    "list_with_catalog",
    "served_queries",
]

_LISTED = (
    "index_name", "formats", "file_count", "junk_records", "time_field", "time_min", "time_max",
    "semantic_field",
)  # fmt: skip


def catalog_request(indices: Sequence[str], *, whole: bool) -> HttpRequest:
    """The search for the dataset documents of `indices` (lib.rs:909-916 asks the same
    ``doc_kind`` term); without `whole`, only what a listing shows of each."""
    query = {
        "bool": {
            "filter": [
                {"term": {"doc_kind": "dataset"}},
                {"terms": {"index_name": list(indices)}},
            ]
        }
    }
    # one document per index (its id is `ds:<slug>`, catalog.rs:79); room for a stale twin
    body: dict[str, Any] = {"query": query, "size": min(2 * len(indices), 1_000)}
    if not whole:
        body["_source"] = list(_LISTED)
    path = f"/{CATALOG_INDEX}/_search"
    return HttpRequest("POST", path, body, kind="listing", template=path)


def dataset_sources(outcome: Outcome, allows: Callable[[str], bool]) -> dict[str, dict[str, Any]]:
    """The dataset documents in a catalog search's answer, by index name, those of an index
    the policy denies left out; empty when the answer is not a search result."""
    if (
        not isinstance(outcome, Reply)
        or outcome.status != 200
        or not isinstance(outcome.data, dict)
    ):
        return {}
    hits = outcome.data.get("hits")
    rows = hits.get("hits") if isinstance(hits, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for hit in rows if isinstance(rows, list) else ():
        source = hit.get("_source") if isinstance(hit, dict) else None
        if not isinstance(source, dict) or source.get("doc_kind", "dataset") != "dataset":
            continue
        name = source.get("index_name")
        if isinstance(name, str) and name not in out and allows(name):
            out[name] = clean(source)
    return out


def list_with_catalog(payload: dict[str, Any], policy: IndexPolicy, resolved: Any) -> Reads:
    """`xerj_list_indices`'s catalog step: when the node has the catalog (in the listing, or in
    the ``_resolve`` answer `resolved` for a narrower pattern) and the policy allows it, one
    search for the listed datasets."""
    names = [r["name"] for r in payload.get("indices") or () if isinstance(r.get("name"), str)]
    has = CATALOG_INDEX in names or _resolves_catalog(resolved)
    if not has or not policy.allows_index(CATALOG_INDEX):
        return payload
    wanted = [n for n in names if n != CATALOG_INDEX]
    if not wanted:
        return listed(payload, {}, True)
    outcome, _ = yield catalog_request(wanted, whole=False)
    read = isinstance(outcome, Reply) and outcome.status == 200
    return listed(payload, dataset_sources(outcome, policy.allows_index), read)


def _resolves_catalog(resolved: Any) -> bool:
    data = resolved.data if isinstance(resolved, Reply) and resolved.status == 200 else None
    rows = data.get("indices") if isinstance(data, dict) else None
    return isinstance(rows, list) and any(
        isinstance(r, dict) and r.get("name") == CATALOG_INDEX for r in rows
    )


def describe_with_catalog(
    arguments: Mapping[str, Any], payload: dict[str, Any], policy: IndexPolicy
) -> Reads:
    """`xerj_describe_index`'s step after the mapping: the catalog's dataset documents of the
    indices described, when the policy lets the caller read the catalog; the mapping's reading
    stands alone where the catalog has nothing (or cannot be read)."""
    names = [n for n in payload.get("index") or () if isinstance(n, str)]
    if not policy.allows_index(CATALOG_INDEX):
        return payload
    if names == [CATALOG_INDEX]:
        note = (
            f"`{CATALOG_INDEX}` is XERJ autoindex's catalog: describe a dataset's index for its "
            "fields with example values and ready-to-send queries"
        )
        return {**payload, "notes": [*payload.get("notes", []), note]}
    wanted = [n for n in names if n != CATALOG_INDEX and policy.allows_index(n)]
    if not wanted:
        return payload
    outcome, _ = yield catalog_request(wanted, whole=True)
    datasets = dataset_sources(outcome, policy.allows_index)
    datasets = {n: s for n, s in datasets.items() if n in wanted}
    if not datasets:
        return payload
    return described(payload, datasets, policy.allows_index)


def served_queries(payload: dict[str, Any], served: Collection[str]) -> dict[str, Any]:
    """`payload` without the ready queries that name a tool not in `served`."""
    catalog = payload.get("catalog")
    if not isinstance(catalog, dict):
        return payload
    sections = {}
    for name, section in catalog.items():
        queries = section.get("queries") if isinstance(section, dict) else None
        if not isinstance(queries, list):
            sections[name] = section
            continue

        def ok(query: Mapping[str, Any]) -> bool:
            calls = query.get("steps") or [query]
            return all(call.get("tool") in served for call in calls)

        kept = [q for q in queries if ok(q)]
        rest = {k: v for k, v in section.items() if k != "queries"}
        sections[name] = {**rest, "queries": kept} if kept else rest
    return {**payload, "catalog": sections}
