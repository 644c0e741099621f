"""Each tool's quick "yes" (`ToolSpec.plan.admits`, its limits' `admits`) against its checks.

A quick yes must never hide a problem: where it says yes, the tool's checks (unknown arguments
included) find nothing, and `validate` reports the call ok with no repair. It may say no to a
fine call (the checks then decide), but not to the common ones: recorded calls of every tool
pass it.
"""

from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import load_registry
from xerj_tools.tools import XERJ_TOOLS, Limit, Tool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls

from argument_values import argument_values

REGISTRY = load_registry()
NAMES = [spec.name for spec in REGISTRY]
_RERANK = ["provider", "model", "window", "min_score", "query", "fields", "instructions",
           "timeout_ms", "max_doc_chars", "batch", "max_concurrency", "bogus"]  # fmt: skip

NUMBERS = [-2, -1, 0, 1, 2, 10, 30, 300, 301, 2500, 2501, 5000, 9990, 9999, 10_000, 10_001,
           5000.0, 10.0, 0.5, 1.5, -0.0, math.nan, math.inf, -math.inf, 10**30, True, False]  # fmt: skip
TEXTS = ["", " ", "docs", "agent", "_all", "a,b", "logs-*", ".", "..", "x" * 300, "Bad NS",
         "jev", "cohere", "body", "false", "_private", "docs,", "q" * 4001,
         "m.*a*b*c*d", "m.*a*b*c*d*e", "a*,b*,c*"]  # fmt: skip
LISTS = [[], [0.1, 0.2], [math.nan], [math.inf, 1.0], [1, "a"], ["title"], [""], [None],
         [{"_score": "desc"}], ["_score", 3], ["x.*a*a*a*a*c"], ["*a*", "b.*"], [10**400 if False else 1e308, 1e308], [True]]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"semantic": {"body": {"query": "q"}}},
           {"term": {"a": 1}}, {"match": {}, "size": 3}, {"bool": {"must": []}}]  # fmt: skip
leaf, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, _RERANK, rerank_size=5)


def _valid(name: str, seed: int) -> dict[str, Any]:
    if name == "xerj_list_indices":
        return {"pattern": "logs-*"}
    if name == "xerj_describe_index":
        return {"index": "docs"}
    return calls._valid(random.Random(seed), name)


def _keys(name: str) -> list[str]:
    return [*REGISTRY[name].parameters.get("properties", {}), "treshold", "_source"]


@st.composite
def arguments(draw: Any) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(NAMES))
    keys = _keys(name)
    if draw(st.booleans()):  # random arguments over the tool's own keys (and a few others)
        args = draw(st.dictionaries(st.sampled_from(keys), value, max_size=6))
    else:  # a recorded valid call with one to three arguments changed or added
        args = _valid(name, draw(st.integers(0, 10_000)))
        for _ in range(draw(st.integers(1, 3))):
            args[draw(st.sampled_from(keys))] = draw(value)
    return name, args


def _problems(name: str, args: dict[str, Any]) -> list[Any]:
    return [p for check in REGISTRY[name].checks for p in check(args)]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments())
def test_a_quick_yes_means_the_checks_find_nothing(case: tuple[str, dict[str, Any]]) -> None:
    name, args = case
    spec = REGISTRY[name]
    if spec.plan.admits is None or not spec.plan.admits(args):
        return
    assert _problems(name, args) == []
    if spec.fast_check is not None and spec.fast_check(args):
        try:
            text = json.dumps(args, allow_nan=False)
        except ValueError:
            return  # no JSON text holds NaN: validate reads it only as a dict
        result = REGISTRY.validate(name, text, repair=True)
        assert result.ok and not result.repairs, (args, result)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("xerj_search", {"index": "docs", "query": {}, "size": 5000.0}),  # an integral float
        ("xerj_search", {"index": "docs", "query": {}, "size": True}),  # a bool is no int
        ("xerj_search", {"index": "docs", "query": {}, "from": 9995, "size": 10}),  # the window
        ("xerj_search", {"index": "docs", "query": {}, "source": []}),
        ("xerj_search", {"index": "docs", "query": {}, "source": ["x.*a*a*a*a*c"]}),
        ("xerj_search", {"index": "docs", "query": {}, "source": "title,x.*a*a*a*a*c"}),
        ("xerj_search", {"index": "docs", "query": {}, "source": {"excludes": "x.*a*a*a*a*c"}}),
        ("xerj_search", {"index": "docs", "query": {}, "source": False, "rerank": {"query": "q"}}),
        ("xerj_search", {"index": "docs", "query": {}, "size": 40, "rerank": {"query": "q"}}),
        ("xerj_search", {"index": "docs", "query": {}, "rerank": {"window": 301, "query": "q"}}),
        ("xerj_search", {"index": "docs", "query": {}, "rerank": {}}),  # no question to judge
        ("xerj_search", {"index": "_private", "query": {}}),
        ("xerj_search", {"index": "docs", "query": {"match": {}, "size": 3}}),
        ("xerj_semantic_search", {"index": "docs", "field": " ", "query": "q"}),
        ("xerj_semantic_search", {"index": "docs", "field": "f", "query": "q", "k": 0}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": [1.0, math.nan]}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": []}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": [1.0], "k": 10_001}),
        ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {}, "boost": 2}]}),
        (
            "xerj_hybrid_search",
            {"index": "d", "queries": [{"query": {}}], "rrf_k": 5, "fusion": "x"},
        ),
        ("xerj_memory_store", {"namespace": "Bad NS", "text": "t"}),
        ("xerj_memory_store", {"namespace": "agent", "text": "t", "dedup_threshold": 1.5}),
        (
            "xerj_memory_recall",
            {"namespace": "agent", "query": "q", "k": 3000, "recency_weight": 0.5},
        ),
        ("xerj_memory_recall", {"namespace": "agent", "query": " "}),
        ("xerj_get_document", {"index": "a,b", "id": "1"}),
        ("xerj_get_document", {"index": "docs", "id": ".."}),
        ("xerj_search", {"index": "docs", "query": {}, "treshold": 0.5}),  # an unknown argument
    ],
)
def test_a_quick_yes_says_no_at_each_limit(name: str, args: dict[str, Any]) -> None:
    admits = REGISTRY[name].plan.admits
    assert admits is not None
    assert not admits(args)


