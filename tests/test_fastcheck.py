"""The fast validity check agrees with jsonschema on every tool schema, for any instance."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import load_registry
from xerj_tools._fastcheck import compile_check

REGISTRY = load_registry()
leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                 st.sampled_from([1.0, 2.5, "rrf", "linear", "x", ""]))
value = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.sampled_from(["query", "weight", "a"]), inner,
                                                                   max_size=3)), max_leaves=8)


@pytest.mark.parametrize("tool", REGISTRY.names)
def test_fast_check_agrees_with_jsonschema(tool: str) -> None:
    spec = REGISTRY.get(tool)
    assert spec is not None and spec.fast_check is not None
    keys = list(spec.parameters["properties"])

    @settings(max_examples=400, deadline=None)
    @given(instance=st.one_of(value, st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))))
    def agree(instance: Any) -> None:
        assert spec.fast_check(instance) == spec.validator.is_valid(instance)

    agree()


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^a"}, {"anyOf": [{"type": "string"}]}, {"type": "integer", "minimum": 0},
    {"enum": [1, 2]}, {"type": "weird"},
])
def test_other_keywords_fall_back_to_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None


def test_additional_properties() -> None:
    check = compile_check({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                           "additionalProperties": False})
    assert check is not None
    assert check({"a": 1}) and check({"a": 2.0}) and not check({"a": True}) and not check({"a": 1, "b": 2})
    assert not check({})
