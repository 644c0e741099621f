"""The strict schemas of the valid lane (`ToolSpec.plan.strict`, from the limits' fragments) against the quick yes,
the checks and `validate`.

Where a tool's strict schema (its schema, the fragment, its argument names: jsonschema-rs) and the
fragment's Python rest both say yes, the tool's quick yes says yes, its checks find nothing, and
`validate` reports the call ok with no repair. The lane reads arguments as orjson decodes them,
so each case is held to that form. Checked with the bundled schemas and with schemas that state
no type at all (a tools file of one's own keeps the bundled checks by name): the fragment and
its rest assume nothing of the schema.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import load_registry
from xerj_tools._offline import _lane

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls

from argument_values import argument_values

orjson = pytest.importorskip("orjson")  # the `fast` extra: the lane and its strict schemas
pytest.importorskip("jsonschema_rs")

REGISTRY = load_registry()
NAMES = [name for name in calls.TOOLS]
_RERANK = ["provider", "model", "window", "query", "fields", "bogus"]
NUMBERS = [-2, -1, 0, 1, 2, 10, 30, 2500, 2501, 4999, 5000, 5001, 9990, 10_000, 10_001,
           5000.0, 10.0, 1.0, 0.0, 0.5, 1.5, -0.0, 1e308, -1e308, 1e300, True, False]  # fmt: skip
TEXTS = ["", " ", "\x1c", "\u3000", "\x85", " a ", "東京", "docs", "agent", "_all", "a,b",
         "logs-*", ".", "..", "x" * 129, "x" * 300, "Bad NS", "false", "_private", "rrf",
         "linear", "docs,", "d*"]  # fmt: skip
LISTS = [[], [0.1, 0.2], [1e308, 1e308], [-1e308, 1e308, 1.0], [1, "a"], ["title"], [""],
         [None], [{"_score": "desc"}], ["_score", 3], [True], [[1]]]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"semantic": {"body": {"query": "q"}}},
           {"match": {}, "size": 3}, {"bool": {"must": []}}]  # fmt: skip
leaf, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, _RERANK)


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
    loose = _loose_registry(tmp_path_factory.mktemp("strict"))
    return {"bundled": (REGISTRY, _lane.Lane(REGISTRY)), "loose": (loose, _lane.Lane(loose))}


@st.composite
def arguments(draw: Any) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(NAMES))
    keys = [*REGISTRY[name].parameters["properties"], "treshold"]
    if draw(st.booleans()):
        args = draw(st.dictionaries(st.sampled_from(keys), value, max_size=6))
    else:  # a recorded valid call with one to three arguments changed or added
        args = calls._valid(random.Random(draw(st.integers(0, 10_000))), name)
        for _ in range(draw(st.integers(1, 3))):
            args[draw(st.sampled_from(keys))] = draw(value)
    return name, args


def _strict_yes(lane: Any, name: str, args: Any) -> bool:
    strict = lane.tools[name][0]
    assert strict is not None, name
    plan = REGISTRY[name].plan
    assert lane.tools[name][1:3] == (plan.ints, plan.vectors)
    return bool(strict(args) and _rest(plan, args))


def _rest(plan: Any, args: Any) -> bool:
    """The fragment's Python rest: integers are Python ints, vectors have a finite sum."""
    from xerj_tools._bounds import _finite_numbers

    return all(type(args.get(key, 0)) is int for key in plan.ints) and all(
        type(args.get(key)) is not list or _finite_numbers(args[key]) for key in plan.vectors
    )


def _strict_only(lane: Any) -> Any:
    """The lane with its old way shut (schema says no): only its strict path says yes."""
    strict_lane = _lane.Lane.__new__(_lane.Lane)
    strict_lane._orjson = lane._orjson
    strict_lane.tools = {
        name: (*entry[:3], lambda value: False, *entry[4:]) for name, entry in lane.tools.items()
    }
    return strict_lane


def _line(name: str, args: Any) -> bytes:
    function = {"name": name, "arguments": json.dumps(args)}
    return json.dumps({"id": "c", "type": "function", "function": function}).encode()


def _holds(registry: Any, name: str, args: Any) -> None:
    spec = registry[name]
    assert spec.plan.admits(args), (name, args)
    assert [p for check in spec.checks for p in check(args)] == [], (name, args)
    result = registry.validate(name, json.dumps(args), repair=True)
    assert result.ok and not result.repairs, (name, args, result)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments(), st.sampled_from(["bundled", "loose"]))
def test_a_strict_yes_means_the_quick_yes_the_checks_and_validate_say_yes(
    lanes: dict[str, Any], case: tuple[str, dict[str, Any]], which: str
) -> None:
    registry, lane = lanes[which]
    name, args = case
    args = orjson.loads(orjson.dumps(args))  # as the lane reads it
    if _strict_yes(lane, name, args):
        _holds(registry, name, args)
    # the lane's own strict path (it looks at integers only where the text holds a fraction)
    if _strict_only(lane).valid(_line(name, args)):
        _holds(registry, name, args)


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
    lane = lanes["bundled"][1]
    for name in calls.TOOLS:
        for seed in range(200):
            args = orjson.loads(orjson.dumps(calls._valid(random.Random(seed), name)))
            if "rerank" not in args:
                assert _strict_yes(lane, name, args), (name, args)
                _holds(REGISTRY, name, args)


def test_a_tool_has_a_strict_schema_only_where_each_limit_has_a_fragment() -> None:
    assert all(REGISTRY[name].plan.fragment is not None for name in NAMES)
    assert REGISTRY["xerj_list_indices"].plan.fragment is None
    assert "no fragment" in (REGISTRY["xerj_list_indices"].plan.why or "")
    replaced = REGISTRY.with_limits({"xerj_search": (lambda args: iter(()),)})
    assert replaced["xerj_search"].plan.fragment is None
    assert _lane.Lane(replaced).tools["xerj_search"][0] is None
    assert math.isfinite(1e308)  # the vector cases above: each finite, their sum is not
