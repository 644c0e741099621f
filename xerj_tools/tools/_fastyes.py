"""A quick "yes" per tool for the prose limits of `_checks`.

Each predicate here returns True only when its tool's checks would report no problem for the
arguments (a few dictionary look-ups and comparisons, no generator, no `Problem`). It may say
False for arguments that are in fact fine: the checks then run and decide, and explain what they
find. So a predicate is a shortcut to "valid" and never a verdict of its own; property tests
(tests/schema/test_fastyes.py) hold every one to its checks on random and mutated arguments.

A predicate assumes nothing of the schema: it is asked after the schema check said yes, but
holds on any dict. Integers must be Python ints (5000.0, a bool, a string say False): the checks
judge those. The unknown-argument rule is not here: it is a limit of its own (`known_arguments`).
Each predicate is bound to its check in one `Limit` (`_limits`), so a tool whose limits are
replaced never keeps the quick yes of rules it no longer runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._bounds import _finite_numbers
from ._checks import (
    _QUESTION_CLAUSES,
    _RERANK_KEYS,
    _RERANK_PROVIDERS,
    MAX_RECENCY_K,
    MAX_SOURCE_STARS,
)
from ._paths import _DOT_SEGMENTS, QUICK_ID_CHARS, _index_problem_of, _namespace_problem_of

__all__ = [
    "Yes",
    "document_yes",
    "hybrid_yes",
    "recall_yes",
    "search_yes",
    "semantic_yes",
    "store_yes",
    "vector_yes",
]

Yes = Callable[[Mapping[str, Any]], bool]
"""True only when a tool's checks find nothing in these arguments."""

_WINDOW = 10_000  # _checks.MAX_RESULT_WINDOW
_RERANK_INTS = (
    ("window", 1, 300),
    ("timeout_ms", 1, 60_000),
    ("max_doc_chars", 1, 8000),
    ("batch", 1, 300),
    ("max_concurrency", 1, 16),
)
_RERANK_TEXTS = (("model", 128), ("query", 4000), ("instructions", 2000))


# Names already found good (a few distinct names come again and again), bounded.
def _known_good(problem_of: Callable[[Any, str], Any], path: str) -> Callable[[Any], bool]:
    """A name's check (`_paths`' index or namespace rule) with its verdict on the names it
    passed kept (up to 4,096 of them, then forgotten at once): a non-string is the schema's
    business; a name of more than 256 characters is always asked."""
    good: set[str] = set()

    def ok(value: Any) -> bool:
        if type(value) is not str:
            return not isinstance(value, str)
        if value in good:
            return True
        if len(value) > 256 or problem_of(value, path) is not None:
            return False
        if len(good) >= 4096:
            good.clear()
        good.add(value)
        return True

    return ok


_index_ok = _known_good(_index_problem_of, "$.index")


def _int_in(args: Mapping[str, Any], key: str, lo: int, hi: int) -> bool:
    """Absent, null, or an int within [lo, hi] (anything else: the checks judge it)."""
    value = args.get(key)
    return value is None or (type(value) is int and lo <= value <= hi)


def _clause_ok(value: Any) -> bool:
    if value is None:
        return True
    if type(value) is dict:
        return len(value) <= 1
    return not isinstance(value, dict) or len(value) <= 1


def _text_ok(args: Mapping[str, Any], key: str) -> bool:
    """Not a blank string (_non_empty_string)."""
    value = args.get(key)
    if type(value) is str:
        return value != "" and not value.isspace()  # str.strip strips what isspace names
    return value is None or not isinstance(value, str) or bool(value.strip())


def _vector_ok(value: Any) -> bool:
    """_vector: no empty list, no number that is not finite (fsum: every item a finite number)."""
    if not isinstance(value, list):
        return True
    return bool(value) and _finite_numbers(value)


def _window_of(args: Mapping[str, Any]) -> tuple[int, int] | None:
    """(from, size) when both are absent or ints within the result window, else None."""
    size = args.get("size", 10)
    start = args.get("from", 0)
    if type(size) is not int or type(start) is not int:
        return None
    if not (0 <= size <= _WINDOW and 0 <= start <= _WINDOW) or start + size > _WINDOW:
        return None
    return start, size


def _rerank_ok(args: Mapping[str, Any], rerank: dict[str, Any], needs_query: bool) -> bool:
    """_rerank's rules, for a rerank object and a window already known to be plain ints."""
    if not rerank.keys() <= _RERANK_KEYS:
        return False
    provider = rerank.get("provider")
    if provider is not None and provider not in _RERANK_PROVIDERS:
        return False
    for key, limit in _RERANK_TEXTS:
        if key in rerank:
            value = rerank[key]
            if type(value) is not str or len(value) > limit:
                return False
    query = rerank.get("query")
    if (type(query) is str and not query.strip()) or (needs_query and query is None):
        return False
    for key, lo, hi in _RERANK_INTS:
        if key in rerank and not (type(rerank[key]) is int and lo <= rerank[key] <= hi):
            return False
    if "min_score" in rerank:
        score = rerank["min_score"]
        if type(score) not in (int, float) or not 0.0 <= score <= 1.0:
            return False
    if "fields" in rerank:
        fields = rerank["fields"]
        if type(fields) is not list or not 1 <= len(fields) <= 64:
            return False
        if not all(type(f) is str and f for f in fields):
            return False
    if "sort" in args or args.get("source") in (False, "false"):
        return False
    window = _window_of(args)
    if window is None or window[1] == 0:
        return False
    return bool(window[0] + window[1] <= rerank.get("window", 30))


