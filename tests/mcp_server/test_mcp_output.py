"""The MCP tools' output schemas in the portable form: one ``type`` per schema (a nullable field
as ``anyOf`` branches, as the MCP Inspector's ``--strict`` portability check asks)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the `mcp` extra")

import jsonschema

from xerj_tools import Dispatcher
from xerj_tools.integrations.mcp._output import output_schema


def type_lists(schema: Any, path: str = "") -> list[str]:
    if isinstance(schema, dict):
        here = [path] if isinstance(schema.get("type"), list) else []
        return here + [p for k, v in schema.items() for p in type_lists(v, f"{path}/{k}")]
    if isinstance(schema, list):
        return [p for i, v in enumerate(schema) for p in type_lists(v, f"{path}/{i}")]
    return []


def test_no_output_schema_lists_several_types_and_total_may_be_null() -> None:
    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        schemas = {name: output_schema(tool) for name, tool in dispatcher.tools.items()}
    assert {name: type_lists(s) for name, s in schemas.items()} == {name: [] for name in schemas}
    search = schemas["xerj_search"]
    assert search["properties"]["total"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    jsonschema.Draft202012Validator.check_schema(search)
    for total in (3, None):
        jsonschema.validate({"ok": True, "total": total, "hits": []}, search)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ok": True, "total": "3"}, search)