def test_recorded_valid_calls_pass_the_quick_yes() -> None:
    """The shortcut serves the common calls: every valid call of the benchmark's file passes."""
    for name in calls.TOOLS:
        spec = REGISTRY[name]
        for seed in range(200):
            args = _valid(name, seed)
            assert spec.plan.admits is not None and spec.plan.admits(args), (name, args)
            assert _problems(name, args) == []


def test_a_tool_without_a_quick_yes_runs_its_checks() -> None:
    def refuse(args: Any) -> Any:
        from xerj_tools._problems import Problem

        yield Problem("$.q", "never")

    tool = Tool(name="mine", build=lambda a: None, limits=(Limit(problems=refuse),))  # type: ignore[arg-type,return-value]
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    registry = REGISTRY.with_definitions(
        [{"type": "function", "function": {"name": "mine", "parameters": params}}]
    ).with_limits({"mine": tool.limits_for(params)})
    assert registry["mine"].plan.admits is None
    assert "has no quick yes" in (registry["mine"].plan.why or "")
    assert not registry.validate("mine", '{"q": "x"}').ok
    # replacing a bundled tool's limits drops its quick yes, so the new checks always run
    replaced = REGISTRY.with_limits({"xerj_search": (refuse,)})
    assert replaced["xerj_search"].plan.admits is None
    assert not replaced.validate("xerj_search", '{"index": "docs", "query": {}}').ok
    assert REGISTRY["xerj_list_indices"].plan.admits is None  # its checks run every time
    # a bundled tool given other limits keeps no quick yes of the rules it no longer runs
    search = XERJ_TOOLS["xerj_search"]
    params = REGISTRY["xerj_search"].parameters
    assert REGISTRY.with_limits({"xerj_search": search.limits_for(params)})[
        "xerj_search"
    ].plan.admits
    mine = replace(search, limits=(Limit(problems=refuse),))
    assert (
        REGISTRY.with_limits({"xerj_search": mine.limits_for(params)})["xerj_search"].plan.admits
        is None
    )
    given = replace(search, limits=(Limit(problems=refuse, admits=lambda a: False),))
    assert REGISTRY.with_limits({"xerj_search": given.limits_for(params)})[
        "xerj_search"
    ].plan.admits


def _integral_reference(value: Any, schema: Any) -> Any:
    """`integral_numbers` as it was before its per-schema plan: every key visited."""
    from collections.abc import Mapping

    from xerj_tools._schema._validation import _integer_only

    if type(value) is float:
        return int(value) if value.is_integer() and _integer_only(schema) else value
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict) and isinstance(properties := schema.get("properties"), Mapping):
        changed = {}
        for key, item in value.items():
            sub = properties.get(key)
            if isinstance(sub, Mapping) and (
                type(item) is float or "properties" in sub or "items" in sub
            ):
                new = _integral_reference(item, sub)
                if new is not item:
                    changed[key] = new
        return {**value, **changed} if changed else value
    items = schema.get("items")
    if (
        isinstance(value, list)
        and isinstance(items, Mapping)
        and (_integer_only(items) or "properties" in items or "items" in items)
    ):
        new_items = [_integral_reference(item, items) for item in value]
        return (
            new_items if any(a is not b for a, b in zip(new_items, value, strict=True)) else value
        )
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments())
def test_integral_numbers_by_plan_match_the_full_walk(case: tuple[str, dict[str, Any]]) -> None:
    from xerj_tools._schema._validation import integral_numbers

    name, args = case
    schema = REGISTRY[name].schema
    got, want = integral_numbers(args, schema), _integral_reference(args, schema)
    assert got == want and (got is args) == (want is args)
    assert [type(v) for v in got.values()] == [type(v) for v in want.values()]
