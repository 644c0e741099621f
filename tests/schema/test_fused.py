"""The dispatcher's one pass over the typical valid call (`xerj_tools/_schema/_fused.py`).

`checked_arguments` must answer exactly as the general path does (`validate_arguments` with the
fast check and the quick yes, then `integral_numbers`): where the one pass takes a call, the
general path finds it valid, repairs nothing and normalises it to an equal dict of the same
types; where it does not, the general path decides, with the quick decode handed on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import Dispatcher, Limit, ValidationResult, _json, load_registry, parse_tool_call
from xerj_tools._schema import _fused, _validation
from xerj_tools._schema._fused import checked_arguments, quick_plan
from xerj_tools._schema._registry import (
    ToolRegistry,
    _spec_from_definition,
    registry_from_definitions,
)
from xerj_tools._schema._validation import integral_numbers
from xerj_tools.tools._limits import known_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls
from tool_examples import random_valid_arguments

from argument_values import argument_values

REGISTRY = load_registry()
NAMES = [spec.name for spec in REGISTRY]
_RERANK = ["provider", "query", "window", "min_score", "fields", "bogus"]
NUMBERS = [-1, 0, 1, 5, 10, 30, 301, 5000, 10_000, 10_001, 5000.0, 10.0, 0.5, -0.0, 10**30,
           True, False, 2**63]  # fmt: skip
TEXTS = ["", " ", "docs", "agent", "_all", "a,b", "logs-*", "..", "Bad NS", "jev", "rrf",
         "linear", "body", "false", "x" * 300]  # fmt: skip
LISTS = [[], [0.1, 0.2], [1, "a"], ["title"], [""], [None], [{"_score": "desc"}], [1.0, 2],
         [True], [[1.0]]]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"term": {"a": 1}}, {"match": {}, "size": 3}]
leaf, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, _RERANK, rerank_size=4)


@pytest.fixture(autouse=True)
def _orjson(request: pytest.FixtureRequest) -> None:
    """The quick decode reads with orjson once something has loaded it (a dispatch's answer);
    without the `fast` extra (CI's run with the lowest versions) only the no-orjson test runs."""
    if not _json._load() and "without_orjson" not in request.node.name:
        pytest.skip("orjson is not installed (the `fast` extra)")


# The strategies a draw takes from, made once (making them in each draw costs more than drawing).
_NAMED = st.sampled_from(NAMES)
_KEYS = {
    name: st.sampled_from([*REGISTRY[name].parameters.get("properties", {}), "treshold"])
    for name in NAMES
}
_ANYTHING = {name: st.dictionaries(key, value, max_size=6) for name, key in _KEYS.items()}


@st.composite
def arguments(draw: Any) -> tuple[str, dict[str, Any]]:
    name = draw(_NAMED)
    if draw(st.booleans()):
        args = draw(_ANYTHING[name])
    else:  # a recorded valid call, mostly left as it is (the one pass's case), or changed
        args = random_valid_arguments(name, draw(st.integers(0, 10_000)))
        for _ in range(draw(st.integers(0, 2))):
            args[draw(_KEYS[name])] = draw(value)
    return name, args


def _general(spec: Any, text: str, repair: bool) -> Any:
    """The general path alone, as the dispatcher took it before the one pass."""
    result = spec.validate(text, repair=repair)
    if not result.ok or result.arguments is None:
        return result
    return integral_numbers(result.arguments, spec.schema), result.repairs


class Taken:
    """Records whether `checked_arguments` handed a call to the general path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.general = 0
        original = _fused.general_path

        def counted(*args: Any, **kwargs: Any) -> ValidationResult:
            self.general += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(_fused, "general_path", counted)


def _same(got: Any, want: Any) -> None:
    """Equal results, numbers of the same types (5 is no 5.0 here)."""
    if isinstance(want, ValidationResult):
        assert isinstance(got, ValidationResult)
        assert (got.ok, got.problems, got.repairs, got.decode_error) == (
            want.ok,
            want.problems,
            want.repairs,
            want.decode_error,
        )
        assert json.dumps(got.arguments) == json.dumps(want.arguments)
        return
    assert not isinstance(got, ValidationResult), got
    assert json.dumps(got[0]) == json.dumps(want[0]) and got[1] == want[1]


def _text(args: dict[str, Any]) -> str | None:
    try:
        return json.dumps(args, allow_nan=False)
    except ValueError:
        return None


@settings(max_examples=300)
@given(arguments(), st.booleans())
def test_the_one_pass_answers_as_the_general_path(
    case: tuple[str, dict[str, Any]], repair: bool
) -> None:
    name, args = case
    text = _text(args)
    if text is None:
        return
    spec = REGISTRY[name]
    with pytest.MonkeyPatch.context() as mp:
        taken = Taken(mp)
        got = checked_arguments(spec, text, repair)
    want = _general(spec, text, repair)
    _same(got, want)
    if taken.general == 0:  # the one pass took it: valid, nothing repaired
        assert isinstance(want, tuple) and want[1] == ()


def test_recorded_valid_calls_take_the_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one pass serves the common calls: every valid call of the benchmark's file."""
    taken = Taken(monkeypatch)
    for name in calls.TOOLS:
        spec = REGISTRY[name]
        assert spec.quick_plan is not None, name
        for seed in range(100):
            text = json.dumps(random_valid_arguments(name, seed))
            got = checked_arguments(spec, text, True)
            _same(got, _general(spec, text, True))
    assert taken.general == 0


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("xerj_search", {"index": "docs", "query": {}, "size": 10.0}),  # made 10 by the general
        ("xerj_search", {"index": "docs", "query": {}, "size": True}),  # a bool is no integer
        ("xerj_search", {"index": "docs", "query": {}, "size": -1}),  # the quick yes says no
        ("xerj_search", {"index": "docs", "query": {}, "treshold": 0.5}),  # unknown argument
        ("xerj_search", {"index": "docs"}),  # a required one missing
        ("xerj_search", {"index": "docs", "query": "tea"}),  # repaired by the general path
        ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {}}], "fusion": "learned"}),
        ("xerj_vector_search", {"index": "d", "field": "f", "query_vector": ["a"]}),
    ],
)
def test_what_the_one_pass_leaves_goes_to_the_general_path(
    name: str, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = Taken(monkeypatch)
    text = json.dumps(args)
    got = checked_arguments(REGISTRY[name], text, True)
    assert taken.general == 1
    _same(got, _general(REGISTRY[name], text, True))


def test_a_call_the_one_pass_leaves_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    decodes = []
    original = _fused.quick_object

    def counted(text: str) -> Any:
        decodes.append(text)
        return original(text)

    monkeypatch.setattr(_fused, "quick_object", counted)
    monkeypatch.setattr(_validation, "quick_object", counted)
    got = checked_arguments(
        REGISTRY["xerj_search"], '{"index": "docs", "query": {}, "size": 5e3}', False
    )
    assert got == ({"index": "docs", "query": {}, "size": 5000}, ())
    assert type(got[0]["size"]) is int and len(decodes) == 1


def test_without_orjson_every_call_takes_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "_orjson", False)
    taken = Taken(monkeypatch)
    text = json.dumps(random_valid_arguments("xerj_search", 1))
    got = checked_arguments(REGISTRY["xerj_search"], text, False)
    assert taken.general == 1
    _same(got, _general(REGISTRY["xerj_search"], text, False))


