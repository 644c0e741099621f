"""An in-memory imitation of XERJ's search and memory semantics, for the stand-in server.

It answers with XERJ's shapes, status codes and error bodies (see the contract notes cited in
each function), over a tiny corpus. Its ranking is deliberately simple: it is a stand-in for
tests and the demo, not a search engine.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._corpus import CORPUS, SEMANTIC_FIELDS

Result = tuple[int, dict[str, Any]]
DIMS = 384
_WORD = re.compile(r"\w+")
# The allow-list of top-level `_search` keys of the older engine (contract §2.1).
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
_QUESTION_CLAUSES = ("match", "match_phrase", "multi_match", "semantic", "simple_query_string")
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,199}$")


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
    return QueryError(400, "search_phase_execution_exception", f"parse error: {reason}")


def tokens(text: Any) -> list[str]:
    return _WORD.findall(str(text).lower()) if text is not None else []


def embed(text: str) -> list[float]:
    """A feature-hash embedding, like XERJ's built-in lexical embedder (384 dims)."""
    vec = [0.0] * DIMS
    for tok in tokens(text):
        h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "big")
        vec[h % DIMS] += 1.0 if h & 1 << 20 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [round(v / norm, 6) for v in vec]


def cosine_score(a: list[float], b: list[float]) -> float | None:
    if len(a) != len(b):
        return None  # XERJ silently skips a vector of another length (contract §5)
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.5
    return (1 + sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)) / 2  # (1+cos)/2


@dataclass
class Index:
    name: str
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    semantic_fields: tuple[str, ...] = ()

    def add(self, doc_id: str, source: Mapping[str, Any]) -> None:
        stored = dict(source)
        for f in self.semantic_fields:
            if isinstance(stored.get(f), str):
                stored[f"{f}_vector"] = embed(stored[f])  # vectors live in _source (contract §3.4)
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
    fields = (
        [k for k in source if fnmatch.fnmatch(k, fieldname)] if "*" in fieldname else [fieldname]
    )
    best = 0.0
    for f in fields:
        doc_words = [t for v in _field_values(source, f) for t in tokens(v)]
        hits = sum(1 for t in doc_words if t in words)
        if hits:
            best = max(best, hits / (len(doc_words) ** 0.5) * len(words & set(doc_words)))
    return round(best, 6)


def _single(clause: Mapping[str, Any]) -> tuple[str, Any]:
    if len(clause) != 1:
        raise _parse_error(f"a query clause must have exactly one key, got {sorted(clause)}")
    return next(iter(clause.items()))


def _range_ok(values: list[Any], spec: Mapping[str, Any]) -> bool:
    for v in values:
        try:
            if all(
                (op != "gte" or v >= b)
                and (op != "gt" or v > b)
                and (op != "lte" or v <= b)
                and (op != "lt" or v < b)
                for op, b in spec.items()
            ):
                return True
        except TypeError:
            continue
    return False


def score(clause: Any, source: Mapping[str, Any]) -> float | None:
    """None: no match. Otherwise the (toy) relevance score of `source` for `clause`."""
    if not isinstance(clause, Mapping):
        raise _parse_error("query must be an object")
    if not clause:
        return 1.0
    kind, body = _single(clause)
    if kind == "match_all":
        return 1.0
    if kind in ("match", "match_phrase"):
        fieldname, spec = _single(body) if isinstance(body, Mapping) else ("", None)
        text = spec.get("query") if isinstance(spec, Mapping) else spec
        if kind == "match_phrase":
            joined = " ".join(str(v).lower() for v in _field_values(source, fieldname))
            return 2.0 if str(text).lower() in joined else None
        s = _text_score(source, fieldname, text)
        return s or None
    if kind in ("multi_match", "simple_query_string"):
        fields = body.get("fields") or ["*"]
        s = max(_text_score(source, f.split("^")[0], body.get("query")) for f in fields)
        return s or None
    if kind in ("term", "terms"):
        fieldname, spec = _single(body)
        wanted = (
            spec if kind == "terms" else [spec.get("value") if isinstance(spec, Mapping) else spec]
        )
        values = _field_values(source, fieldname.removesuffix(".keyword"))
        return 1.0 if any(v in values for v in wanted) else None
    if kind == "range":
        fieldname, spec = _single(body)
        return 1.0 if _range_ok(_field_values(source, fieldname), spec) else None
    if kind == "exists":
        return 1.0 if _field_values(source, body.get("field", "")) else None
    if kind == "bool":
        return _bool(body, source)
    raise _parse_error(f"unknown query type [{kind}]")


