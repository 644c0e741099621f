"""An in-memory imitation of XERJ's search and memory semantics, for the stand-in server.

It answers with XERJ's shapes, status codes and error bodies over a tiny corpus; each rule
cites the XERJ source it copies (paths at commit e6e8e6a, listed in ``CONTRACT.md``). Its
ranking is deliberately simple: it is a stand-in for tests and the demo, not a search engine.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._agg_fields import RANGE_CHECKS
from ._corpus import CORPUS, MAPPINGS, SEMANTIC_FIELDS
from ._embed import embed
from ._numbers import number
from ._query_string import lower_query_string, wildcard_match

Result = tuple[int, dict[str, Any]]
_WORD = re.compile(r"\w+")
# The top-level `_search` keys XERJ accepts (es_compat.rs:2284-2318); a newer node adds `rerank`.
SEARCH_KEYS = frozenset(
    [
        "query",
        "from",
        "size",
        "timeout",
        "terminate_after",
        "min_score",
        "post_filter",
        "sort",
        "track_scores",
        "track_total_hits",
        "indices_boost",
        "_source",
        "fields",
        "docvalue_fields",
        "stored_fields",
        "script_fields",
        "runtime_mappings",
        "highlight",
        "suggest",
        "rescore",
        "explain",
        "version",
        "seq_no_primary_term",
        "aggs",
        "aggregations",
        "collapse",
        "slice",
        "search_after",
        "pit",
        "knn",
        "profile",
        "stats",
        "ext",
    ]
)


class QueryError(Exception):
    def __init__(self, status: int, type: str, reason: str, *, root_cause: bool = True) -> None:
        super().__init__(reason)
        self.status, self.type, self.reason, self.root_cause = status, type, reason, root_cause

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type, "reason": self.reason}
        if self.root_cause:
            error = {"root_cause": [dict(error)], **error}
        return {"error": error, "status": self.status}


def _parse_error(reason: str) -> QueryError:
    # A query-parser error is `InvalidQuery` rendered from `QueryError::Parse`, whose Display adds
    # "parse error: " (xerj-query/src/error.rs:9; api error.rs:124-132, 239-266).
    return QueryError(400, "search_phase_execution_exception", f"parse error: {reason}")


def invalid_query(reason: str) -> QueryError:
    """An engine-raised `InvalidQuery` (index.rs): the same type, without the parser's prefix."""
    return QueryError(400, "search_phase_execution_exception", reason)


def tokens(text: Any) -> list[str]:
    return _WORD.findall(str(text).lower()) if text is not None else []


@dataclass
class Index:
    name: str
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    semantic_fields: tuple[str, ...] = ()
    mappings: dict[str, Any] | None = None  # as created (`GET /{index}/_mapping` answers it)

    def add(self, doc_id: str, source: Mapping[str, Any]) -> None:
        stored = dict(source)
        for f in self.semantic_fields:
            if isinstance(stored.get(f), str):
                # The companion vector is written into `_source` (index.rs:5077, 5277, 5289).
                stored[f"{f}_vector"] = embed(stored[f])
        self.docs[doc_id] = stored


def _field_values(source: Mapping[str, Any], path: str) -> list[Any]:
    value: Any = source
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return []
        value = value[part]
    return value if isinstance(value, list) else [value]


def _text_score(source: Mapping[str, Any], fieldname: str, text: Any) -> float:
    words = set(tokens(text))
    if not words:
        return 0.0
    best = 0.0
    for f in _fields(source, fieldname):
        doc_words = [t for v in _field_values(source, f) for t in tokens(v)]
        hits = sum(1 for t in doc_words if t in words)
        if hits:
            best = max(best, hits / (len(doc_words) ** 0.5) * len(words & set(doc_words)))
    return round(best, 6)


def _fields(source: Mapping[str, Any], fieldname: str) -> list[str]:
    # A `*` in a field name (query_string's unqualified terms) reads every top-level field.
    return [k for k in source if fnmatch.fnmatch(k, fieldname)] if "*" in fieldname else [fieldname]


def _wildcard(body: Any, source: Mapping[str, Any]) -> float | None:
    """`wildcard` (parser.rs:974-1010; index.rs:19025-19049): `{field: "pat"}` or `{field:
    {value, boost}}`; lower-cased, the pattern must match a string value whole or one of its
    words; the score is constant, `boost` or 1.0."""
    fieldname, spec = _single("wildcard", body)
    if isinstance(spec, Mapping):
        if not isinstance(spec.get("value"), str):
            raise _parse_error("`value` must be a non-empty string")
        pattern, boost = spec["value"].lower(), spec.get("boost")
    elif isinstance(spec, str):
        pattern, boost = spec.lower(), None
    else:
        raise _parse_error("`wildcard` field value must be a string or object")
    for f in _fields(source, fieldname):
        for value in _field_values(source, f):
            if not isinstance(value, str):
                continue
            lowered = value.lower()
            words = [w for w in re.split(r"[^\w]|_", lowered) if w]
            if wildcard_match(lowered, pattern) or any(wildcard_match(w, pattern) for w in words):
                return boost_of(boost)
    return None