def _tool(parameters: dict[str, Any], *, trusted: bool = False) -> Any:
    definition = {"type": "function", "function": {"name": "mine", "parameters": parameters}}
    if not trusted:
        return registry_from_definitions([definition])
    return ToolRegistry([_spec_from_definition(definition, 0, {}, trusted=True)])  # (is valid)


def _nothing(args: Any) -> Any:
    return iter(())


def _yes(args: Any) -> bool:
    return True


def test_a_tool_without_a_quick_yes_or_a_compiled_check_has_no_plan() -> None:
    assert REGISTRY["xerj_list_indices"].quick_plan is None  # its checks run every time
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert _tool(plain)["mine"].quick_plan is not None  # a tool without limits: nothing to ask
    slow = _tool(plain).with_limits({"mine": (Limit(problems=_nothing),)})["mine"]
    assert slow.quick_plan is None  # a limit without a quick yes: the general path decides
    yes = _tool(plain).with_limits({"mine": (Limit(problems=_nothing, admits=_yes),)})["mine"]
    assert yes.quick_plan is not None
    assert quick_plan({**plain, "enum": ["x"]}, yes.fast_check, yes.plan.within) is None
    assert (
        quick_plan({**plain, "type": ["object", "null"]}, yes.fast_check, yes.plan.within) is None
    )
    minimum = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    assert (
        _tool(minimum)
        .with_limits({"mine": (Limit(problems=_nothing, admits=_yes),)})["mine"]
        .quick_plan
        is None
    )


