"""Limits (`xerj_tools.tools._limits`): each one rule in three forms, held together.

For every limit the library declares (each kind as each tool uses it, the unknown-argument rule)
and every kind a user builds one from (`int_range`, `number_range`, `not_blank`), on random
arguments:

- `admits` says yes only where `problems` finds nothing, and where its `given` argument is
  absent;
- where the strict schema made of its `fragment` (with the Python rest: integers are Python
  ints, vectors have a finite sum) says yes, `admits` says yes.

And a limit declared once on a tool of one's own gives that tool its words, its quick yes and
its strict schema, with nothing else written.
"""

from __future__ import annotations

import functools
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import Dispatcher, HttpRequest, Limit, Problem, Tool, load_registry
from xerj_tools._bounds import _finite_numbers
from xerj_tools._offline._lane import Lane
from xerj_tools._schema._plan import plan_of
from xerj_tools.tools import int_range, not_blank, number_range

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls

from argument_values import argument_values

REGISTRY = load_registry()

# (id, limit, the argument names random calls use)
_KINDS = [
    ("int_range", int_range("n", 1, 5), ["n", "m"]),
    ("int_range open", int_range("n", 0), ["n"]),
    ("number_range", number_range("w", 0, 1), ["w", "n"]),
    ("not_blank", not_blank("t", "name"), ["t", "n"]),
]
_LIBRARY = [
    (f"{spec.name}:{limit.kind}", limit, [*spec.parameters.get("properties", {}), "_source"])
    for spec in REGISTRY
    for limit in spec.plan.limits
]
LIMITS = [*_KINDS, *_LIBRARY]
TOOLS = {spec.name: spec for spec in REGISTRY}

NUMBERS = [-2, -1, 0, 1, 2, 5, 6, 10, 30, 300, 301, 2500, 2501, 4999, 5000, 5001, 9990, 10_000,
           10_001, 5000.0, 10.0, 1.0, 0.0, 0.5, 1.5, -0.0, 1e308, math.nan, math.inf, True, False]  # fmt: skip
TEXTS = ["", " ", "\x1c", "\u3000", " a ", "東京", "docs", "agent", "_all", "a,b", "logs-*", ".",
         "..", "x" * 300, "Bad NS", "jev", "false", "_private", "rrf", "linear", "docs,",
         "m.*a*b*c*d*e"]  # fmt: skip
LISTS = [[], [0.1, 0.2], [1e308, 1e308], [math.nan], [1, "a"], ["title"], [""], [None],
         [{"_score": "desc"}], ["_score", 3], [True]]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"semantic": {"body": {"query": "q"}}},
           {"match": {}, "size": 3}, {"bool": {"must": []}}]  # fmt: skip
_RERANK = ["provider", "model", "window", "min_score", "query", "fields", "bogus"]
leaf, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, _RERANK, rerank_size=4)


@functools.cache
def arguments(names: tuple[str, ...], tool: str | None) -> st.SearchStrategy[dict[str, Any]]:
    """Random arguments over `names`: a recorded valid call of `tool`, changed, or any. Made
    once per (names, tool): a strategy built inside each draw costs more than the draw."""
    name, seed, changes = st.sampled_from(names), st.integers(0, 10_000), st.integers(1, 3)
    anything = st.dictionaries(name, value, max_size=6)

    @st.composite
    def drawn(draw: Any) -> dict[str, Any]:
        if tool in calls.TOOLS and draw(st.booleans()):  # a recorded valid call, changed
            args = calls._valid(random.Random(draw(seed)), tool)
            for _ in range(draw(changes)):
                args[draw(name)] = draw(value)
            return args
        return draw(anything)

    return drawn()


def _tool_of(case: str) -> str | None:
    return case.split(":")[0] if ":" in case else None


def _json_clean(args: Any) -> bool:
    try:
        json.dumps(args, allow_nan=False)
    except ValueError:
        return False
    return True