def _source_object_yes(source: Mapping[str, Any]) -> bool:
    """`_checks._source_object` finds nothing."""
    if not source:
        return False
    for key, value in source.items():
        if key not in ("includes", "excludes", "include", "exclude"):
            return False
        names = [value] if type(value) is str else value
        if type(names) is not list or not names:
            return False
        for name in names:
            if type(name) is not str or not name or name.count("*") > MAX_SOURCE_STARS:
                return False
    return True


def search_yes(args: Mapping[str, Any]) -> bool:
    """search_problems finds nothing."""
    if not _index_ok(args.get("index")):
        return False
    size = args.get("size", 10)
    start = args.get("from", 0)
    if (
        type(size) is not int
        or type(start) is not int
        or not (0 <= size <= _WINDOW and 0 <= start <= _WINDOW)
        or start + size > _WINDOW
    ):
        return False
    if "query" not in args:
        return False
    query = args.get("query")
    if isinstance(query, dict) and len(query) > 1:
        return False
    source = args.get("source")
    if isinstance(source, list):
        if not source:
            return False
        for field in source:
            if type(field) is not str or not field or field.count("*") > MAX_SOURCE_STARS:
                return False
    elif isinstance(source, str):
        if source.count("*") > MAX_SOURCE_STARS:
            return False  # (every pattern's `*` together: the checks count them one by one)
    elif isinstance(source, dict) and not _source_object_yes(source):
        return False
    sort = args.get("sort")
    if isinstance(sort, list):
        for entry in sort:
            if not isinstance(entry, (str, dict)):
                return False
    tth = args.get("track_total_hits")
    if isinstance(tth, int) and tth < -1:
        return False
    rerank = args.get("rerank")
    if isinstance(rerank, dict):
        single = isinstance(query, dict) and next(iter(query), None) in _QUESTION_CLAUSES
        return _rerank_ok(args, rerank, needs_query=not single)
    return True


def semantic_yes(args: Mapping[str, Any]) -> bool:
    """semantic_problems finds nothing."""
    return (
        _index_ok(args.get("index"))
        and _text_ok(args, "field")
        and _text_ok(args, "query")
        and _int_in(args, "k", 1, _WINDOW)
        and _int_in(args, "size", 0, _WINDOW)
        and _clause_ok(args.get("filter"))
    )


def vector_yes(args: Mapping[str, Any]) -> bool:
    """vector_problems finds nothing."""
    return (
        _index_ok(args.get("index"))
        and _text_ok(args, "field")
        and _vector_ok(args.get("query_vector"))
        and _int_in(args, "k", 1, _WINDOW)
        and _int_in(args, "size", 0, _WINDOW)
        and _int_in(args, "num_candidates", 1, _WINDOW)
        and _clause_ok(args.get("filter"))
    )


def hybrid_yes(args: Mapping[str, Any]) -> bool:
    """hybrid_problems finds nothing."""
    if not _index_ok(args.get("index")) or not _int_in(args, "size", 0, _WINDOW):
        return False
    queries = args.get("queries")
    if isinstance(queries, list):
        if not queries:
            return False
        for sub in queries:
            if isinstance(sub, dict):
                if not _clause_ok(sub.get("query")) or not sub.keys() <= {"query", "weight"}:
                    return False
                weight = sub.get("weight")
                if (
                    weight is not None
                    and type(weight) is not int
                    and not (type(weight) is float and weight - weight == 0.0)
                ):
                    return False
    rrf_k = args.get("rrf_k")
    if rrf_k is not None and not (type(rrf_k) is int and rrf_k >= 1):
        return False
    if "rrf_k" in args and args.get("fusion", "rrf") != "rrf":
        return False
    rerank = args.get("rerank")
    if isinstance(rerank, dict):
        return _rerank_ok(args, rerank, needs_query=True)
    return True


_namespace_ok = _known_good(_namespace_problem_of, "$.namespace")


def _unit(args: Mapping[str, Any], key: str) -> bool:
    """_number_range(0, 1): absent, not a number, or a number from 0 to 1."""
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return type(value) in (int, float) and 0.0 <= value <= 1.0


def store_yes(args: Mapping[str, Any]) -> bool:
    """store_problems finds nothing."""
    return (
        _namespace_ok(args.get("namespace"))
        and _vector_ok(args.get("vector"))
        and _text_ok(args, "text")
        and _text_ok(args, "id")
        and _unit(args, "dedup_threshold")
    )


def recall_yes(args: Mapping[str, Any]) -> bool:
    """recall_problems finds nothing."""
    if not (
        _namespace_ok(args.get("namespace"))
        and _vector_ok(args.get("vector"))
        and _int_in(args, "k", 1, _WINDOW)
        and _unit(args, "recency_weight")
    ):
        return False
    k = args.get("k")
    if args.get("recency_weight") is not None and k is not None and k > MAX_RECENCY_K:
        return False
    query, vector = args.get("query"), args.get("vector")
    has_vector = isinstance(vector, list) and len(vector) > 0
    return has_vector or (isinstance(query, str) and bool(query.strip()))


def document_yes(args: Mapping[str, Any]) -> bool:
    """The get-document checks find nothing: one index, a plain id."""
    index = args.get("index")
    if not _index_ok(index):
        return False
    if type(index) is str and (index == "_all" or "," in index or "*" in index):
        return False
    doc_id = args.get("id")
    if type(doc_id) is not str:
        return not isinstance(doc_id, str)
    return bool(doc_id) and len(doc_id) <= QUICK_ID_CHARS and doc_id not in _DOT_SEGMENTS
