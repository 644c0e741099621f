"""The package's layout: a module holds one concern and stays readable, imports form no cycle, and
each layer imports only from the layers below it."""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import itertools
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "xerj_tools"
MODULES = sorted(PACKAGE.rglob("*.py"))
# An alarm, not a rule of the tree: a module holds one concern, however many lines that takes,
# and is split only where a second concern shows. Past this length, look for that second
# concern; if there is none, raise the figure here rather than cut the module by count (a cap
# of 400 once left satellites whose only concern was "what did not fit").
ALARM_LINES = 600


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_grows_past_the_length_alarm(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= ALARM_LINES, (
        f"{path.name} has {lines} lines: does it hold two concerns? Split it by concern if so; "
        f"if it is one, raise ALARM_LINES in tests/project/test_layout.py and say why"
    )


def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per process for every test that reads the same text
    (the tests only read the trees)."""
    return _parse(path.read_text(encoding="utf-8"))


@functools.cache
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, *, flat: bool = False) -> dict[str, dict[str, int]]:
    """Every module under `root` and the modules of `root` it imports, with the line: module
    level, inside functions and under ``TYPE_CHECKING`` alike (a lazy or type-only import hides
    a cycle, it does not remove it). `flat`: a folder of scripts importing each other by name."""
    paths = {(p.stem if flat else module_name(p, root)): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                # `from pkg import mod` depends on pkg.mod; `from mod import name` on mod
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in paths else module
                           for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in paths:  # the longest module the import names
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str]:
    """One cycle of `graph` as the modules along it (the first repeated at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for target in graph[module]:
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        state[module] = 2
        path.pop()
        return []

    for module in graph:
        if module not in state and (found := visit(module)):
            return found
    return []


def describe(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)) + f" -> {cycle[-1]}"


@pytest.mark.parametrize("root, flat", [(PACKAGE, False), (PACKAGE.parent / "benchmarks", True)],
                         ids=["xerj_tools", "benchmarks"])
def test_imports_form_no_cycle(root: Path, flat: bool) -> None:
    graph = import_graph(root, flat=flat)
    assert len(graph) > 3
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + describe(graph, cycle)


def test_the_cycle_check_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    # A package whose only circle runs through a function-level and a TYPE_CHECKING import.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n")
    (package / "c.py").write_text("from . import a\n")
    graph = import_graph(package)
    assert find_cycle(graph)[0] == find_cycle(graph)[-1]
    assert set(find_cycle(graph)) == {"pkg.a", "pkg.b", "pkg.c"}
    (package / "c.py").write_text("")
    assert find_cycle(import_graph(package)) == []


# The layers of the package, lowest first. A module imports only from its own layer and the
# layers below it: every import counts, at module level, in a function or under TYPE_CHECKING,
# relative or absolute (docs/development.md). "base" is the flat modules beside __init__.py.
LAYERS = (
    "testing",  # the stand-in XERJ: imports nothing of the library
    "base",  # _version, _problems, _exceptions, _json, _bounds
    "_shapes",  # the model side: the neutral call, one adapter per model API
    "_http",  # the engine side: one attempt, its body, deadline, retries, nodes, attempt spans
    "_message",  # what the model reads: errors, hints, budget, fitting
    "tools",  # one Tool each, and the readers they share
    "_schema",  # the registry (definitions joined with their tools), validation, repair, bounds
    "_dispatch",  # the dispatchers: policy, core, sync and async drivers
    "_agent",  # the agent loop
    "_offline",  # offline validation of recorded model output
    "integrations",  # MCP and the framework adapters
    "_cli",  # the command line
)
# Above every layer, free to import any: the public names and the `python -m` entry points.
ENTRY_POINTS = ("", "__main__", "testing.__main__")


def layer_of(module: str, graph: dict[str, dict[str, int]]) -> str | None:
    """The layer of a module of the graph (None for an entry point): its first subpackage, or
    "base" for a flat module at the top."""
    root, _, rest = module.partition(".")
    if rest in ENTRY_POINTS:
        return None
    first = rest.split(".")[0]
    is_package = any(m.startswith(f"{root}.{first}.") for m in graph)
    return first if "." in rest or is_package else "base"


def upward_imports(graph: dict[str, dict[str, int]], layers: tuple[str, ...] = LAYERS) -> list[str]:
    """Each import from a lower layer to a higher one (an entry point is above all), and each
    module in no declared layer, as `importer (line n) -> imported` lines."""
    rank = {layer: i for i, layer in enumerate(layers)}
    found: list[str] = []
    for module, targets in graph.items():
        layer = layer_of(module, graph)
        if layer is not None and layer not in rank:
            found.append(f"{module}: in no layer; add {layer!r} to LAYERS where it belongs")
            continue
        for target, line in targets.items():
            above = layer_of(target, graph)
            if layer is not None and (above is None or rank.get(above, -1) > rank[layer]):
                found.append(f"{module} ({layer}, line {line}) -> {target} ({above or 'entry point'})")
    return found


def test_each_layer_imports_only_from_the_layers_below() -> None:
    graph = import_graph(PACKAGE)
    assert upward_imports(graph) == []
    # every subpackage is a declared layer, and every declared layer exists
    present = {layer_of(m, graph) for m in graph} - {None}
    assert present == set(LAYERS)


def test_the_layer_check_refuses_an_upward_import() -> None:
    graph = import_graph(PACKAGE)
    graph["xerj_tools._http._models"]["xerj_tools._dispatch._core"] = 7  # engine side -> dispatcher
    graph["xerj_tools._json"]["xerj_tools"] = 3  # a base module -> the public names
    assert sorted(upward_imports(graph)) == [
        "xerj_tools._http._models (_http, line 7) -> xerj_tools._dispatch._core (_dispatch)",
        "xerj_tools._json (base, line 3) -> xerj_tools (entry point)",
    ]


def test_the_layer_check_sees_lazy_type_only_and_absolute_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for sub in ("low", "high"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .high import b\n")  # an entry point: free
    (package / "high" / "b.py").write_text("from ..low.a import f\n")  # downward: fine
    (package / "low" / "a.py").write_text("def f():\n    return 1\n")
    layers = ("low", "high")
    assert upward_imports(import_graph(package), layers) == []
    (package / "low" / "a.py").write_text("def f():\n    from ..high import b\n    return b\n")
    assert upward_imports(import_graph(package), layers) == ["pkg.low.a (low, line 2) -> pkg.high.b (high)"]
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high.b\n")
    assert upward_imports(import_graph(package), layers) == ["pkg.low.a (low, line 3) -> pkg.high.b (high)"]
    (package / "low" / "a.py").write_text("")
    (package / "side").mkdir()
    (package / "side" / "c.py").write_text("")
    assert upward_imports(import_graph(package), layers) == [
        "pkg.side.c: in no layer; add 'side' to LAYERS where it belongs"]


def test_the_http_value_types_live_in_one_module() -> None:
    import xerj_tools
    from xerj_tools._http import _models

    assert xerj_tools.HttpRequest is _models.HttpRequest
    for name in ("HttpRequest", "Reply", "Failure", "Outcome", "RequestKind", "FailureKind"):
        assert name in _models.__all__
    for old in ("_handlers", "_outcome"):
        assert importlib.util.find_spec(f"xerj_tools.{old}") is None
    # Defined there; test_one_name_per_concept holds every other module to no copy.
    classes = {n.name for n in parsed(Path(_models.__file__)).body if isinstance(n, ast.ClassDef)}
    assert {"HttpRequest", "Reply", "Failure"} <= classes


def test_the_tool_message_has_one_json_writer() -> None:
    # The budget's guarantee (measured length = written length) rests on one encoder: the
    # message writer, the fitter's measure and the orjson fast path all live in `_json`.
    from xerj_tools import _json
    from xerj_tools._message import _budget, _fit_hits, _format, _measure

    assert _format.dumps is _json.dumps and _budget.written is _json.written
    assert _measure.ENCODER is _fit_hits.ENCODER is _json.ENCODER
    for path in MODULES:
        if path.name == "_json.py" or path.parent.name != "_message":
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in {"JSONEncoder", "dumps"} or _holder(node.func.value) != "json", (
                    f"{path.name}:{node.lineno} writes JSON itself; use `_json`"
                )


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in parsed(path).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_one_name_per_concept() -> None:
    # A class or type alias (`Outcome`, `Check`…) is defined in one module of the package only.
    homes: dict[str, list[str]] = {}
    for path in MODULES:
        for name in _top_level_names(path):
            if name[:1].isupper() and not name.isupper():
                homes.setdefault(name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}
    # `finish` meant four things; the model's reason is `finish_reason`, nothing else is `finish`.
    for path in MODULES:
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.name != "finish", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                assert node.target.id != "finish", f"{path.name}:{node.lineno}"


DISPATCHER = {"_dispatch/_base.py", "_dispatch/_sync.py", "_dispatch/_async.py"}
SEALED = {"_core", "_begin", "_complete", "_plan", "_endpoint", "_settings", "_open_turn"}


def _holder(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


@pytest.mark.parametrize("path", [p for p in MODULES if str(p.relative_to(PACKAGE)) not in DISPATCHER],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_dispatcher_reads_its_private_attributes(path: Path) -> None:
    # The agent loop and the integrations use the public seam (`tools`, `begin`, `complete`,
    # `answer`, `cancelled`, `copy_of`), never a dispatcher's insides.
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            reaches_in = node.attr in SEALED or "dispatcher" in _holder(node.value).lower()
            assert not reaches_in, f"{path.name}:{node.lineno} reads .{node.attr} of a dispatcher"


def test_every_test_file_lives_in_a_folder_with_a_row_in_the_testing_table() -> None:
    # tests/ holds one folder per layer or feature; docs/testing.md gives each folder its row and
    # names each file in it, so a new test file goes to a folder and into the table.
    tests = PACKAGE.parent / "tests"
    table = (PACKAGE.parent / "docs" / "testing.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tests.glob("test_*.py")) == [], "put them in a folder of tests/"
    files = sorted(tests.glob("*/test_*.py"))
    assert files, "no test file found under a folder of tests/"
    folders = sorted({p.parent.name for p in files})
    # tests/ is on the import path: a folder named as a module the suite imports would stand in
    # for it (a namespace package) where it is not installed, e.g. `mcp` without the MCP SDK
    imported = {"mcp", "openai", "agents", "langchain", "langgraph", "pydantic_ai", "google",
                "dask", "distributed", "pyarrow", "opentelemetry", "httpx2", "jsonschema",
                "tenacity", "hypothesis", "orjson", "xerj_tools"}
    assert [f for f in folders if f in imported] == [], "rename the folder"
    assert [f for f in folders if f"`tests/{f}/`" not in table] == [], "give the folder its row"
    assert [p.name for p in files if f"`{p.name}`" not in table] == [], "add them to docs/testing.md"


TRACKER = re.compile(r"\bissues? #?\d|\(issue\b|adversarial review|\bround \d|\bthe old way|\b[NF]\d{1,2}\b")
HISTORY_ROOTS = ("xerj_tools", "tests", "examples", "benchmarks")


def _prose(path: Path) -> list[tuple[int, str]]:
    """A module's comments and docstrings, with their lines."""
    text = path.read_text(encoding="utf-8")
    # A comment is a slice of the text: where the text holds no match, no comment does (and
    # tokenizing, in Python, is most of this test's cost). A docstring is read from the tree:
    # its escapes are decoded there.
    tokens = tokenize.generate_tokens(io.StringIO(text).readline) if TRACKER.search(text) else ()
    found = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    for node in _statements(ast.parse(text)):
        documented = isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        if documented and (doc := ast.get_docstring(node, clean=False)) is not None:
            found.append((node.body[0].lineno, doc))
    return found


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """The module and every statement in it, at any depth: what can hold a docstring (a
    function or class is a statement), without walking the expressions (most of the nodes)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                pending.extend(reversed(children))


def test_comments_and_docstrings_give_reasons_not_tracker_numbers() -> None:
    # The reason for a line stays beside it; the issue or attack that brought it belongs in the
    # changelog, and a regression test is named for the behaviour it holds.
    root = PACKAGE.parent
    found = [f"{path.relative_to(root)}:{line}: {TRACKER.search(text).group()}"
             for folder in HISTORY_ROOTS for path in sorted((root / folder).rglob("*.py"))
             for line, text in _prose(path) if TRACKER.search(text)]
    assert found == []


def test_the_history_check_sees_comments_and_docstrings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Fast (issue 24)."""\nx = "N3"  # the old way\n')
    assert [text for _, text in _prose(module) if TRACKER.search(text)] == ["# the old way", "Fast (issue 24)."]
