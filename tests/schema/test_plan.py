"""Each tool's compiled limits end to end (`ToolSpec.plan`): its quick yes and its strict schema
against the tool's checks, `validate` and the offline lane.

Each limit is held to its own words in `test_limits.py`; here the tools are. Where a tool's quick
yes (`plan.admits`) says yes, or its strict schema (the schema, every fragment, its argument
names: jsonschema-rs) and the fragment's Python rest do, the checks (unknown arguments included)
find nothing and `validate` reports the call ok with no repair. Either may say no to a fine call
(the checks then decide), but not to the common ones: recorded calls of every tool pass both.
The strict schemas are checked with the bundled schemas and with schemas that state no type at
all (a tools file of one's own keeps the bundled limits by name): the fragments assume nothing of
the schema. The lane reads arguments as orjson decodes them, so each case is held to that form.
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
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import Problem, load_registry
from xerj_tools._bounds import _finite_numbers
from xerj_tools.tools import XERJ_TOOLS, Limit, Tool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls
from tool_examples import random_valid_arguments

from argument_values import argument_values

REGISTRY = load_registry()
NAMES = [spec.name for spec in REGISTRY]
_RERANK = ["provider", "model", "window", "min_score", "query", "fields", "instructions",
           "timeout_ms", "max_doc_chars", "batch", "max_concurrency", "bogus"]  # fmt: skip
NUMBERS = [-2, -1, 0, 1, 2, 10, 30, 300, 301, 2500, 2501, 4999, 5000, 5001, 9990, 10_000, 10_001,
           5000.0, 10.0, 1.0, 0.0, 0.5, 1.5, -0.0, 1e308, -1e308, math.nan, math.inf, 10**30,
           True, False]  # fmt: skip
TEXTS = ["", " ", "\x1c", "\u3000", "\x85", " a ", "東京", "docs", "agent", "_all", "a,b",
         "logs-*", ".", "..", "x" * 129, "x" * 300, "Bad NS", "jev", "cohere", "body", "false",
         "_private", "rrf", "linear", "docs,", "d*", "q" * 4001, "m.*a*b*c*d", "m.*a*b*c*d*e",
         "a*,b*,c*"]  # fmt: skip
LISTS = [[], [0.1, 0.2], [1e308, 1e308], [-1e308, 1e308, 1.0], [math.nan], [math.inf, 1.0],
         [1, "a"], ["title"], [""], [None], [{"_score": "desc"}], ["_score", 3], ["x.*a*a*a*a*c"],
         ["*a*", "b.*"], [True], [[1]]]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"semantic": {"body": {"query": "q"}}},
           {"term": {"a": 1}}, {"match": {}, "size": 3}, {"bool": {"must": []}}]  # fmt: skip
leaf, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, _RERANK, rerank_size=5)


def arguments(names: list[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(a tool of `names`, its arguments). The strategies are made here, once, not in each
    draw (where making them costs more than drawing from them)."""
    named = st.sampled_from(names)
    keys = {
        name: st.sampled_from(
            [*REGISTRY[name].parameters.get("properties", {}), "treshold", "_source"]
        )
        for name in names
    }
    anything = {name: st.dictionaries(key, value, max_size=6) for name, key in keys.items()}
    seed, changes = st.integers(0, 10_000), st.integers(1, 3)

    @st.composite
    def drawn(draw: Any) -> tuple[str, dict[str, Any]]:
        name = draw(named)
        if draw(st.booleans()):  # random arguments over the tool's own keys (and a few others)
            args = draw(anything[name])
        else:  # a recorded valid call with one to three arguments changed or added
            args = random_valid_arguments(name, draw(seed))
            for _ in range(draw(changes)):
                args[draw(keys[name])] = draw(value)
        return name, args

    return drawn()


def _problems(registry: Any, name: str, args: dict[str, Any]) -> list[Any]:
    return [p for check in registry[name].plan.checks for p in check(args)]


def _holds(registry: Any, name: str, args: Any, *, schema_valid: bool = False) -> None:
    """The checks find nothing and `validate` reports the call ok with no repair (where the
    schema holds: `schema_valid`, or the fast check says so)."""
    assert _problems(registry, name, args) == [], (name, args)
    try:
        text = json.dumps(args, allow_nan=False)
    except ValueError:
        return  # no JSON text holds NaN: validate reads it only as a dict
    spec = registry[name]
    if schema_valid or (spec.fast_check is not None and spec.fast_check(args)):
        result = registry.validate(name, text, repair=True)
        assert result.ok and not result.repairs, (name, args, result)