def boost_of(value: Any) -> float:
    """A clause's `boost`: a number, else 1.0."""
    found = number(value)
    return 1.0 if found is None else found


def _single(kind: str, clause: Any) -> tuple[str, Any]:
    """The one `{field: spec}` of a leaf clause, with the parser's refusals: not an object, or
    not exactly one field (parser.rs:362-367 match, 432-437 match_phrase, 692-697 term, 763-771
    terms, where `boost` is not a field, 871-876 range)."""
    if not isinstance(clause, Mapping):
        raise _parse_error(f"`{kind}` must be an object")
    fields = [(k, v) for k, v in clause.items() if not (kind == "terms" and k == "boost")]
    if len(fields) != 1:
        raise _parse_error(f"`{kind}` query must have exactly one field")
    return fields[0]


def _range_ok(values: list[Any], spec: Mapping[str, Any]) -> bool:
    for v in values:
        try:
            if all(RANGE_CHECKS[op](v, b) for op, b in spec.items() if op in RANGE_CHECKS):
                return True
        except TypeError:
            continue
    return False


def score(clause: Any, source: Mapping[str, Any], doc_id: str) -> float | None:
    """None: no match. Otherwise the (toy) relevance score of `source` for `clause`.

    The shape checks are the parser's (parser.rs:250-337): an object, `{}` is match_all, exactly
    one key, and an unknown type is refused by name.
    """
    if not isinstance(clause, Mapping):
        raise _parse_error("query must be a JSON object")
    if not clause:
        return 1.0
    if len(clause) != 1:
        raise _parse_error(
            f"query object must have exactly one key, found {len(clause)}: {', '.join(clause)}"
        )
    kind, body = next(iter(clause.items()))
    if kind == "match_all":
        return 1.0
    if kind in ("match", "match_phrase"):
        fieldname, spec = _single(kind, body)
        text = spec.get("query") if isinstance(spec, Mapping) else spec
        if kind == "match_phrase":
            # The words in order (XERJ matches analysed positions, not characters).
            phrase = " ".join(tokens(text))
            values = [v for f in _fields(source, fieldname) for v in _field_values(source, f)]
            found = any(f" {phrase} " in f" {' '.join(tokens(v))} " for v in values)
            return 2.0 if phrase and found else None
        s = _text_score(source, fieldname, text)
        return s or None
    if kind in ("multi_match", "simple_query_string"):
        fields = body.get("fields") or ["*"]
        s = max(_text_score(source, f.split("^")[0], body.get("query")) for f in fields)
        return s or None
    if kind in ("term", "terms"):
        fieldname, spec = _single(kind, body)
        wanted = (
            spec if kind == "terms" else [spec.get("value") if isinstance(spec, Mapping) else spec]
        )
        values = _field_values(source, fieldname.removesuffix(".keyword"))
        return 1.0 if any(v in values for v in wanted) else None
    if kind == "range":
        fieldname, spec = _single(kind, body)
        if not isinstance(spec, Mapping):
            raise _parse_error("`range` field value must be an object")  # parser.rs:881-883
        return 1.0 if _range_ok(_field_values(source, fieldname), spec) else None
    if kind == "wildcard":
        return _wildcard(body, source)
    if kind == "query_string":
        if not isinstance(body, Mapping):
            raise _parse_error("`query_string` must be an object")
        return score(lower_query_string(body, _parse_error), source, doc_id)
    if kind == "exists":
        name = body.get("field", "") if isinstance(body, Mapping) else ""
        if name in ("_id", "_index", "_seq_no", "_version", "_primary_term"):
            return 1.0  # every document has them (index.rs:18992-18996)
        if name == "_routing":
            return 1.0 if "_routing" in source else None
        return 1.0 if _field_values(source, name) else None
    if kind == "ids":
        return _ids(body, doc_id)
    if kind == "bool":
        return _bool(body, source, doc_id)
    if kind == "constant_score":
        return _constant_score(body, source, doc_id)
    if kind in _KNOWN_ELSEWHERE:
        raise _parse_error(f"the stand-in does not implement `{kind}` inside this query")
    # ParseError::UnknownQueryType (xerj-query/src/error.rs:45-46; parser.rs:334).
    raise _parse_error(
        f"unknown query type `{kind}` — see https://xerj.io/docs/query-dsl for supported types"
    )


