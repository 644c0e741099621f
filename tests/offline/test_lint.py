"""`lint_tools`: a tool whose parameters are no object is one finding, whatever they hold."""

from __future__ import annotations

from typing import Any

import pytest

from xerj_tools._offline._lint import Finding, lint_tools


@pytest.mark.parametrize("parameters", [5, None, "object", ["type"]])
def test_parameters_that_are_no_object_are_an_error(parameters: Any) -> None:
    definition = {"type": "function", "function": {"name": "t", "parameters": parameters}}
    findings = lint_tools([definition])
    assert [f for f in findings if f.level == "error"] == [
        Finding("error", "t", "parameters must be a JSON Schema object")
    ]