@settings(max_examples=500)
@given(arguments(NAMES))
def test_a_quick_yes_means_the_checks_and_validate_find_nothing(
    case: tuple[str, dict[str, Any]],
) -> None:
    name, args = case
    admits = REGISTRY[name].plan.admits
    if admits is not None and admits(args):
        _holds(REGISTRY, name, args)


@settings(max_examples=500)
@given(arguments(NAMES))
def test_the_checks_as_validation_asks_them_say_what_each_limit_says(
    case: tuple[str, dict[str, Any]],
) -> None:
    """`plan.explain` asks a limit only where its argument is given and its quick yes says no:
    the same problems, in the same order, as every limit's `problems`."""
    name, args = case
    plan = REGISTRY[name].plan
    assert [p for check in plan.explain for p in check(args)] == _problems(REGISTRY, name, args)


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
            args = random_valid_arguments(name, seed)
            assert spec.plan.admits is not None and spec.plan.admits(args), (name, args)
            assert _problems(REGISTRY, name, args) == []


def _refuse(args: Any) -> Any:
    yield Problem("$.q", "never")


def test_a_tool_without_a_quick_yes_runs_its_checks() -> None:
    tool = Tool(name="mine", build=lambda a: None, limits=(Limit(problems=_refuse),))  # type: ignore[arg-type,return-value]
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    registry = REGISTRY.with_definitions(
        [{"type": "function", "function": {"name": "mine", "parameters": params}}]
    ).with_limits({"mine": tool.limits_for(params)})
    assert registry["mine"].plan.admits is None
    assert "has no quick yes" in (registry["mine"].plan.why or "")
    assert not registry.validate("mine", '{"q": "x"}').ok
    # replacing a bundled tool's limits drops its quick yes, so the new checks always run
    replaced = REGISTRY.with_limits({"xerj_search": (_refuse,)})
    assert replaced["xerj_search"].plan.admits is None
    assert not replaced.validate("xerj_search", '{"index": "docs", "query": {}}').ok
    assert REGISTRY["xerj_list_indices"].plan.admits is None  # its checks run every time
    # a bundled tool given other limits keeps no quick yes of the rules it no longer runs
    search = XERJ_TOOLS["xerj_search"]
    params = REGISTRY["xerj_search"].parameters
    assert REGISTRY.with_limits({"xerj_search": search.limits_for(params)})[
        "xerj_search"
    ].plan.admits
    mine = replace(search, limits=(Limit(problems=_refuse),))
    assert (
        REGISTRY.with_limits({"xerj_search": mine.limits_for(params)})["xerj_search"].plan.admits
        is None
    )
    given = replace(search, limits=(Limit(problems=_refuse, admits=lambda a: False),))
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


@settings(max_examples=300)
@given(arguments(NAMES))
def test_integral_numbers_by_plan_match_the_full_walk(case: tuple[str, dict[str, Any]]) -> None:
    from xerj_tools._schema._validation import integral_numbers

    name, args = case
    schema = REGISTRY[name].schema
    got, want = integral_numbers(args, schema), _integral_reference(args, schema)
    assert got == want and (got is args) == (want is args)
    assert [type(v) for v in got.values()] == [type(v) for v in want.values()]


# The strict schemas, through the offline lane.


def _loose_registry(tmp: Path) -> Any:
    """The bundled tools with schemas that state no type, no requirement: only names (in draft 6,
    which reads fewer keywords than the default 2020-12)."""
    tools = []
    for spec in REGISTRY:
        names = list(spec.parameters.get("properties", {}))
        parameters = {
            "$schema": "http://json-schema.org/draft-06/schema#",  # no if/then, no dependentSchemas
            "type": "object",
            "properties": {name: {} for name in names},
        }
        tools.append(
            {"type": "function", "function": {"name": spec.name, "parameters": parameters}}
        )
    path = tmp / "loose.json"
    path.write_text(json.dumps(tools))
    return load_registry(path)


@pytest.fixture(scope="module")
def lanes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("orjson")  # the `fast` extra: the lane and its strict schemas
    pytest.importorskip("jsonschema_rs")
    from xerj_tools._offline import _lane

    loose = _loose_registry(tmp_path_factory.mktemp("strict"))
    return {"bundled": (REGISTRY, _lane.Lane(REGISTRY)), "loose": (loose, _lane.Lane(loose))}


