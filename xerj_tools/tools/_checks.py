"""The limits the XERJ tool descriptions state in prose (and the engine enforces), as checks;
each tool attaches its own (`xerj_tools.tools`).

Each rule cites what it guards. Every check tolerates values of the wrong type: the schema
reports those, and the checks still run so that the model sees every problem in one message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeGuard

from .._problems import Check, Problem
from ._paths import index_problem, namespace_problem

__all__ = [
    "MAX_RESULT_WINDOW",
    "hybrid_problems",
    "recall_problems",
    "search_problems",
    "semantic_problems",
    "store_problems",
    "unknown_keys",
    "vector_problems",
]

# XERJ's parser refuses `from + size > 10000` (xerj-query/src/parser.rs:151-158); a kNN `k`
# feeds `size = max(size, k)` (xerj-api/src/es_compat.rs:5899), so the same bound applies to it.
MAX_RESULT_WINDOW = 10_000
# Recall with `recency_weight` fetches max(4k, 50) candidates (memory_api.rs:486-489) in one
# search whose from + size must stay within 10000 (memory_api.rs:498-501; parser.rs:154-158).
MAX_RECENCY_K = MAX_RESULT_WINDOW // 4
_RERANK_KEYS = {
    "provider", "model", "window", "min_score", "query", "fields", "instructions",
    "timeout_ms", "max_doc_chars", "batch", "max_concurrency",
}  # fmt: skip
# Providers: the rerank stage advertises "jev" and "local" (rerank_stage.rs `status_document` @
# 11b0cd0) and answers any name its `Provider::from_settings` does not know with 400
# UnknownProvider (`status_for`); the other spellings here were accepted before and stay. There
# is no "cohere": the publishers' description offered it, docs/tools-corrections.md removes it.
_RERANK_PROVIDERS = ("jev", "typesafe", "local", "none", "disabled")
# Clauses from which XERJ reads the rerank question itself (rerank_stage.rs `infer_query`).
_QUESTION_CLAUSES = {"match", "match_phrase", "multi_match", "semantic", "simple_query_string"}


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_range(
    args: Mapping[str, Any], key: str, lo: int, hi: int | None, path: str
) -> Iterator[Problem]:
    value = args.get(key)
    if not (_is_int(value) or (isinstance(value, float) and value.is_integer())):
        return
    assert isinstance(value, (int, float))
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        yield Problem(f"{path}.{key}", f"must be {bound}; got {value}")


def _number_range(
    args: Mapping[str, Any], key: str, lo: float, hi: float, path: str
) -> Iterator[Problem]:
    value = args.get(key)
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (not math.isfinite(value) or not lo <= value <= hi)
    ):
        yield Problem(f"{path}.{key}", f"must be a number from {lo:g} to {hi:g}; got {value}")


def _int_value(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if _is_int(value) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    return default


def unknown_keys(known: Sequence[str], hints: Mapping[str, str] | None = None) -> Check:
    """Refuse arguments the handler would silently drop, so the model never believes they ran."""
    allowed = frozenset(known)

    def check(args: Mapping[str, Any]) -> Iterator[Problem]:
        for key in args:
            if key not in allowed:
                hint = (hints or {}).get(key, f"this tool takes: {', '.join(known)}")
                yield Problem(
                    f"$.{key}" if key.isidentifier() else f"$[{key!r}]", f"unknown argument; {hint}"
                )

    return check


def _vector(args: Mapping[str, Any], key: str) -> Iterator[Problem]:
    value = args.get(key)
    if isinstance(value, list):
        if not value:
            yield Problem(f"$.{key}", "must be a non-empty array of numbers")
        for i, item in enumerate(value):
            if _is_number(item) and not math.isfinite(item):
                yield Problem(f"$.{key}[{i}]", f"must be a finite number; got {item}")


def _window(args: Mapping[str, Any], path: str = "$") -> Iterator[Problem]:
    yield from _int_range(args, "size", 0, MAX_RESULT_WINDOW, path)
    yield from _int_range(args, "from", 0, MAX_RESULT_WINDOW, path)
    total = _int_value(args, "from", 0) + _int_value(args, "size", 10)
    if total > MAX_RESULT_WINDOW and _int_value(args, "size", 10) <= MAX_RESULT_WINDOW:
        yield Problem(path, f"from + size must be at most {MAX_RESULT_WINDOW}; got {total}")


def _rerank(args: Mapping[str, Any], *, needs_query: bool) -> Iterator[Problem]:
    rerank = args.get("rerank")
    if not isinstance(rerank, dict):
        return
    p = "$.rerank"
    for key in rerank:
        if key not in _RERANK_KEYS:
            yield Problem(
                f"{p}.{key}", f"unknown rerank field; supported: {', '.join(sorted(_RERANK_KEYS))}"
            )
    provider = rerank.get("provider")
    if provider is not None and provider not in _RERANK_PROVIDERS:
        yield Problem(
            f"{p}.provider", f"must be one of {', '.join(_RERANK_PROVIDERS)}; got {provider!r}"
        )
    for key, limit in (("model", 128), ("query", 4000), ("instructions", 2000)):
        value = rerank.get(key)
        if key in rerank and not isinstance(value, str):
            yield Problem(f"{p}.{key}", "must be a string")
        elif isinstance(value, str) and len(value) > limit:
            yield Problem(f"{p}.{key}", f"must be at most {limit} characters; got {len(value)}")
    if "query" in rerank and isinstance(rerank["query"], str) and not rerank["query"].strip():
        yield Problem(f"{p}.query", "must be a non-empty question")
    for key, lo, hi in (
        ("window", 1, 300),
        ("timeout_ms", 1, 60_000),
        ("max_doc_chars", 1, 8000),
        ("batch", 1, 300),
        ("max_concurrency", 1, 16),
    ):
        if key in rerank and not _is_int(rerank[key]):
            yield Problem(f"{p}.{key}", f"must be an integer; got {rerank[key]!r}")
        yield from _int_range(rerank, key, lo, hi, p)
    if "min_score" in rerank and not _is_number(rerank["min_score"]):
        yield Problem(f"{p}.min_score", "must be a number from 0 to 1 (it is a probability)")
    yield from _number_range(rerank, "min_score", 0.0, 1.0, p)
    fields = rerank.get("fields")
    if "fields" in rerank and (
        not isinstance(fields, list)
        or not 1 <= len(fields) <= 64
        or not all(isinstance(f, str) and f for f in fields)
    ):
        yield Problem(f"{p}.fields", "must be an array of 1 to 64 field names")
    if "sort" in args:
        yield Problem(p, "cannot be combined with sort: the reranker decides the order; drop one")
    if _int_value(args, "size", 10) == 0:
        yield Problem(p, "cannot be combined with size 0: there would be nothing to judge")
    window = _int_value(rerank, "window", 30)
    reach = _int_value(args, "from", 0) + _int_value(args, "size", 10)
    if 1 <= window <= 300 and reach > window:
        yield Problem(
            p,
            f"from + size ({reach}) must fit inside the rerank window ({window}); "
            "raise rerank.window (max 300) or page within it",
        )
    if args.get("source") in (False, "false"):
        yield Problem(p, "cannot judge hits returned without source; drop source: false")
    if needs_query and not isinstance(rerank.get("query"), str):
        yield Problem(
            f"{p}.query",
            "is required: this search has no single question in it; "
            "give the natural-language question to judge against",
        )


def _query_clause(value: Any, path: str) -> Iterator[Problem]:
    if isinstance(value, dict) and len(value) > 1:
        keys = ", ".join(sorted(value))
        yield Problem(
            path,
            f"a query clause has exactly one key, got {len(value)} ({keys}); "
            "size, from, sort, aggs and source are arguments of their own",
        )


SOURCE_KEYS = ("includes", "excludes", "include", "exclude")


def _source_object(source: Mapping[str, Any]) -> Iterator[Problem]:
    """`source` as an object: XERJ reads `includes` (or `include`) and `excludes` (or `exclude`),
    each a field name or a list of them (es_compat.rs:4577-4604 at e6e8e6a), and ignores any
    other key or value, which would then filter nothing: refused, with the form to use."""
    form = '{"includes": ["title"], "excludes": ["body_vector"]}'
    if not source or any(key not in SOURCE_KEYS for key in source):
        unknown = sorted(k for k in source if k not in SOURCE_KEYS)
        said = f"has {', '.join(unknown)}, which XERJ ignores" if unknown else "is empty"
        yield Problem(
            "$.source", f"as an object {said}; it takes includes and excludes, e.g. {form}"
        )
        return
    for key, value in source.items():
        names = [value] if isinstance(value, str) else value
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            yield Problem(
                f"$.source.{key}",
                "must be a field name or a non-empty array of field names; an empty list of "
                "includes returns every field",
            )


def search_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := index_problem(args.get("index"))) is not None:
        yield problem
    if "query" not in args:
        # XERJ reads a search without `query` as match_all (es_compat.rs:4519 at e6e8e6a,
        # `unwrap_or(json!({"match_all": {}}))`); a model that forgot its filter would get every document,
        # so the call is refused with the one-step fix rather than repaired (docs/validation.md).
        yield Problem(
            "$.query",
            'is required: send {} (or {"match_all": {}}) to search every document, for '
            "instance with size 0 and aggs, or the query you meant",
        )
    yield from _query_clause(args.get("query"), "$.query")
    yield from _window(args)
    source = args.get("source")
    yield from _source_patterns(source)
    if isinstance(source, list) and not all(isinstance(f, str) and f for f in source):
        yield Problem("$.source", "an array of source fields must hold non-empty field names")
    if isinstance(source, dict):
        yield from _source_object(source)
    if source == []:
        # XERJ reads [] as an empty include list (es_compat.rs:4570-4576 at e6e8e6a), and an
        # empty include list keeps every field, embeddings too (index.rs:15717-15721).
        yield Problem(
            "$.source",
            "must name at least one field; an empty list returns every field. "
            "Omit source for the default, or use false for none",
        )
    sort = args.get("sort")
    if isinstance(sort, list) and not all(isinstance(s, (str, dict)) for s in sort):
        yield Problem(
            "$.sort", 'each sort entry is a field name or an object like {"date": "desc"}'
        )
    tth = args.get("track_total_hits")
    if _is_int(tth) and tth < -1:
        yield Problem(
            "$.track_total_hits", f"must be true, false, -1 or a non-negative cap; got {tth}"
        )
    query = args.get("query")
    needs_query = not (
        isinstance(query, dict) and len(query) == 1 and next(iter(query)) in _QUESTION_CLAUSES
    )
    yield from _rerank(args, needs_query=needs_query)


MAX_SOURCE_STARS = 4
"""The most `*` one `source` pattern may hold. XERJ matches a dotted pattern by backtracking
(index.rs:15737-15771 `glob_match` at e6e8e6a, used when any pattern has a dot), at a cost that
grows with a field name's length to the power of the number of `*`: 11 of them against a
26-letter name take XERJ minutes. Four cover any pattern a person writes (`meta.*.id`, `*name*`)."""


def _source_patterns(source: Any) -> Iterator[Problem]:
    """`source` read as XERJ reads it (es_compat.rs:4561-4605 at e6e8e6a): a string is a
    comma-separated list, an object holds `includes`/`include` and `excludes`/`exclude`."""
    if isinstance(source, str) and source not in ("true", "false"):
        patterns: list[str] = source.split(",")
    elif isinstance(source, list):
        patterns = [p for p in source if isinstance(p, str)]
    elif isinstance(source, dict):
        patterns = []
        for plural, singular in (("includes", "include"), ("excludes", "exclude")):
            value = source.get(plural, source.get(singular))
            if isinstance(value, str):
                patterns.append(value)
            elif isinstance(value, list):
                patterns += [p for p in value if isinstance(p, str)]
    else:
        return
    for pattern in patterns:
        if pattern.count("*") > MAX_SOURCE_STARS:
            shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
            yield Problem(
                "$.source",
                f"the pattern {shown!r} holds {pattern.count('*')} `*`; at most "
                f'{MAX_SOURCE_STARS} are allowed (e.g. "meta.*.id")',
            )
            return


def _k_and_size(args: Mapping[str, Any]) -> Iterator[Problem]:
    yield from _int_range(args, "k", 1, MAX_RESULT_WINDOW, "$")
    yield from _int_range(args, "size", 0, MAX_RESULT_WINDOW, "$")


def _non_empty_string(args: Mapping[str, Any], key: str, what: str) -> Iterator[Problem]:
    value = args.get(key)
    if isinstance(value, str) and not value.strip():
        yield Problem(f"$.{key}", f"must be a non-empty {what}")


def semantic_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := index_problem(args.get("index"))) is not None:
        yield problem
    yield from _non_empty_string(args, "field", "field name")
    yield from _non_empty_string(args, "query", "question")
    yield from _k_and_size(args)
    yield from _query_clause(args.get("filter"), "$.filter")


def vector_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := index_problem(args.get("index"))) is not None:
        yield problem
    yield from _non_empty_string(args, "field", "field name")
    yield from _vector(args, "query_vector")
    yield from _k_and_size(args)
    yield from _int_range(args, "num_candidates", 1, MAX_RESULT_WINDOW, "$")
    yield from _query_clause(args.get("filter"), "$.filter")


def hybrid_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := index_problem(args.get("index"))) is not None:
        yield problem
    queries = args.get("queries")
    if isinstance(queries, list):
        if not queries:
            yield Problem("$.queries", 'must hold at least one {"query": {...}} sub-query')
        for i, sub in enumerate(queries):
            if isinstance(sub, dict):
                yield from _query_clause(sub.get("query"), f"$.queries[{i}].query")
                for key in sub:
                    if key not in ("query", "weight"):
                        yield Problem(
                            f"$.queries[{i}].{key}",
                            "unknown key; a sub-query has `query` and `weight`",
                        )
                weight = sub.get("weight")
                if _is_number(weight) and not math.isfinite(weight):
                    yield Problem(f"$.queries[{i}].weight", "must be a finite number")
    yield from _int_range(args, "rrf_k", 1, None, "$")
    if "rrf_k" in args and args.get("fusion", "rrf") != "rrf":
        yield Problem("$.rrf_k", 'applies only to fusion "rrf"; drop it or use fusion "rrf"')
    yield from _int_range(args, "size", 0, MAX_RESULT_WINDOW, "$")
    yield from _rerank(args, needs_query=True)


def store_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := namespace_problem(args.get("namespace"))) is not None:
        yield problem
    yield from _vector(args, "vector")
    text, vector = args.get("text"), args.get("vector")
    if isinstance(text, str) and not text.strip() and not (isinstance(vector, list) and vector):
        yield Problem("$.text", "must be non-empty unless a vector is given")
    if "id" in args and isinstance(args["id"], str) and not args["id"].strip():
        yield Problem("$.id", "must be a non-empty string, or omitted")
    yield from _number_range(args, "dedup_threshold", 0.0, 1.0, "$")


def recall_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    if (problem := namespace_problem(args.get("namespace"))) is not None:
        yield problem
    yield from _vector(args, "vector")
    yield from _int_range(args, "k", 1, MAX_RESULT_WINDOW, "$")
    yield from _number_range(args, "recency_weight", 0.0, 1.0, "$")
    k = _int_value(args, "k", 10)
    if args.get("recency_weight") is not None and MAX_RECENCY_K < k <= MAX_RESULT_WINDOW:
        yield Problem(
            "$.k",
            f"must be at most {MAX_RECENCY_K} with recency_weight; got {k}. XERJ fetches "
            f"4 × k candidates to re-rank by recency, and one search may fetch at most "
            f"{MAX_RESULT_WINDOW}. Lower k, or drop recency_weight",
        )
    query, vector = args.get("query"), args.get("vector")
    has_vector = isinstance(vector, list) and len(vector) > 0
    has_query = isinstance(query, str) and bool(query.strip())
    if args.get("semantic") is True and not has_vector and not has_query:
        yield Problem("$.query", "semantic recall needs a non-empty query")
    elif not has_vector and not has_query and "vector" not in args:
        if "query" in args:
            yield Problem("$.query", "must be a non-empty string")
        else:
            yield Problem("$", "give a query (text) or a vector to recall by")
