"""The package's layout: modules stay a few screens long and private modules import one way."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "xerj_tools"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 400  # a module is split by concern before it grows past this


def imported(path: Path, *, nested_only: bool = False) -> set[str]:
    """The package modules `path` imports (relative imports, by last name); with `nested_only`,
    those imported inside a function (a lazy import hides a cycle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(tree.body)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            if nested_only and node in top:
                continue
            names.add(node.module.rsplit(".", 1)[-1])
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_passes_the_size_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it by concern"


def test_validation_and_repair_do_not_import_each_other() -> None:
    validation, repair = PACKAGE / "_validation.py", PACKAGE / "_repair.py"
    assert "_validation" not in imported(repair)
    assert not {"_repair", "_validation"} & imported(validation, nested_only=True)
    assert not {"_repair", "_validation"} & imported(repair, nested_only=True)
    # The values both report live below both of them.
    assert imported(PACKAGE / "_problems.py") == set()


def test_the_http_value_types_live_in_one_module() -> None:
    import xerj_tools
    from xerj_tools import _models

    assert xerj_tools.HttpRequest is _models.HttpRequest
    for name in ("HttpRequest", "Reply", "Failure", "Outcome", "RequestKind", "FailureKind"):
        assert name in _models.__all__
    for old in ("_handlers", "_outcome"):
        assert importlib.util.find_spec(f"xerj_tools.{old}") is None
    # Every other module takes them from there, not a copy.
    defined = {"HttpRequest", "Reply", "Failure"}
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        if path.name != "_models.py":
            assert not defined & classes, path


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
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
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.name != "finish", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                assert node.target.id != "finish", f"{path.name}:{node.lineno}"
