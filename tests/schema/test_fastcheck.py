"""The fast validity check agrees with jsonschema on every tool schema, for any instance."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import schema_suite_cases

from xerj_tools import load_registry
from xerj_tools._schema._fastcheck import (
    COMPILE_AFTER,
    FastCheck,
    compile_check,
    compiled_backend,
    fast_check,
)

REGISTRY = load_registry()
leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False),
    st.sampled_from([1.0, 2.5, "rrf", "linear", "x", ""]),
)
value = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["query", "weight", "a"]), inner, max_size=3),
    ),
    max_leaves=8,
)


@pytest.mark.parametrize("tool", REGISTRY.names)
def test_fast_check_agrees_with_jsonschema(tool: str) -> None:
    """Generated cases, each asked of every form of the check: the registry's own (the closure,
    then jsonschema-rs after its first calls where installed), the closure alone, and the check
    compiled at once (jsonschema-rs, with the closure behind its "no"): each answers as
    jsonschema. One draw of examples serves all three (drawing is most of the cost)."""
    spec = REGISTRY.get(tool)
    assert spec is not None and spec.fast_check is not None
    compiled = fast_check(spec.schema)
    assert compiled is not None
    backend = "python" if compiled_backend() is None else "jsonschema-rs"
    assert compiled.compile_now().backend == backend
    keys = list(spec.parameters["properties"])

    @settings(max_examples=400)
    @given(
        instance=st.one_of(value, st.dictionaries(st.sampled_from(keys), value, max_size=len(keys)))
    )
    def agree(instance: Any) -> None:
        valid = spec.validator.is_valid(instance)
        assert spec.fast_check(instance) == compiled.pure(instance) == compiled(instance) == valid

    agree()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"anyOf": [{"type": "string"}]},
        {"type": "integer", "minimum": 0},
        {"enum": [1, 2]},
        {"type": "weird"},
        {"type": None},  # no schema's: jsonschema raises, the compiled check must not answer
    ],
)
def test_other_keywords_fall_back_to_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None


def test_additional_properties() -> None:
    check = compile_check(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": False,
        }
    )
    assert check is not None
    assert (
        check({"a": 1})
        and check({"a": 2.0})
        and not check({"a": True})
        and not check({"a": 1, "b": 2})
    )
    assert not check({})


# ---------------------------------------------------------------- both compiled forms

CASES = schema_suite_cases(lambda schema: compile_check(schema) is not None)
needs_rs = pytest.mark.skipif(
    compiled_backend() is None, reason="jsonschema-rs (the fast extra) is not installed"
)


def test_the_suite_has_cases_the_fast_check_compiles() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("schema", "data", "valid"), CASES)
def test_json_schema_test_suite_closure(schema: Any, data: Any, valid: bool) -> None:
    check = compile_check(schema)
    assert check is not None and check(data) is valid


@needs_rs
@pytest.mark.parametrize(("schema", "data", "valid"), CASES)
def test_json_schema_test_suite_compiled(schema: Any, data: Any, valid: bool) -> None:
    check = fast_check(schema)
    assert check is not None and check.compile_now().backend == "jsonschema-rs"
    assert check(data) is valid


@needs_rs
def test_a_check_switches_to_jsonschema_rs_after_its_first_calls() -> None:
    check = fast_check(REGISTRY["xerj_get_document"].schema)
    assert check is not None
    for _ in range(COMPILE_AFTER - 1):
        assert check({"index": "docs", "id": "1"})
    assert check.backend == "python"
    assert check({"index": "docs", "id": "1"}) and check.backend == "jsonschema-rs"
    assert not check({"index": "docs"}) and not check({"index": "docs", "id": 1})
    assert not check({1: "x"})  # a key jsonschema-rs cannot read: the closure answers


def test_python_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XERJ_TOOLS_FASTCHECK", "python")
    check = fast_check(REGISTRY["xerj_get_document"].schema)
    assert check is not None and check.compile_now().backend == "python"
    assert check({"index": "docs", "id": "1"}) and not check({"index": "docs"})


def test_the_registry_validates_through_the_compiled_check() -> None:
    """What the dispatcher calls (`ToolRegistry.validate`) goes through the spec's `FastCheck`."""
    registry = load_registry(checks={})  # a registry of its own: fresh checks
    spec = registry["xerj_search"]
    assert isinstance(spec.fast_check, FastCheck)
    for _ in range(COMPILE_AFTER):
        assert registry.validate("xerj_search", {"index": "docs", "query": {}}).ok
    assert spec.fast_check.backend == ("python" if compiled_backend() is None else "jsonschema-rs")
    assert not registry.validate("xerj_search", {"index": "docs", "query": 3}).ok