# Custom schemas: plain and nested properties, integers within arrays and objects.
_TYPES = ["integer", "integer", "number", "string", "boolean", "object", "array", "null"]
_PROPERTY = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(_TYPES)),
    st.builds(
        lambda ts: {"type": ts},
        st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3, unique=True),
    ),
    st.builds(lambda t: {"type": "array", "items": {"type": t}}, st.sampled_from(_TYPES)),
    st.just({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    st.just({"type": "string", "enum": ["a", "b"]}),
    st.just({"type": "integer", "items": {"type": "string"}}),  # an integer in `nested`
    st.just({"description": "anything"}),
)
_LEAVES = [None, True, False, 0, 1, -3, 2.0, 3.0, 2.5, -0.0, 1e300, "a", "b", "", 10**20]
_VALUES = st.one_of(
    st.sampled_from(_LEAVES),
    st.sampled_from([2.0, 7.0, 1, 0.5]),  # numbers, integral floats among them, more often
    st.lists(st.sampled_from([1, 1.0, 2.5, "a", True, None, {"n": 1.0}]), max_size=3),
    st.dictionaries(st.sampled_from(["n", "m"]), st.sampled_from([1, 1.0, "x", [1.0]]), max_size=2),
)


@settings(max_examples=300)
@given(
    st.dictionaries(st.sampled_from("abcd"), _PROPERTY, min_size=1, max_size=4),
    st.data(),
    st.booleans(),
)
def test_on_any_plain_schema_the_one_pass_answers_as_the_general_path(
    properties: dict[str, Any], data: Any, repair: bool
) -> None:
    required = data.draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    parameters = {"type": "object", "properties": properties, "required": required}
    odd = data.draw(st.sampled_from([None, "x", "y"]))  # a quick yes that says no to a value
    yes = Limit(problems=_nothing, admits=lambda a: a.get("a") != odd)
    registry = _tool(parameters, trusted=True).with_limits({"mine": (yes,)})
    spec = registry["mine"]
    assert spec.quick_plan is not None
    keys = st.sampled_from([*properties, "z"])
    args = {name: data.draw(_VALUES) for name in properties if data.draw(st.booleans())}
    args.update(data.draw(st.dictionaries(keys, _VALUES, max_size=2)))
    text = json.dumps(args)
    _same(checked_arguments(spec, text, repair), _general(spec, text, repair))


def test_the_one_pass_makes_nested_integral_numbers_ints(monkeypatch: pytest.MonkeyPatch) -> None:
    parameters = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}},
            "page": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "w": {"type": "array", "items": {"type": "number"}},
        },
    }
    spec = _tool(parameters).with_limits({"mine": ()})["mine"]
    taken = Taken(monkeypatch)
    got = checked_arguments(spec, '{"ids": [1.0, 2], "page": {"n": 3.0}, "w": [1.0]}', False)
    assert taken.general == 0
    assert json.dumps(got[0]) == '{"ids": [1, 2], "page": {"n": 3}, "w": [1.0]}'  # type: ignore[index]


def test_the_dispatcher_prepares_the_typical_call_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken = Taken(monkeypatch)
    arguments = {"index": "docs", "query": {"match": {"body": "tea"}}, "size": 10}
    message = {"id": "c1", "type": "function", "function": {"name": "xerj_search",
               "arguments": json.dumps(arguments)}}  # fmt: skip
    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        prepared = dispatcher._core.prepare(parse_tool_call(message))
        assert taken.general == 0
        assert prepared.arguments == arguments and prepared.repairs == ()  # type: ignore[union-attr]
        bad = {**message, "function": {"name": "xerj_search", "arguments": '{"index": "docs"}'}}
        refused = dispatcher._core.prepare(parse_tool_call(bad))
        assert taken.general == 1 and refused.code == "invalid_arguments"  # type: ignore[union-attr]


def test_the_plan_asks_the_quick_yes_without_its_unknown_argument_look_only_where_it_is_done() -> (
    None
):
    plain = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
    own = Limit(problems=_nothing, admits=_yes)
    every = _tool(plain).with_limits({"mine": (known_arguments(["q", "n"]), own)})["mine"]
    assert every.quick_plan[-1] is _yes  # type: ignore[index]
    # "n" is a property, yet no known argument: the look stays
    fewer = _tool(plain).with_limits({"mine": (known_arguments(["q"]), own)})["mine"]
    assert fewer.quick_plan is not None and fewer.quick_plan[-1] is fewer.plan.admits
    assert fewer.quick_plan[-1] is not _yes
    search = REGISTRY["xerj_search"]
    assert search.quick_plan[-1] is search.plan.within  # type: ignore[index]
