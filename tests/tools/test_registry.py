"""The registry: the bundled tools file, both API shapes, and refusal of bad definitions."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import xerj_tools
from xerj_tools import ToolDefinitionError, load_registry

ROOT = Path(__file__).resolve().parents[2]


def test_tools_json_holds_the_published_definitions_then_the_first_party_ones() -> None:
    tools = json.loads((ROOT / "tools.json").read_text())
    published = [
        "xerj_search", "xerj_semantic_search", "xerj_vector_search",
        "xerj_hybrid_search", "xerj_memory_store", "xerj_memory_recall",
    ]  # fmt: skip
    first_party = [n for n, t in xerj_tools.XERJ_TOOLS.items() if t.origin == "first-party"]
    assert [t["function"]["name"] for t in tools] == published + first_party
    assert list(xerj_tools.XERJ_TOOLS) == published + first_party  # every tool has its Tool
    # Against the publishers' seed, with the documented corrections: test_tools_corrections.py


def test_the_package_ships_the_same_tools_json() -> None:
    shipped = resources.files("xerj_tools").joinpath("tools.json").read_text("utf-8")
    assert json.loads(shipped) == json.loads((ROOT / "tools.json").read_text())


def test_chat_tools_are_the_definitions_verbatim() -> None:
    registry = load_registry()
    assert registry.chat_tools() == json.loads((ROOT / "tools.json").read_text())
    registry.chat_tools()[0]["function"]["name"] = "mutated"
    assert registry.chat_tools()[0]["function"]["name"] == "xerj_search"


def test_responses_tools_are_flat() -> None:
    flat = load_registry().responses_tools()
    assert flat[0]["type"] == "function" and flat[0]["name"] == "xerj_search"
    assert flat[0]["parameters"]["required"] == ["index", "query"]
    assert "function" not in flat[0] and flat[0]["strict"] is False


def test_both_shapes_pass_the_openai_sdk_param_types() -> None:
    from openai.types.responses import FunctionToolParam

    try:  # openai >= 1.99
        from openai.types.chat import ChatCompletionFunctionToolParam
    except ImportError:  # the oldest openai declared (1.66)
        from openai.types.chat import (  # type: ignore[assignment, no-redef]
            ChatCompletionToolParam as ChatCompletionFunctionToolParam,
        )

    registry = load_registry()
    chat: list[ChatCompletionFunctionToolParam] = registry.chat_tools()  # type: ignore[assignment]
    flat: list[FunctionToolParam] = registry.responses_tools()  # type: ignore[assignment]
    assert {t["function"]["name"] for t in chat} == {t["name"] for t in flat}


def test_validation_accepts_the_types_the_descriptions_promise() -> None:
    spec = load_registry().get("xerj_search")
    assert spec is not None
    schema = spec.validator.schema["properties"]
    assert schema["source"]["type"] == ["boolean", "array", "string", "object"]
    assert schema["sort"]["type"] == ["array", "object", "string"]
    assert schema["track_total_hits"]["type"] == ["boolean", "integer"]
    assert spec.parameters["properties"]["source"]["type"] == "boolean"  # the definition is untouched


def _write(tmp_path: Path, tools: Any) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    return path


def _tool(name: str, parameters: Any = None) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters or {"type": "object"}}}


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([_tool("a b")], "invalid name"),
        ([_tool("x" * 65)], "invalid name"),
        ([_tool("dup"), _tool("dup")], "duplicate"),
        ([_tool("t", {"type": "objekt"})], "invalid JSON Schema"),
        ([_tool("t", {"type": "object", "properties": {"a": {"minimum": "zero"}}})], "invalid JSON Schema"),
        ([{"type": "custom", "custom": {"name": "sql"}}], "not a function tool"),
        ({"not": "a list"}, "JSON array"),
    ],
)
def test_bad_definitions_raise_at_load(tmp_path: Path, tools: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        load_registry(_write(tmp_path, tools))
    assert message in str(info.value)


def test_not_json_raises_at_load(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text("[{")
    with pytest.raises(ToolDefinitionError):
        load_registry(path)


def test_flat_definitions_and_custom_checks(tmp_path: Path) -> None:
    from xerj_tools import Problem

    flat = {"type": "function", "name": "echo", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}

    def even(args: Any) -> Any:
        if isinstance(args.get("n"), int) and args["n"] % 2:
            yield Problem("$.n", "must be even")

    registry = load_registry(_write(tmp_path, [flat]), checks={"echo": [even]})
    assert registry.chat_tools()[0]["function"]["name"] == "echo"
    assert registry.validate("echo", {"n": 3}).problems == (Problem("$.n", "must be even"),)
    assert registry.validate("echo", '{"n": 4}').ok


def test_public_names_import_and_exceptions_are_exported() -> None:
    # constants, then classes, then functions, each alphabetical (ruff's RUF022 order)
    order = sorted(xerj_tools.__all__, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert xerj_tools.__all__ == order
    for name in xerj_tools.__all__:
        assert getattr(xerj_tools, name) is not None
    from xerj_tools import _exceptions

    for name in _exceptions.__all__:
        assert name in xerj_tools.__all__ and issubclass(getattr(xerj_tools, name), xerj_tools.XerjToolsError)