def _strict_yes(lane: Any, name: str, args: Any) -> bool:
    strict = lane.tools[name][0]
    assert strict is not None, name
    plan = REGISTRY[name].plan
    assert lane.tools[name][1:3] == (plan.ints, plan.vectors)
    rest = all(type(args.get(key, 0)) is int for key in plan.ints) and all(
        type(args.get(key)) is not list or _finite_numbers(args[key]) for key in plan.vectors
    )
    return bool(strict(args) and rest)


def _strict_only(lane: Any) -> Any:
    """The lane with its longer way shut (schema says no): only its strict path says yes."""
    from xerj_tools._offline import _lane

    strict_lane = _lane.Lane.__new__(_lane.Lane)
    strict_lane._orjson = lane._orjson
    strict_lane.tools = {
        name: (*entry[:3], lambda value: False, *entry[4:]) for name, entry in lane.tools.items()
    }
    return strict_lane


def _line(name: str, args: Any) -> bytes:
    function = {"name": name, "arguments": json.dumps(args)}
    return json.dumps({"id": "c", "type": "function", "function": function}).encode()


@settings(max_examples=400)
@given(arguments(list(calls.TOOLS)), st.sampled_from(["bundled", "loose"]))
def test_a_strict_yes_means_the_quick_yes_the_checks_and_validate_say_yes(
    lanes: dict[str, Any], case: tuple[str, dict[str, Any]], which: str
) -> None:
    import orjson

    registry, lane = lanes[which]
    name, args = case
    try:
        args = orjson.loads(orjson.dumps(args))  # as the lane reads it
    except TypeError:
        return  # an integer orjson cannot write: no JSON line holds it
    if _strict_yes(lane, name, args):
        assert registry[name].plan.admits(args), (name, args)
        _holds(registry, name, args, schema_valid=True)
    # the lane's own strict path (it looks at integers only where the text holds a fraction)
    if _strict_only(lane).valid(_line(name, args)):
        assert registry[name].plan.admits(args), (name, args)
        _holds(registry, name, args, schema_valid=True)


SEARCH = {"index": "docs", "query": {"match": {"body": "tea"}}}


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("xerj_search", {**SEARCH, "size": 5000.0}),  # an integral float: JSON Schema's integer
        ("xerj_search", {**SEARCH, "size": 5e3}),
        ("xerj_search", {**SEARCH, "size": None}),
        ("xerj_search", {**SEARCH, "index": "-docs"}),
        ("xerj_search", {**SEARCH, "index": "a,+b"}),
        ("xerj_search", {**SEARCH, "index": "a..b"}),
        ("xerj_memory_store", {"namespace": "agent-edges", "text": "t"}),
        ("xerj_memory_store", {"namespace": "a..b", "text": "t"}),
        ("xerj_search", {**SEARCH, "from": 9995, "size": 10}),  # past the window
        ("xerj_search", {**SEARCH, "from": 5001, "size": 10}),  # fine, but stated only up to 5,000
        ("xerj_search", {**SEARCH, "rerank": {"query": "q"}}),  # a rerank: the longer path
        ("xerj_search", {**SEARCH, "source": []}),
        ("xerj_search", {**SEARCH, "query": {"match": {}, "size": 3}}),
        ("xerj_search", {**SEARCH, "track_total_hits": -2}),
        ("xerj_search", {**SEARCH, "index": "_private"}),
        ("xerj_search", {**SEARCH, "treshold": 0.5}),
        ("xerj_semantic_search", {"index": "d", "field": "\x1c", "query": "q"}),  # str.isspace
        ("xerj_semantic_search", {"index": "d", "field": "f", "query": "東京"}),  # no ASCII
        ("xerj_semantic_search", {"index": "d", "field": "f", "query": "q", "k": 0}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": [1e308, 1e308]}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": []}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": [1], "k": 10.0}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": [1], "k": 1e1}),
        ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {}, "boost": 2}]}),
        (
            "xerj_hybrid_search",
            {"index": "d", "queries": [{"query": {}}], "rrf_k": 5, "fusion": "linear"},
        ),
        ("xerj_hybrid_search", {"index": "d", "queries": []}),
        ("xerj_memory_store", {"namespace": "Bad NS", "text": "t"}),
        ("xerj_memory_store", {"namespace": "agent", "text": "t", "dedup_threshold": 1.5}),
        (
            "xerj_memory_recall",
            {"namespace": "agent", "query": "q", "k": 3000, "recency_weight": 0.5},
        ),
        ("xerj_memory_recall", {"namespace": "agent", "query": " "}),
        ("xerj_memory_recall", {"namespace": "agent", "vector": []}),
        ("xerj_get_document", {"index": "a,b", "id": "1"}),
        ("xerj_get_document", {"index": "_all", "id": "1"}),
        ("xerj_get_document", {"index": "docs", "id": ".."}),
        ("xerj_get_document", {"index": "docs", "id": "x" * 5001}),
    ],
)
def test_a_strict_schema_says_no_at_each_limit(
    lanes: dict[str, Any], name: str, args: dict[str, Any]
) -> None:
    for which in ("bundled", "loose"):
        assert not _strict_yes(lanes[which][1], name, args), which
        assert not _strict_only(lanes[which][1]).valid(_line(name, args)), which