def _strict_validator() -> Any:
    """jsonschema-rs's `validator_for` (the `fast` extra), or None where it is not installed."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    return jsonschema_rs.validator_for


# One draw serves both properties of a limit (the draw costs more than the checks): each is
# checked on the same 150 random calls per limit as it would be on its own.
@pytest.mark.parametrize(("case", "limit", "names"), LIMITS, ids=[c for c, _, _ in LIMITS])
@settings(max_examples=150)
@given(data=st.data())
def test_a_limit_admits_only_without_a_problem_and_wherever_its_fragment_holds(
    case: str, limit: Limit, names: list[str], data: Any
) -> None:
    validator_for = _strict_validator()
    strict_too = limit.fragment is not None and validator_for is not None
    if limit.admits is None and not strict_too:
        return  # a Python-only limit: its problems run on every call
    tool = _tool_of(case)
    # the strict schema: the tool's own schema, or one that states nothing but the names (the
    # fragment assumes nothing of the schema)
    schema = (
        dict(TOOLS[tool].schema)
        if strict_too and tool is not None and data.draw(st.booleans())
        else {"type": "object", "properties": {name: {} for name in limit.names or names}}
    )  # (the unknown-argument rule's names are the schema's properties: `Tool.limits_for`)
    args = data.draw(arguments(tuple(names), tool))

    # `admits` says yes only where `problems` finds nothing, and where `given` is absent
    if limit.admits is not None:
        if limit.admits(args):
            assert list(limit.problems(args)) == [], (case, args)
        if limit.given is not None:  # the plan asks it only where its argument is given
            absent = {key: item for key, item in args.items() if key != limit.given}
            assert limit.admits(absent), (case, absent)
            assert list(limit.problems(absent)) == [], (case, absent)  # (`Plan.explain` skips it)

    # where the strict schema made of its fragment says yes (and the Python rest), it admits
    if not strict_too:
        return  # JSON Schema cannot state it (no strict schema), or no jsonschema-rs
    plan = plan_of((limit,), schema)
    strict = plan.strict(schema, validator_for)
    assert strict is not None, case
    if not _json_clean(args):
        return  # the lane reads JSON: no NaN reaches the strict schema
    rest = all(type(args.get(key, 0)) is int for key in plan.ints) and all(
        type(args.get(key)) is not list or _finite_numbers(args[key]) for key in plan.vectors
    )
    if strict(args) and rest:
        assert limit.admits is not None and limit.admits(args), (case, args)


def test_the_strict_schemas_are_checked_where_jsonschema_rs_is_installed() -> None:
    if _strict_validator() is None:
        pytest.skip("jsonschema-rs is not installed (the `fast` extra): no strict schema checked")


def _even(args: Any) -> Any:
    pages = args.get("pages")
    if type(pages) is int and pages % 2:
        yield Problem("$.pages", f"must be even (pages are printed two to a sheet); got {pages}")


PRINT = Tool(
    name="print_pages",
    build=lambda args: HttpRequest("POST", "/print/_search", {"size": 0}),
    description="Print pages.",
    parameters={
        "type": "object",
        "properties": {"pages": {"type": "integer"}, "title": {"type": "string"}},
        "required": ["pages"],
    },
    limits=(
        int_range("pages", 1, 20),
        not_blank("title", "title"),
        Limit(
            problems=_even,
            admits=lambda args: type(args.get("pages")) is not int or args["pages"] % 2 == 0,
            fragment={"properties": {"pages": {"multipleOf": 2}}},
            kind="even pages",
        ),
    ),
)


def test_a_limit_declared_once_gives_its_words_its_quick_yes_and_its_strict_schema() -> None:
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    with Dispatcher(url="http://127.0.0.1:9", tools=[PRINT]) as dispatcher:
        registry = dispatcher.registry
    spec = registry["print_pages"]
    # the words: every limit's problems (the report orders them by path)
    refused = registry.validate("print_pages", '{"pages": 31, "title": " ", "colour": 1}')
    assert sorted((p.path, p.message) for p in refused.problems) == [
        ("$.colour", "unknown argument; this tool takes: pages, title"),
        ("$.pages", "must be between 1 and 20; got 31"),
        ("$.pages", "must be even (pages are printed two to a sheet); got 31"),
        ("$.title", "must be a non-empty title"),
    ]
    # the quick yes: one, from every limit's admits
    plan = spec.plan
    assert plan.why is None and plan.admits is not None
    assert plan.admits({"pages": 4, "title": "x"})
    assert not plan.admits({"pages": 3}) and not plan.admits({"pages": 22})
    assert not plan.admits({"pages": 4, "colour": 1})
    assert registry.validate("print_pages", '{"pages": 4, "title": "Tea"}').ok
    # the strict schema: the tool's schema with every fragment, for the offline lane
    strict = plan.strict(spec.schema, jsonschema_rs.validator_for)
    assert strict is not None and plan.ints == ("pages",)
    assert strict({"pages": 4, "title": "Tea"})
    assert not strict({"pages": 3}) and not strict({"pages": 22}) and not strict({"title": " "})
    lane = Lane(registry)
    assert lane.tools["print_pages"][0] is not None  # the lane asks it


def test_a_limit_without_a_quick_yes_or_a_fragment_is_named_by_the_plan() -> None:
    slow = Tool(
        name="slow",
        build=lambda args: HttpRequest("GET", "/"),
        description="Slow.",
        parameters={"type": "object", "properties": {"pages": {"type": "integer"}}},
        limits=(int_range("pages", 1, 20), Limit(problems=_even, kind="even pages")),
    )
    with Dispatcher(url="http://127.0.0.1:9", tools=[slow]) as dispatcher:
        plan = dispatcher.registry["slow"].plan
    assert plan.admits is None and plan.fragment is None
    assert plan.why == (
        "even pages has no quick yes: its problems run on every call; "
        "even pages has no fragment: no strict schema"
    )
    assert not dispatcher.registry.validate("slow", '{"pages": 3}').ok


def test_a_tool_with_two_limits_keeps_every_fragment() -> None:
    plan = plan_of(
        (int_range("n", 1, 5), int_range("n", 0, 3), number_range("w", 0, 1)),
        {"type": "object", "properties": {"n": {}, "w": {}}},
    )
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    strict = plan.strict(
        {"type": "object", "properties": {"n": {}, "w": {}}}, jsonschema_rs.validator_for
    )
    assert strict is not None
    assert strict({"n": 2, "w": 0.5})
    assert not strict({"n": 4}) and not strict({"n": 0}) and not strict({"w": 2})


@pytest.mark.parametrize(
    "source",
    ["m.*a*b*c*d*e", ["m.*a*b*c*d*e"], {"includes": "a*b*c*d*e*"}, {"excludes": ["a*b*c*d*e*"]}],
)
def test_offline_validation_refuses_a_source_pattern_with_too_many_stars(source: Any) -> None:
    from xerj_tools import validate_batch

    args = {"index": "docs", "query": {}, "source": source}
    function = {"name": "xerj_search", "arguments": json.dumps(args)}
    line = json.dumps({"id": "c", "type": "function", "function": function})
    report = validate_batch([line], REGISTRY)
    assert report["invalid"] == 1
    assert "at most 4 are allowed" in report["results"][0]["problems"][0]["message"]
