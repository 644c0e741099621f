"""The README and docs/*.md: their Python compiles and runs, their links resolve, every page is reachable.

A block fenced as ```python runs as written, in its own interpreter, against the XERJ stand-in and
a scripted model (the README's blocks run in tests/test_readme.py, with assertions on what they
did). A block fenced as ```python no-run is a fragment or needs a service the suite has no
stand-in for: it is compiled, and every name it imports from xerj_tools must exist.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from xerj_tools._cli._main import main
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^[ \t]*```([^\n`]*)\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    info: str
    code: str
    span: tuple[int, int]  # where the fenced block starts and ends in the page

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def code_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    return [
        Block(page, text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2), m.span())
        for m in FENCE.finditer(text)
    ]


def python_blocks(pages: list[Path]) -> list[Block]:
    return [b for p in pages for b in code_blocks(p) if b.info.split()[:1] == ["python"]]


def prose(page: Path) -> str:
    """The page without its code blocks: links and headings are read from what is left."""
    return FENCE.sub("", page.read_text())


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(page)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def relative_links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(page))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto: are not checked
    ]


def resolve(page: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return (page.parent / path).resolve() if path else page, anchor


ALL_PYTHON = python_blocks(PAGES)
DOCS_RUNNABLE = [b for b in python_blocks(DOCS) if b.info == "python"]


def test_every_fence_is_python_run_no_run_or_another_language() -> None:
    infos = {b.info for p in PAGES for b in code_blocks(p) if b.info.startswith("python")}
    assert infos <= {"python", "python no-run"}, infos


def _top_level_imports(tree: ast.AST) -> set[str]:
    """The packages a block imports (two levels deep: `google.adk` is not `google.genai`),
    xerj_tools left out."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(".".join(node.module.split(".")[:2]))
        elif isinstance(node, ast.Import):
            names.update(".".join(alias.name.split(".")[:2]) for alias in node.names)
    return {n for n in names if n.split(".")[0] != "xerj_tools"}


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


@pytest.mark.parametrize("block", ALL_PYTHON, ids=lambda b: b.where)
def test_python_block_compiles_and_its_xerj_tools_names_exist(block: Block) -> None:
    tree = compile(
        block.code, block.where, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    # A block for an optional extra (agents, langgraph, mcp) is checked where that extra is
    # installed; the lowest-versions run of .ci/run leaves some out. Only a missing top-level
    # package skips: a missing xerj_tools name still fails.
    absent = sorted({top for top in _top_level_imports(tree) if not _importable(top)})
    if absent:
        pytest.skip(f"{block.where} needs {', '.join(absent)}, not installed here")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "xerj_tools":
            module = importlib.import_module(node.module or "")
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{block.where}: {node.module} has no {missing}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "xerj_tools":
                    importlib.import_module(alias.name)


def run_block(code: str, xerj: XerjStandIn, model: ScriptedModel, cwd: Path) -> str:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "scripted",
        "XERJ_URL": xerj.url,
    }
    env.pop("XERJ_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def a_search_then_answers() -> list[Turn]:
    """What the scripted model says to any block: one search, then final answers."""
    search = ("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}})
    return [Turn(tool_calls=[search]), *(Turn(text="Done.") for _ in range(5))]


def shown_output(block: Block) -> str | None:
    """The ```text block that follows `block` after "It prints:", if the page shows one."""
    blocks = code_blocks(block.page)
    following = blocks[blocks.index(block) + 1 : blocks.index(block) + 2]
    if not following or following[0].info != "text":
        return None
    between = block.page.read_text()[block.span[1] : following[0].span[0]]
    return following[0].code if between.strip() == "It prints:" else None


@pytest.mark.parametrize("block", DOCS_RUNNABLE, ids=lambda b: b.where)
def test_runnable_docs_block_runs_and_prints_what_the_page_shows(
    block: Block, tmp_path: Path
) -> None:
    with XerjStandIn() as xerj, ScriptedModel(a_search_then_answers()) as model:
        printed = run_block(block.code, xerj, model, tmp_path)
    expected = shown_output(block)
    if expected is not None:
        assert printed == expected


def test_the_runnable_blocks_are_the_rule_and_no_run_the_exception() -> None:
    no_run = [b.where for b in ALL_PYTHON if b.info == "python no-run"]
    assert len(no_run) <= len(ALL_PYTHON) // 2, no_run


def command_lines() -> list[tuple[str, list[str]]]:
    """Every `xerj-tools ...` line of a shell block, split as the shell would."""
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            if block.info not in ("sh", "bash", "console"):
                continue
            for line in block.code.splitlines():
                words = shlex.split(line.split("  #")[0])
                for start, word in enumerate(words):
                    if word.endswith("xerj-tools") or words[start : start + 3] == [
                        "python",
                        "-m",
                        "xerj_tools",
                    ]:
                        argv = words[start + (1 if word.endswith("xerj-tools") else 3) :]
                        found.append((f"{block.where}: {line.strip()}", argv))
                        break
    return found


def cli_help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    """`xerj-tools [command] --help`, in-process (test_cli.py runs the installed script)."""
    capsys.readouterr()
    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


def test_every_command_line_shown_names_a_command_and_its_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = command_lines()
    assert len(lines) >= 8
    commands = set(re.findall(r"^    ([a-z-]+)  ", cli_help(capsys), flags=re.M))
    assert {"validate", "tools", "lint", "call", "demo", "mcp"} <= commands
    helps = {command: cli_help(capsys, command) for command in commands}
    for where, argv in lines:
        assert argv and argv[0] in commands, where
        unknown = [
            w.split("=")[0]
            for w in argv[1:]
            if w.startswith("--") and w.split("=")[0] not in helps[argv[0]]
        ]
        assert not unknown, f"{where}: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, anchor = resolve(page, target)
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def linked_pages(page: Path) -> set[Path]:
    return {
        path
        for path, _ in (resolve(page, t) for t in relative_links(page))
        if path.suffix == ".md" and path.exists()
    }


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reached, queue = {README}, [README]
    while queue:
        for page in linked_pages(queue.pop()) - reached:
            reached.add(page)
            queue.append(page)
    assert set(DOCS) <= reached, sorted(str(p.relative_to(ROOT)) for p in set(DOCS) - reached)


def test_the_index_lists_every_page() -> None:
    """docs/index.md lists every page; the README links the index and a few starting points."""
    index = ROOT / "docs" / "index.md"
    missing = set(DOCS) - {index} - linked_pages(index)
    assert not missing, sorted(str(p.relative_to(ROOT)) for p in missing)


def test_the_readme_stays_a_front_page() -> None:
    assert len(README.read_text().splitlines()) <= 130


def test_the_link_checker_catches_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Its `second` part\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#its-second-part) [bad](gone.md) [bad](a.md#nothing)\n"
        "```sh\n[in code](ignored.md)\n```\n[web](https://example.org/x.md)\n"
    )
    assert relative_links(page) == ["a.md", "a.md#its-second-part", "gone.md", "a.md#nothing"]
    assert [resolve(page, t)[0].exists() for t in relative_links(page)] == [True, True, False, True]
    assert anchors(tmp_path / "a.md") == {"a-page", "its-second-part"}
