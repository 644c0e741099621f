"""What an index's mapping says, and a short-lived cache of it per cluster.

XERJ serves ``GET /{index}/_mapping`` (router.rs:251-252; es_compat.rs:1458-1497 at e6e8e6a):
``{"<index>": {"mappings": {"properties": {...}}}}`` for each index the expression selects
(`resolve_index_selector`, es_compat.rs:14131-14162: ``_all``, ``*``, ``prefix*``/``*suffix``
globs, exact names). An index created with a mapping answers that mapping as stored (its
``dense_vector`` ``dims``, ``semantic_text``, multi-``fields``, nested ``properties``); one
without is answered from its dynamic schema, one ``type`` per top-level field
(`schema_to_es_properties`, es_compat.rs:12247-12266), where an array of floats is a ``double``
(xerj-engine index.rs:18298-18316): there an embedding is known by its length alone
(`_source_view.LONG_ARRAY`). An exact name that is no index answers 200 ``{}``
(es_compat.rs:1469-1473: the name is kept, then skipped). An alias answers under its own name a
mapping derived from its first backing index's schema (`get_index`, engine.rs:956-967; no
mapping is stored under an alias's name, es_compat.rs:1472-1478), so ``semantic_text`` reads
``text`` and ``dims`` is lost (12232-12266): the dispatcher names the concrete indices instead
(`_dispatch._index_guard`). A stored mapping is not complete: fields documents add later are
searchable but never listed (es_compat.rs:689-693, 1472-1485; index.rs:10469-10485), so a name
it lacks is "not listed", not "missing".

The dispatcher fetches a mapping only when it needs one: `xerj_describe_index` reads it (and
the answer is kept), and a search that came back empty or refused asks for it once to say
which fields exist (`field_hint`). It is never fetched before a search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from .._http._models import HttpRequest, Outcome, Reply

__all__ = [
    "MAPPING_TTL", "Field", "MappingCache", "field_hint", "fields_of", "learned", "mapping_request",
    "named_fields", "vector_paths",
]  # fmt: skip

MAPPING_TTL = 60.0
"""Seconds an index's mapping is reused; a field mapped meanwhile shows up after that."""

MAX_FIELDS = 100_000  # fields read from one answer; past it the rest is left unread
_MAX_DEPTH = 64

Field = dict[str, Any]  # {"type": ..., "dims": n (dense_vector), "index": name}


def mapping_request(index: str) -> HttpRequest:
    from ._paths import segment

    path = f"/{segment(index, keep=',*')}/_mapping"
    return HttpRequest("GET", path, None, kind="listing", template="/{index}/_mapping")


def _walk(properties: Any, out: dict[str, Field]) -> None:
    stack: list[tuple[Any, str, int]] = [(properties, "", 0)]
    while stack and len(out) < MAX_FIELDS:
        props, pre, level = stack.pop()
        if not isinstance(props, Mapping) or level > _MAX_DEPTH:
            continue
        for name, spec in props.items():
            if not isinstance(name, str) or not isinstance(spec, Mapping):
                continue
            path = pre + name
            kind = spec.get("type")
            nested = spec.get("properties")
            kind = kind if isinstance(kind, str) else ("object" if nested is not None else None)
            if kind is None:
                continue
            field: Field = {"type": kind}
            if isinstance(dims := spec.get("dims"), int) and not isinstance(dims, bool):
                field["dims"] = dims
            out.setdefault(path, field)
            if nested is not None:
                stack.append((nested, path + ".", level + 1))
            subs = spec.get("fields")  # multi-fields: `title.keyword`
            if isinstance(subs, Mapping):
                stack.append((subs, path + ".", level + 1))


def fields_of(data: Any) -> dict[str, dict[str, Field]]:
    """Per index, its fields by dotted path (multi-fields and object members included)."""
    out: dict[str, dict[str, Field]] = {}
    if not isinstance(data, Mapping):
        return out
    for index, block in data.items():
        mappings = block.get("mappings") if isinstance(block, Mapping) else None
        if isinstance(index, str) and isinstance(mappings, Mapping):
            fields: dict[str, Field] = {}
            _walk(mappings.get("properties"), fields)
            out[index] = fields
    return out


def vector_paths(per_index: Mapping[str, Mapping[str, Field]]) -> tuple[str, ...]:
    """The dense_vector fields of every index."""
    fields = (item for per in per_index.values() for item in per.items())
    return tuple(sorted({path for path, field in fields if field["type"] == "dense_vector"}))


class MappingCache:
    """Per cluster and index expression: the fields last read, forgotten after `ttl` seconds."""

    def __init__(self, ttl: float, clock: Callable[[], float], size: int = 256) -> None:
        self._ttl, self._clock, self._size = ttl, clock, size
        self._entries: dict[tuple[str, str], tuple[float, dict[str, dict[str, Field]]]] = {}
        self._lock = threading.Lock()

    def get(self, cluster: str, index: str) -> dict[str, dict[str, Field]] | None:
        with self._lock:
            entry = self._entries.get((cluster, index))
            if entry is None or self._clock() - entry[0] >= self._ttl:
                self._entries.pop((cluster, index), None)
                return None
            return entry[1]

    def put(self, cluster: str, index: str, per_index: dict[str, dict[str, Field]]) -> None:
        if self._ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= self._size:  # the oldest goes first
                self._entries.pop(min(self._entries, key=lambda k: self._entries[k][0]))
            self._entries[(cluster, index)] = (self._clock(), per_index)


