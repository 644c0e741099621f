"""The public surface: where names say they live, and errors that cross a process boundary."""

from __future__ import annotations

import inspect
import pickle
import typing

import pytest

import xerj_tools
from xerj_tools import (
    ArgumentsError,
    EngineError,
    MissingHandlerError,
    PolicyDenied,
    Problem,
    ToolDefinitionError,
    UnknownToolError,
)


def _public_objects() -> list[tuple[str, object]]:
    return [(name, getattr(xerj_tools, name)) for name in xerj_tools.__all__]


@pytest.mark.parametrize(
    "name",
    [
        n
        for n, o in _public_objects()
        # a generic alias such as `Handler` passes `isclass` on 3.10 but is no class
        if (inspect.isclass(o) or inspect.isfunction(o)) and typing.get_origin(o) is None
    ],
)
def test_public_classes_and_functions_live_in_xerj_tools(name: str) -> None:
    value = getattr(xerj_tools, name)
    if typing.is_typeddict(value):
        # typing resolves a TypedDict's string annotations in its home module
        assert typing.get_type_hints(value)
        return
    # the lazily imported dispatchers too: `repr(Dispatcher)` is `<class 'xerj_tools.Dispatcher'>`
    assert (value.__module__, value.__qualname__) == ("xerj_tools", name)


@pytest.mark.parametrize(
    "error",
    [
        UnknownToolError("xerj_nope", ["xerj_search"]),
        ArgumentsError("bad", problems=[Problem("$.size", "too big")], code="invalid_json"),
        EngineError("down", code="unavailable", status=503, retryable=True, details={"a": 1}),
        MissingHandlerError(["a", "b"]),
        ToolDefinitionError("broken", tool_name="t"),
        PolicyDenied("no", details={"refused": "index"}),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_survive_pickling_whole(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.__dict__ == error.__dict__


@pytest.mark.parametrize("name", ["Dispatcher", "AsyncDispatcher"])
def test_every_constructor_argument_is_documented_with_its_default(name: str) -> None:
    """In the class's own docstring, or for `AsyncDispatcher` in `Dispatcher`'s, which its own
    docstring points to: ``help()`` shows each keyword with its meaning and default."""
    cls = getattr(xerj_tools, name)
    items = {}
    for doc in (xerj_tools.Dispatcher.__doc__ or "", cls.__doc__ or ""):  # the class's own last
        for item in inspect.cleandoc(doc).split("\n- ")[1:]:
            key = item.split(": ", 1)[0]
            items[key] = " ".join(item.split("\n\n")[0].split())
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        line = items[f"``{parameter.name}``"]
        assert "Default: " in line
        if isinstance(parameter.default, (bool, int, float)):
            assert f"Default: {parameter.default}" in line or f"{parameter.default} " in line
    # one signature for both (`BaseDispatcher.__init__`): the same names, in the same order
    same = inspect.signature(xerj_tools.Dispatcher.__init__).parameters
    assert list(inspect.signature(cls.__init__).parameters) == list(same)


@pytest.mark.parametrize("name", ["HANDLERS", "ERROR_CODES", "XERJ_TOOLS"])
def test_the_exported_tables_are_read_only(name: str) -> None:
    table = getattr(xerj_tools, name)
    key = next(iter(table))
    with pytest.raises(TypeError):
        table[key] = table[key]
    with pytest.raises(TypeError):
        del table[key]
    with pytest.raises(TypeError):
        table["new"] = None
    assert not hasattr(table, "update") and not hasattr(table, "clear")


def test_xerj_tools_tools_exports_only_what_a_tool_author_uses() -> None:
    # The package a user reads to declare a `Tool`: the tools, their builders, the `Tool` class,
    # the types, groups and default reader of its fields, and `Limit` with its kinds (a rule of one's
    # own declared once). The dispatcher's table machinery is
    # private (`tools/_table.py`) and not reachable from the package's names.
    import xerj_tools.tools as tools

    assert sorted(tools.__all__) == sorted(
        ["HANDLERS", "XERJ_TOOLS", "Advice", "After", "Handler", "Limit", "Origin", "PolicyTraits",
         "Received", "Tool", "int_range", "not_blank", "number_range", "read_json"]
    )
    for internal in ("tool_table", "served_hints", "served_advice", "reading_tool",
                     "handler_tool", "tool_named"):
        assert not hasattr(tools, internal), internal
    assert tools.XERJ_TOOLS is xerj_tools.XERJ_TOOLS and tools.Tool is xerj_tools.Tool


def test_tests_take_a_public_name_from_the_public_module() -> None:
    # Tests go through the public seam where there is one: a name `xerj_tools`,
    # `xerj_tools.tools` or `xerj_tools.testing` exports is imported from there, not from the
    # private module it lives in (a private module is imported only for what has no public name).
    import importlib
    import re
    from pathlib import Path

    import xerj_tools.testing
    import xerj_tools.tools

    public = {
        id(getattr(module, name)): f"{module.__name__}.{name}"
        for module in (xerj_tools.testing, xerj_tools.tools, xerj_tools)
        for name in module.__all__
    }
    private_import = re.compile(r"^from (xerj_tools[\w.]*\._\w+[\w.]*) import ([\w, ]+)$", re.M)
    found = []
    for path in sorted(Path(__file__).parents[1].rglob("*.py")):
        for match in private_import.finditer(path.read_text(encoding="utf-8")):
            try:
                module = importlib.import_module(match.group(1))
            except ImportError:  # an extra this environment lacks (the MCP SDK): nothing to compare
                continue
            for name in (n.strip() for n in match.group(2).split(",")):
                value = getattr(module, name, None)
                if value is not None and not isinstance(value, (int, str)) and id(value) in public:
                    found.append(f"{path.name}: {match.group(1)}.{name} is {public[id(value)]}")
    assert found == []