def _clauses(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []


def _bool(body: Mapping[str, Any], source: Mapping[str, Any]) -> float | None:
    total = 0.0
    for clause in _clauses(body.get("must")):
        s = score(clause, source)
        if s is None:
            return None
        total += s
    for clause in _clauses(body.get("filter")):
        if score(clause, source) is None:
            return None
    for clause in _clauses(body.get("must_not")):
        if score(clause, source) is not None:
            return None
    should = [s for c in _clauses(body.get("should")) if (s := score(c, source)) is not None]
    if body.get("should") and not should and not body.get("must") and not body.get("filter"):
        return None
    return total + sum(should) or 1.0


def question(query: Any) -> str | None:
    """The rerank question XERJ reads from a query, or None (contract §7)."""
    if not isinstance(query, Mapping) or len(query) != 1:
        return None
    kind, body = next(iter(query.items()))
    if kind not in _QUESTION_CLAUSES or not isinstance(body, Mapping):
        return None
    if kind in ("multi_match", "semantic", "simple_query_string"):
        return str(body.get("query", "")) or None
    _, spec = next(iter(body.items()))
    return str(spec.get("query") if isinstance(spec, Mapping) else spec)


def source_filter(source: Mapping[str, Any], spec: Any) -> dict[str, Any] | None:
    """Apply XERJ's `_source` forms: bool, "a,b", list, or {includes, excludes} (globs)."""
    if spec is None or spec is True or spec == "true":
        return dict(source)
    if spec is False or spec == "false":
        return None
    includes: list[str] = []
    excludes: list[str] = []
    if isinstance(spec, str):
        includes = [s.strip() for s in spec.split(",")]
    elif isinstance(spec, list):
        includes = [str(s) for s in spec]
    elif isinstance(spec, Mapping):
        inc = spec.get("includes", spec.get("include", []))
        exc = spec.get("excludes", spec.get("exclude", []))
        includes = [inc] if isinstance(inc, str) else list(inc)
        excludes = [exc] if isinstance(exc, str) else list(exc)
    return {
        k: v for k, v in source.items()
        if (not includes or any(fnmatch.fnmatchcase(k, p) for p in includes))
        and not any(fnmatch.fnmatchcase(k, p) for p in excludes)
    }  # fmt: skip


def new_engine_indices() -> dict[str, Index]:
    indices: dict[str, Index] = {}
    for name, docs in CORPUS.items():
        index = Index(name, semantic_fields=SEMANTIC_FIELDS.get(name, ()))
        for doc in docs:
            doc = dict(doc)
            index.add(str(doc.pop("_id")), doc)
        indices[name] = index
    return indices


@dataclass
class Memory:
    id: str
    text: str
    metadata: Any
    vector: list[float] | None
    embedding: list[float]
    stored_at: int


def memory_error(status: int, reason: str) -> Result:
    # Memory endpoints use their own error shape, without root_cause (contract §2.2, §8).
    return status, {"error": {"type": "memory_error", "reason": reason}, "status": status}


def namespace_error(ns: str) -> str | None:
    if not ns:
        return "namespace must not be empty"
    for ch in ns:
        if not (ch.islower() or ch.isdigit() or ch in "_-.") or not ch.isascii():
            return f"namespace contains illegal character '{ch}' (allowed: a-z 0-9 _ - .)"
    if not _NAMESPACE.match(ns):
        return "namespace must start with a-z or 0-9 and be at most 200 characters"
    if ".." in ns:
        return "namespace must not contain '..'"
    return None


def new_memory(body: Mapping[str, Any]) -> Memory:
    text = str(body.get("text", ""))
    vector = body.get("vector")
    return Memory(
        id=str(body.get("id") or uuid.uuid4()),
        text=text,
        metadata=body.get("metadata"),
        vector=[float(v) for v in vector] if isinstance(vector, list) else None,
        embedding=embed(text),
        stored_at=int(time.time() * 1000),
    )


def top(items: Iterable[tuple[float, Any]], k: int) -> list[tuple[float, Any]]:
    return sorted(items, key=lambda p: -p[0])[:k]