def learned(
    request: HttpRequest, outcome: Outcome
) -> tuple[str, dict[str, dict[str, Field]]] | None:
    """The index expression and fields a ``GET /{index}/_mapping`` answer holds, or None."""
    from urllib.parse import unquote

    parts = request.path.strip("/").split("/")
    if request.method != "GET" or len(parts) != 2 or parts[1] != "_mapping":
        return None
    if (
        not isinstance(outcome, Reply)
        or outcome.status != 200
        or not isinstance(outcome.data, dict)
    ):
        return None
    return unquote(parts[0]), fields_of(outcome.data)


# Query clauses whose body is `{field: ...}`, and those that name a field under `field`.
_KEYED = frozenset(
    "match match_phrase match_phrase_prefix match_bool_prefix term terms range prefix wildcard "
    "regexp fuzzy span_term".split()
)
_FIELD = frozenset("exists knn semantic".split())
_META = frozenset({"_id", "_index", "_score", "_doc", "_source", "_routing", "_seq_no"})


def named_fields(query: Any) -> Iterator[tuple[str, str]]:
    """(clause, field) for each field a query names plainly (no pattern), knn and semantic too."""
    stack: list[tuple[Any, int]] = [(query, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > _MAX_DEPTH:
            continue
        if isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
            continue
        if not isinstance(value, Mapping):
            continue
        for key, body in value.items():
            if key in _KEYED and isinstance(body, Mapping):
                for name in body:
                    if isinstance(name, str) and name not in ("boost", "_name"):
                        yield key, name
            elif key in _FIELD and isinstance(body, Mapping) and isinstance(body.get("field"), str):
                yield key, body["field"]
            elif key == "multi_match" and isinstance(body, Mapping):
                for name in body.get("fields") or ():
                    if isinstance(name, str):
                        yield key, name.split("^")[0]
            if isinstance(body, (Mapping, list)):
                stack.append((body, depth + 1))


def _known(name: str, fields: Mapping[str, Field]) -> bool:
    if "*" in name or name in _META or name in fields:
        return True
    # `title.keyword` on a dynamically mapped `title`: XERJ serves it without a mapped sub-field
    return name.endswith(".keyword") and name[: -len(".keyword")] in fields


def field_hint(
    body: Mapping[str, Any],
    per_index: Mapping[str, Mapping[str, Field]],
    limit: int = 40,
    served: Collection[str] | None = None,
) -> str | None:
    """A sentence naming the fields that exist, when the request names one the mapping lacks or
    runs kNN (semantic) on a field that is not a dense_vector (semantic_text); else None. It
    sends the model to `xerj_describe_index` for the rest only where that tool is `served`
    (None: not known)."""
    fields: dict[str, Field] = {}
    for per in per_index.values():
        for path, field in per.items():
            fields.setdefault(path, field)
    if not fields:
        return None
    query: list[Any] = [
        body.get("query"),
        {"knn": body["knn"]} if isinstance(body.get("knn"), Mapping) else None,
    ]
    wrong: list[str] = []
    for clause, name in named_fields(query):
        known = fields.get(name)
        if not _known(name, fields):
            # XERJ answers a stored mapping as written, without the fields documents added
            # since (es_compat.rs:1472-1485; index.rs:10469-10485): it may still exist
            wrong.append(f"the mapping does not list {name!r}")
        elif clause == "knn" and known is not None and known["type"] != "dense_vector":
            wrong.append(f"{name!r} is {known['type']}, not dense_vector")
        elif clause == "semantic" and known is not None and known["type"] != "semantic_text":
            wrong.append(f"{name!r} is {known['type']}, not semantic_text")
    if not wrong:
        return None
    vectors = [
        f"{p} ({f.get('dims', '?')} dims)" for p, f in fields.items() if f["type"] == "dense_vector"
    ]
    semantic = [p for p, f in fields.items() if f["type"] == "semantic_text"]
    listed = [f"{p}: {f['type']}" for p, f in sorted(fields.items())[:limit]]
    describe = served is None or "xerj_describe_index" in served
    more = f" and {len(fields) - limit} more" if len(fields) > limit else ""
    more += " (xerj_describe_index lists them)" if more and describe else ""
    text = f"{'; '.join(dict.fromkeys(wrong))}. The mapping lists: {', '.join(listed)}{more}."
    if any(w.startswith("the mapping does not list") for w in wrong):
        text += (
            " A field documents added after the index was created with a mapping is searchable"
            " but not listed: check the name, or ask with an `exists` query."
        )
    if any("dense_vector" in w for w in wrong):
        text += f" Vector fields: {', '.join(vectors) or 'none'}."
    if any("semantic_text" in w for w in wrong):
        text += f" semantic_text fields: {', '.join(semantic) or 'none'}."
    return text
