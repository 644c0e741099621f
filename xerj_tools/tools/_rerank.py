"""The rerank block's rules as one limit kind (`rerank`): the fields XERJ's rerank stage reads,
their bounds, and how the block sits with the search around it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._problems import Problem
from ._limits import (
    Limit,
    _int_range,
    _int_value,
    _is_int,
    _is_number,
    _number_range,
)

__all__ = ["rerank"]

_KEYS = {
    "provider", "model", "window", "min_score", "query", "fields", "instructions",
    "timeout_ms", "max_doc_chars", "batch", "max_concurrency",
}  # fmt: skip
# Providers: the rerank stage advertises "jev" and "local" (rerank_stage.rs `status_document` @
# 11b0cd0) and answers any name its `Provider::from_settings` does not know with 400
# UnknownProvider (`status_for`); the other spellings here were accepted before and stay. There
# is no "cohere": the publishers' description offered it, docs/tools-corrections.md removes it.
_PROVIDERS = ("jev", "typesafe", "local", "none", "disabled")
# Clauses from which XERJ reads the rerank question itself (rerank_stage.rs `infer_query`).
_QUESTION_CLAUSES = {"match", "match_phrase", "multi_match", "semantic", "simple_query_string"}
_TEXTS = (("model", 128), ("query", 4000), ("instructions", 2000))
_INTS = (
    ("window", 1, 300),
    ("timeout_ms", 1, 60_000),
    ("max_doc_chars", 1, 8000),
    ("batch", 1, 300),
    ("max_concurrency", 1, 16),
)


def rerank(question_from: str | None = None) -> Limit:
    """`rerank`, where it is an object: known fields within their bounds, a page that fits its
    window, hits with source and no sort, and a question to judge against (`rerank.query`, or
    one question clause in the argument `question_from`).

    Its quick yes is its words (a block's rules are many), and its fragment says "no rerank":
    a call with one takes the longer path of the offline lane."""

    def needs_query(args: Mapping[str, Any]) -> bool:
        query = args.get(question_from) if question_from else None
        return not (
            isinstance(query, dict) and len(query) == 1 and next(iter(query)) in _QUESTION_CLAUSES
        )

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        block = args.get("rerank")
        if isinstance(block, dict):
            yield from _problems(args, block, needs_query=needs_query(args))

    def admits(args: Mapping[str, Any]) -> bool:
        # a rerank is one search call in many and costs XERJ a model's time: its words decide
        return next(problems(args), None) is None

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {"rerank": {"not": {}}}},
        given="rerank",
        kind="rerank()",
    )


def _problems(
    args: Mapping[str, Any], rerank: dict[str, Any], *, needs_query: bool
) -> Iterator[Problem]:
    p = "$.rerank"
    for key in rerank:
        if key not in _KEYS:
            yield Problem(
                f"{p}.{key}", f"unknown rerank field; supported: {', '.join(sorted(_KEYS))}"
            )
    provider = rerank.get("provider")
    if provider is not None and provider not in _PROVIDERS:
        yield Problem(f"{p}.provider", f"must be one of {', '.join(_PROVIDERS)}; got {provider!r}")
    for key, limit in _TEXTS:
        value = rerank.get(key)
        if key in rerank and not isinstance(value, str):
            yield Problem(f"{p}.{key}", "must be a string")
        elif isinstance(value, str) and len(value) > limit:
            yield Problem(f"{p}.{key}", f"must be at most {limit} characters; got {len(value)}")
    if "query" in rerank and isinstance(rerank["query"], str) and not rerank["query"].strip():
        yield Problem(f"{p}.query", "must be a non-empty question")
    for key, lo, hi in _INTS:
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