# Types XERJ parses (parser.rs:265-333) that this stand-in does not score: refused plainly
# rather than reported as unknown, which would misstate XERJ.
_KNOWN_ELSEWHERE = frozenset(
    "match_none combined_fields prefix boosting dis_max "
    "fuzzy regexp match_phrase_prefix geo_distance geo_bounding_box function_score nested "
    "has_child has_parent more_like_this percolate pinned span_term span_near span_or span_not "
    "span_first span_containing span_within geo_polygon geo_shape match_bool_prefix terms_set "
    "intervals script_score distance_feature rank_feature type wrapper knn semantic hybrid".split()
)


def _ids(body: Any, doc_id: str) -> float | None:
    # parser.rs:1021-1055: `values` holds strings or numbers; the score is `boost` (default 1.0).
    if not isinstance(body, Mapping):
        raise _parse_error("`ids` must be an object")
    values = body.get("values")
    if not isinstance(values, list):
        raise _parse_error("`ids.values` must be an array")
    wanted = set()
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise _parse_error("`ids.values` must contain strings or numbers")
        wanted.add(v if isinstance(v, str) else json.dumps(v))
    boost = body.get("boost", 1.0)
    return float(boost) if doc_id in wanted else None


def _constant_score(body: Any, source: Mapping[str, Any], doc_id: str) -> float | None:
    # parser.rs:2153-2177: `filter` required; every hit scores exactly `boost` (1.0).
    if not isinstance(body, Mapping):
        raise _parse_error("`constant_score` must be an object")
    if "filter" not in body:
        raise _parse_error("`constant_score` requires a `filter` clause")
    if score(body["filter"], source, doc_id) is None:
        return None
    return boost_of(body.get("boost"))


def _clauses(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []


def _bool(body: Mapping[str, Any], source: Mapping[str, Any], doc_id: str) -> float | None:
    # Every clause is scored before any decision, so a malformed clause is refused whatever the
    # document: XERJ parses the whole query before it runs it (parser.rs:250-337).
    must = [score(c, source, doc_id) for c in _clauses(body.get("must"))]
    filters = [score(c, source, doc_id) for c in _clauses(body.get("filter"))]
    must_not = [score(c, source, doc_id) for c in _clauses(body.get("must_not"))]
    scored = [score(c, source, doc_id) for c in _clauses(body.get("should"))]
    should = [s for s in scored if s is not None]
    if None in must or None in filters or any(s is not None for s in must_not):
        return None
    if body.get("should") and not should and not body.get("must") and not body.get("filter"):
        return None
    return sum(s for s in must if s is not None) + sum(should) or 1.0


def question(query: Any) -> str | None:
    """The rerank question a newer XERJ reads from a query, or None.

    rerank_stage.rs `infer_query` (at 11b0cd0): a single-key multi_match / semantic /
    simple_query_string with a string `query`, or a match / match_phrase whose first field is
    a string or has a string `query`. Anything else needs `rerank.query`.
    """
    if not isinstance(query, Mapping) or len(query) != 1:
        return None
    kind, body = next(iter(query.items()))
    if kind in ("multi_match", "semantic", "simple_query_string"):
        text = body.get("query") if isinstance(body, Mapping) else None
        return text if isinstance(text, str) else None
    if kind in ("match", "match_phrase") and isinstance(body, Mapping) and body:
        spec = next(iter(body.values()))
        text = spec.get("query") if isinstance(spec, Mapping) else spec
        return text if isinstance(text, str) else None
    return None


def new_engine_indices() -> dict[str, Index]:
    """The built-in corpus as indices of a new stand-in: its own documents, which a test may
    add to; their top-level lists (the companion vectors among them) are copies too."""
    return {
        name: Index(
            name,
            {
                doc_id: {k: v.copy() if isinstance(v, list) else v for k, v in source.items()}
                for doc_id, source in index.docs.items()
            },
            index.semantic_fields,
            MAPPINGS.get(name),
        )
        for name, index in _embedded_corpus().items()
    }


@functools.cache
def _embedded_corpus() -> dict[str, Index]:
    """The corpus as stored, embedded once per process: embedding is most of what starting a
    stand-in costs (~5 ms of CPU), and a test suite starts one per test. Never handed out."""
    indices: dict[str, Index] = {}
    for name, docs in CORPUS.items():
        index = Index(name, semantic_fields=SEMANTIC_FIELDS.get(name, ()))
        for doc in docs:
            doc = dict(doc)
            index.add(str(doc.pop("_id")), doc)
        indices[name] = index
    return indices


def top(items: Iterable[tuple[float, Any]], k: int) -> list[tuple[float, Any]]:
    return sorted(items, key=lambda p: -p[0])[:k]


def union(arms: Iterable[list[tuple[float, str]]]) -> list[tuple[float, str]]:
    """Every document an arm found, scored the sum of its scores in the arms, best first."""
    summed: dict[str, float] = {}
    for arm in arms:
        for s, doc_id in arm:
            summed[doc_id] = summed.get(doc_id, 0.0) + s
    return top(((s, d) for d, s in summed.items()), len(summed))
