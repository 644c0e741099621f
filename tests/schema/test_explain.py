"""The compiled explainer (`xerj_tools._schema._explain`) lists exactly the problems that jsonschema's
errors, read through `_validation._schema_problem`, give: over random schemas of the subset and
random or schema-shaped values, the JSON-Schema-Test-Suite's cases, and every bundled tool."""

from __future__ import annotations

import decimal
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import schema_suite_cases

from xerj_tools import Problem, load_registry
from xerj_tools._schema._explain import compile_explainer, explainer_of
from xerj_tools._schema._fastcheck import compile_check
from xerj_tools._schema._validation import _schema_problem

# Examples per property (XERJ_HYPOTHESIS_EXAMPLES, as the other property tests).
EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "100"))
KEYS = ["a", "b", "it's", "a b", 'q"', "_x", "9", "é"]
TYPES = ["object", "array", "string", "boolean", "null", "number", "integer"]
WORDS = ["x", "y", "it's", "", "Ω", "long " * 40]
DRAFTS = [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-06/schema#",
]


def reference(schema: Any, value: Any) -> set[Problem]:
    """What `_validation` reported before the explainer: jsonschema's errors as problems."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return {_schema_problem(error) for error in cls(schema).iter_errors(value)}


def explained(schema: Any, value: Any) -> set[Problem] | None:
    explain = compile_explainer(schema)
    assert explain is not None, schema
    found = explain(value)
    return None if found is None else set(found)


# ---------------------------------------------------------------- strategies

type_names = st.one_of(
    st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
)
annotations = st.fixed_dictionaries(
    {},
    optional={
        "description": st.just("d"), "title": st.just("t"), "default": st.integers(),
        "examples": st.just([1]), "$comment": st.just("c"),
    },
)  # fmt: skip
leaf_schemas = st.one_of(
    st.just(True),
    st.just({}),
    st.builds(lambda t, a: {"type": t, **a}, type_names, annotations),
    st.builds(
        lambda e, t: {"enum": e, **({"type": t} if t else {})},
        st.lists(st.sampled_from(WORDS), max_size=3),
        st.sampled_from([None, "string", ["string", "integer"], "integer"]),
    ),
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    objects = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["object", ["object", "null"], ["object", "array"]]),
            "properties": st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
            "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
            "additionalProperties": st.one_of(st.booleans(), inner),
            "description": st.just("an object"),
        },
    )
    arrays = st.fixed_dictionaries(
        {"items": inner}, optional={"type": st.sampled_from(["array", ["array", "string"]])}
    )
    return st.one_of(objects, arrays)


schemas = st.recursive(leaf_schemas, _extend, max_leaves=10)
top_schemas = st.one_of(
    schemas, st.builds(lambda s, d: {**s, "$schema": d}, schemas.filter(lambda s: isinstance(s, dict)), st.sampled_from(DRAFTS))
)  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 2.5, -0.0, 1e300, float("inf"), float("nan"), 2**70]),
    st.floats(),
    st.sampled_from(WORDS),
    st.text(max_size=4),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=12,
)


def shaped(schema: Any, data: st.DataObject, depth: int = 0) -> Any:
    """A value that mostly follows `schema`'s shape (so that deep paths are reached), with any
    JSON value in places."""
    if depth > 4 or not isinstance(schema, dict) or data.draw(st.integers(0, 4)) == 0:
        return data.draw(json_values)
    if "properties" in schema or "required" in schema:
        keys = list(schema.get("properties", {})) + list(schema.get("required", []))
        chosen = data.draw(st.lists(st.sampled_from([*keys, *KEYS]), max_size=5, unique=True))
        props = schema.get("properties", {})
        return {
            k: shaped(props.get(k, schema.get("additionalProperties")), data, depth + 1)
            for k in chosen
        }
    if "items" in schema:
        return [
            shaped(schema["items"], data, depth + 1) for _ in range(data.draw(st.integers(0, 3)))
        ]
    if "enum" in schema and schema["enum"] and data.draw(st.booleans()):
        return data.draw(st.sampled_from(schema["enum"]))
    return data.draw(json_values)


# ---------------------------------------------------------------- random schemas


@settings(max_examples=2 * EXAMPLES)
@given(schema=top_schemas, data=st.data())
def test_random_schemas_random_values(schema: Any, data: st.DataObject) -> None:
    assert compile_check(schema) is not None
    value = data.draw(st.one_of(json_values, st.just(None).map(lambda _: shaped(schema, data))))
    assert explained(schema, value) == reference(schema, value)


@settings(max_examples=EXAMPLES // 2)
@given(schema=top_schemas, data=st.data())
def test_values_of_no_json_type_are_explained_alike_or_left_to_jsonschema(
    schema: Any, data: st.DataObject
) -> None:
    class Text(str):
        pass

    odd = st.sampled_from(
        [(1, 2), decimal.Decimal("1.5"), decimal.Decimal(2), Text("x"), {1: "a"}, {("t",): 1},
         {"a": (1,)}, {"a": Text("it's")}, [Text("y")], {1: None, "a": 1}, frozenset({1})]
    )  # fmt: skip
    value = data.draw(st.one_of(odd, st.lists(odd, max_size=2)))
    try:
        expected: Any = reference(schema, value)
    except Exception as exc:  # jsonschema, or `_schema_problem`'s preview, fails on the value
        expected = type(exc)
    try:
        found: Any = explained(schema, value)
    except Exception as exc:
        found = type(exc)
    assert found is None or found == expected


# ---------------------------------------------------------------- messages, read as written


def test_messages_as_jsonschema_words_them() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["it's", "a b", "n"],
        "properties": {"n": {"type": ["integer", "null"]}, "m": {"enum": ["x", "it's"]}},
    }
    found = explained(schema, {"n": "7", "m": "z", "zz": 1, "aa": 2, "it'ss": 3})
    assert found == reference(schema, {"n": "7", "m": "z", "zz": 1, "aa": 2, "it'ss": 3})
    assert found == {
        Problem(
            "$", "Additional properties are not allowed ('aa', \"it'ss\", 'zz' were unexpected)"
        ),
        Problem("$.n", 'expected integer or null, got string "7"'),
        Problem("$.m", 'must be one of "x", "it\'s"; got "z"'),
        Problem('$["a b"]', "is required"),
        Problem(
            '$["s\\" is a required property"]', "is required"
        ),  # the name as _schema_problem reads it
    }
    one = {"type": "object", "additionalProperties": False}
    assert explained(one, {"q": 1}) == {
        Problem("$", "Additional properties are not allowed ('q' was unexpected)")
    }


def test_a_key_that_is_not_a_string_among_forbidden_ones_goes_to_jsonschema() -> None:
    explain = compile_explainer({"type": "object", "additionalProperties": False})
    assert explain is not None
    assert explain({1: "a"}) is None and explain({"a": 1}) is not None
    allowed = compile_explainer({"type": "object", "properties": {"a": {"type": "string"}}})
    assert allowed is not None and allowed({1: "a"}) == []  # nothing reads that key


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"}, {"anyOf": [{"type": "string"}]}, {"enum": [1, 2]},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        {"properties": {"a": False}}, {"items": [{"type": "string"}]},
    ],
)  # fmt: skip
def test_schemas_outside_the_subset_are_jsonschemas(schema: dict[str, Any]) -> None:
    assert compile_explainer(schema) is None


# ---------------------------------------------------------------- the JSON-Schema-Test-Suite

# (the cases of the fast check's subset: tests/schema/test_fastcheck.py holds there are some)
CASES = schema_suite_cases(lambda schema: compile_check(schema) is not None)


@pytest.mark.parametrize(("schema", "data", "valid"), CASES)
def test_json_schema_test_suite(schema: Any, data: Any, valid: bool) -> None:
    found = explained(schema, data)
    assert found == reference(schema, data)
    assert (found == set()) is valid


# ---------------------------------------------------------------- the bundled tools

REGISTRY = load_registry()


@settings(max_examples=2 * EXAMPLES)
@given(tool=st.sampled_from(REGISTRY.names), data=st.data())
def test_every_bundled_tool(tool: str, data: st.DataObject) -> None:
    spec = REGISTRY[tool]
    keys = list(spec.schema["properties"])
    value = data.draw(
        st.one_of(
            st.dictionaries(st.sampled_from([*keys, "treshold"]), json_values, max_size=len(keys)),
            st.just(None).map(lambda _: shaped(spec.schema, data)),
        )
    )
    assert explained(spec.schema, value) == reference(spec.schema, value)


def test_validate_gives_the_same_results_with_jsonschema_explaining() -> None:
    """End to end: `ToolRegistry.validate` (repair on and off) on mutated calls of every tool,
    with the explainers, and with them turned off (jsonschema explains)."""
    from unittest import mock

    from xerj_tools._schema import _validation

    registry = load_registry()

    @settings(max_examples=EXAMPLES)
    @given(tool=st.sampled_from(registry.names), data=st.data(), repair=st.booleans())
    def same(tool: str, data: st.DataObject, repair: bool) -> None:
        value = shaped(registry[tool].schema, data)
        raw = json.dumps(value, allow_nan=False) if _finite(value) else value
        compiled = registry.validate(tool, raw, repair=repair)
        with mock.patch.object(_validation, "explainer_of", lambda check: None):
            assert registry.validate(tool, raw, repair=repair) == compiled

    same()


def test_a_refused_call_of_a_bundled_tool_needs_no_jsonschema() -> None:
    registry = load_registry(str(_bundled_tools()))
    result = registry.validate("xerj_search", {"query": {"match": {"a": 1}}, "size": "x"})
    assert result.problems == (
        Problem("$.index", "is required"), Problem("$.size", 'expected integer, got string "x"')
    )  # fmt: skip
    assert "validator" not in vars(registry["xerj_search"])  # jsonschema's was never built
    assert explainer_of(registry["xerj_search"].fast_check) is not None
    assert explainer_of(lambda v: False) is None


def _bundled_tools() -> Path:
    import xerj_tools

    return Path(xerj_tools.__file__).parent / "tools.json"


def _finite(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def test_the_faster_constructors_make_the_dataclasses_they_made() -> None:
    """`Problem`, `ValidationResult` and `CallReport` set their fields without the frozen
    dataclass's __init__: the objects are the same (fields, defaults, equality, order, hash,
    repr, `replace`, pickling) and still frozen."""
    import dataclasses
    import pickle

    from xerj_tools._offline._validate import CallReport, FoundCall
    from xerj_tools._problems import ValidationResult

    problem = Problem("$.a", "is required")
    assert dataclasses.astuple(problem) == ("$.a", "is required")
    assert problem == Problem("$.a", "is required") < Problem("$.b", "is required")
    assert hash(problem) == hash(("$.a", "is required")) and repr(problem) == (
        "Problem(path='$.a', message='is required')"
    )
    result = ValidationResult(False, {"a": 1}, (problem,))
    assert dataclasses.asdict(result) == {
        "ok": False, "arguments": {"a": 1}, "problems": ({"path": "$.a", "message": "is required"},),
        "repairs": (), "decode_error": False,
    }  # fmt: skip
    assert dataclasses.replace(result, ok=True).ok and pickle.loads(pickle.dumps(result)) == result
    assert (
        repr(ValidationResult(True, None))
        == "ValidationResult(ok=True, arguments=None, problems=(), repairs=())"
    )
    report = CallReport(FoundCall("t", "{}", "c", 1, 1), False, (problem,))
    assert (report.repairs, report.line) == ((), None) and pickle.loads(
        pickle.dumps(report)
    ) == report
    for value, name in ((problem, "path"), (result, "ok"), (report, "ok")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)


@pytest.mark.slow  # several seconds: new processes over generated files
def test_the_invalid_call_benchmark_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "invalid.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "invalid.json").read_text())
    mix = report["per_call_us"]["this"]
    assert set(mix) == {"mix", "schema", "prose", "repaired"} and all(
        n > 0 for n, _ in mix.values()
    )
    assert all(t > 0 for times in report["cli_cpu_s"]["this"].values() for t in times)
    assert (tmp_path / "invalid.md").read_text().count("\n|") == 3