def test_recorded_valid_calls_pass_the_strict_schema(lanes: dict[str, Any]) -> None:
    """It serves the common calls: every valid call of the benchmark's file without a rerank."""
    import orjson

    lane = lanes["bundled"][1]
    for name in calls.TOOLS:
        for seed in range(200):
            args = orjson.loads(orjson.dumps(calls._valid(random.Random(seed), name)))
            if "rerank" not in args:
                assert _strict_yes(lane, name, args), (name, args)
                _holds(REGISTRY, name, args, schema_valid=True)


def test_a_tool_has_a_strict_schema_only_where_each_limit_has_a_fragment(
    lanes: dict[str, Any],
) -> None:
    from xerj_tools._offline import _lane

    assert all(REGISTRY[name].plan.fragment is not None for name in calls.TOOLS)
    assert REGISTRY["xerj_list_indices"].plan.fragment is None
    assert "no fragment" in (REGISTRY["xerj_list_indices"].plan.why or "")
    replaced = REGISTRY.with_limits({"xerj_search": (lambda args: iter(()),)})
    assert replaced["xerj_search"].plan.fragment is None
    assert _lane.Lane(replaced).tools["xerj_search"][0] is None
    assert math.isfinite(1e308)  # the vector cases above: each finite, their sum is not


def test_a_bundled_strict_schema_is_one_schema() -> None:
    """Each bundled tool's strict schema is its schema with the fragments merged in (its
    properties, every name either requires, the subschemas of both), not ``allOf`` the three
    (about twice the cost a call in jsonschema-rs): a limit that requires an argument the
    schema requires too (the search's query) merges."""
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    for name in calls.TOOLS:
        spec = REGISTRY[name]
        seen: list[Any] = []

        def validator_for(schema: Any, seen: list[Any] = seen) -> Any:
            seen.append(schema)
            return jsonschema_rs.validator_for(schema)

        assert spec.plan.strict(spec.fast_check.schema, validator_for) is not None, name
        (root,) = seen
        assert root["additionalProperties"] is False, name
        assert root.keys() >= {"properties", "required"}, name
        required = spec.parameters.get("required", [])
        fragment = spec.plan.fragment or {}
        assert root["required"] == list(dict.fromkeys([*required, *fragment.get("required", [])]))
        assert len(root.get("allOf", [])) == len(fragment.get("allOf", [])) + len(
            spec.parameters.get("allOf", [])
        ), name


def test_recorded_valid_calls_with_a_rerank_pass_the_quick_yes() -> None:
    """A search with a rerank takes the lane's longer path: its quick yes passes the common ones,
    with the block's rarer fields too."""
    found = 0
    for seed in range(400):
        args = calls._valid(random.Random(seed), "xerj_search")
        if "rerank" in args:
            found += 1
            assert REGISTRY["xerj_search"].plan.admits(args), args
            fuller = {**args["rerank"], "provider": "jev", "model": "m", "min_score": 0.5,
                      "fields": ["title"], "timeout_ms": 5000, "instructions": "be strict"}  # fmt: skip
            assert REGISTRY["xerj_search"].plan.admits({**args, "rerank": fuller}), fuller
            _holds(REGISTRY, "xerj_search", {**args, "rerank": fuller}, schema_valid=True)
    assert found > 10
