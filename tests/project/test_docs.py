"""The README and docs/*.md: every code block runs, every link resolves, every page is reachable.

Python blocks run as written, in-process, with `XERJ_URL` naming a XERJ stand-in and
`OPENAI_BASE_URL` a scripted model (the README's blocks start their own stand-ins and run in
tests/project/test_readme.py, with assertions on what they did); a block followed by "It prints:" must
print exactly the text block after it. Shell blocks run line by line: each `xerj-tools` command
in-process (a serving one in its own process, stopped once it is up: `-m slow`), in a directory
holding sample files for the inputs the pages name; an install, benchmark, example or test-suite
line is checked against what runs it (.ci/run, tests/project/test_benchmarks.py, tests/project/test_examples.py).

A block or a line that cannot run here says so where a reader sees it: a block whose first line
is a comment `# Fragment: ...` (incomplete code, e.g. the body of an async function) or
`# Needs: ...` (a service or file the suite has none of), or a shell line ending in such a
comment. Such a block is compiled, and the names it imports from xerj_tools must exist.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import free_port, installed, run_cli

from xerj_tools._cli._main import main
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

ROOT = Path(__file__).resolve().parents[2]
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


MARKER = re.compile(r"#\s*(Fragment|Needs):")


def marked(block: Block) -> bool:
    """Whether the block's first line says, where a reader sees it, why it is not run."""
    first = block.code.lstrip("\n").split("\n", 1)[0]
    return MARKER.match(first.strip()) is not None


ALL_PYTHON = python_blocks(PAGES)
DOCS_RUNNABLE = [b for b in python_blocks(DOCS) if not marked(b)]


def test_python_blocks_are_plain_python_and_a_fragment_says_so_in_its_first_line() -> None:
    infos = {b.info for p in PAGES for b in code_blocks(p) if b.info.startswith("python")}
    assert infos == {"python"}, infos  # no marker a rendered page hides ("python no-run")
    fragment = Block(README, 1, "python", "# Fragment: the body of an async function\nx = 1\n", (0, 0))
    assert marked(fragment) and not marked(Block(README, 1, "python", "x = 1  # Needs: y\n", (0, 0)))


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


@pytest.mark.parametrize("block", ALL_PYTHON, ids=lambda b: b.where)
def test_python_block_compiles_and_its_xerj_tools_names_exist(block: Block) -> None:
    tree = compile(
        block.code, block.where, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    # A block for an optional extra (agents, langgraph, mcp) is checked where that extra is
    # installed; the lowest-versions run of .ci/run leaves some out. Only a missing top-level
    # package skips: a missing xerj_tools name still fails.
    absent = sorted({top for top in _top_level_imports(tree) if not installed(top)})
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


def run_as_script(code: str, filename: str) -> str:
    """Run `code` as a script would (its own globals, `__main__`); return what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, filename, "exec"), {"__name__": "__main__"})
    return printed.getvalue()


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
    block: Block, xerj: XerjStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in-process, with the stand-ins in the environment and a working directory of its own
    monkeypatch.setenv("OPENAI_API_KEY", "scripted")
    monkeypatch.setenv("XERJ_URL", xerj.url)
    monkeypatch.chdir(tmp_path)
    with ScriptedModel(a_search_then_answers()) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        printed = run_as_script(block.code, "<docs block>")
    expected = shown_output(block)
    if expected is not None:
        assert printed == expected


def test_the_runnable_blocks_are_the_rule_and_fragments_the_exception() -> None:
    not_run = [b.where for b in ALL_PYTHON if marked(b)]
    assert len(not_run) <= len(ALL_PYTHON) // 2, not_run


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


# ── shell blocks ──────────────────────────────────────────────────────────────

SHELLS = ("sh", "bash", "console")
CLI = re.compile(r"^(?:\.venv/bin/)?xerj-tools$")
# The inputs the pages name as a user's own files, made here so that their commands run as shown.
SAMPLE_CALL = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 3}
SAMPLE_FILES = {
    "recorded.jsonl": "".join(
        json.dumps({"name": "xerj_search", "arguments": json.dumps({**SAMPLE_CALL, "size": n})}) + "\n"
        for n in (1, 2, 3)
    ),
    "batch_output.jsonl": json.dumps({
        "id": "batch_req_1", "custom_id": "request-1",
        "response": {"status_code": 200, "body": {"choices": [{"message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "xerj_search", "arguments": json.dumps(SAMPLE_CALL)}}]}}]}},
    }) + "\n",
    "my-tools.json": (ROOT / "tools.json").read_text(),
    "args.json": json.dumps(SAMPLE_CALL),
    "policy.toml": "read_only = true\nmax_size = 50\n",
}


@dataclass(frozen=True)
class ShellLine:
    where: str
    text: str
    env: dict[str, str]  # the line's leading NAME=value words
    argv: list[str]  # the rest, split as the shell would
    needs: bool  # marked, on the line or for its block

    @property
    def expected_status(self) -> int:
        """0, unless the line's comment says `exit N`."""
        said = re.search(r"#.*\bexit (\d)\b", self.text)
        return int(said.group(1)) if said else 0


def shell_lines() -> list[ShellLine]:
    """Every command of every shell block; `a && b` gives two."""
    found = []
    for page in PAGES:
        for block in code_blocks(page):
            if block.info not in SHELLS:
                continue
            for line in block.code.splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                needs = marked(block) or MARKER.search(line) is not None
                for part in line.split("  #")[0].split("&&"):
                    words = shlex.split(part)
                    env = {}
                    while words and re.match(r"^[A-Z_]+=", words[0]):
                        name, _, value = words.pop(0).partition("=")
                        env[name] = value
                    found.append(ShellLine(f"{block.where}: {line.strip()}", line, env, words, needs))
    return found


def is_cli(line: ShellLine) -> bool:
    return bool(line.argv) and CLI.match(line.argv[0]) is not None


def serves(argv: list[str]) -> bool:
    """A command that runs until stopped: the stand-in, the MCP server (not `--new-token`)."""
    return argv[0] == "stand-in" or (argv[0] == "mcp" and "--new-token" not in argv and "--help" not in argv)


SHELL_LINES = shell_lines()
CLI_LINES = [ln for ln in SHELL_LINES if is_cli(ln) and not ln.needs]


def cli_help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    """`xerj-tools [command] --help`, in-process (test_cli.py runs the installed script)."""
    capsys.readouterr()
    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


def test_every_command_line_shown_names_a_command_and_its_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # every `xerj-tools` of a shell line, as the command itself or an argument (`npx … xerj-tools mcp`)
    lines = [(ln.where, ln.argv[i + 1 :]) for ln in SHELL_LINES for i, w in enumerate(ln.argv) if CLI.match(w)]
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


def test_every_shell_line_is_run_checked_or_marked() -> None:
    """What is not a `xerj-tools` command run below is checked against what runs it."""
    ci = (ROOT / ".ci" / "run").read_text()
    benchmarks_tests = (ROOT / "tests" / "project" / "test_benchmarks.py").read_text() + (
        ROOT / "tests" / "project" / "test_throughput_benchmark.py").read_text()
    extras = set(re.findall(r"^([a-z-]+) = \[", (ROOT / "pyproject.toml").read_text(), flags=re.M))
    unaccounted = []
    for line in SHELL_LINES:
        argv = line.argv
        command = " ".join(argv)
        if line.needs or is_cli(line):
            continue
        if argv[:3] == ["python3", "-m", "venv"] or (argv[:1] == [".venv/bin/python"] and argv[1:3] == ["-m", "pytest"]):
            ok = command in ci  # .ci/run runs it as written
        elif argv[0].endswith("pip") and argv[1:2] == ["install"]:
            wanted = set(re.findall(r"\.\[([a-z,-]+)\]", command))
            # an extra that exists, from a clone (the package is on no index yet)
            ok = all(set(w.split(",")) <= extras for w in wanted) and "xerj-tools" not in command
        elif argv[:1] == [".venv/bin/python"] and argv[1].startswith("benchmarks/"):
            ok = Path(argv[1]).name in benchmarks_tests and (ROOT / argv[1]).exists()
        elif argv[:1] == [".venv/bin/python"] and argv[1].startswith("examples/"):
            ok = (ROOT / argv[1]).exists()  # tests/project/test_examples.py runs every example
        else:
            ok = False
        if not ok:
            unaccounted.append(line.where)
    assert not unaccounted, f"neither run, checked nor marked '# Needs:': {unaccounted}"
    assert len(CLI_LINES) >= 10


@pytest.fixture
def sample_dir(tmp_path: Path) -> Path:
    for name, text in SAMPLE_FILES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("line", [ln for ln in CLI_LINES if not serves(ln.argv[1:])], ids=lambda ln: ln.where)
def test_shell_command_runs_as_shown(
    line: ShellLine, sample_dir: Path, xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    if line.argv[1] == "mcp" and not installed("mcp"):
        pytest.skip("the mcp extra is not installed here")
    monkeypatch.chdir(sample_dir if not line.where.startswith("README") else ROOT)
    monkeypatch.setenv("XERJ_URL", xerj.url)
    for name, value in line.env.items():
        monkeypatch.setenv(name, value)
    status, out, err = run_cli(*line.argv[1:])
    assert status == line.expected_status, out[-2000:] + err[-2000:]
    assert out or err


@pytest.mark.slow
def test_serving_commands_start_as_shown(sample_dir: Path, xerj: XerjStandIn) -> None:
    """The stand-in and the MCP server start, say where they are, and stop when told (each on a
    free port in place of the one the page names)."""
    lines = [ln for ln in CLI_LINES if serves(ln.argv[1:])]
    assert len(lines) >= 4
    if not installed("mcp"):  # the oldest versions' run installs no `mcp` extra
        lines = [ln for ln in lines if ln.argv[1] != "mcp"]
    for line in lines:
        _start_and_stop(line, sample_dir, xerj)


def _on_a_free_port(argv: list[str]) -> list[str]:
    """The command with the port it names replaced by a free one: CI runs two suites at once, and
    a fixed port shown on a page would let one fail on the other's server."""
    argv = list(argv)
    for i, arg in enumerate(argv[:-1]):
        if arg == "--http":
            host, _, _ = argv[i + 1].rpartition(":")
            argv[i + 1] = f"{host}:{free_port()}"
        elif arg == "--port":
            argv[i + 1] = str(free_port())
    if argv and argv[0] == "stand-in" and "--port" not in argv:  # its default is XERJ's 9200
        argv += ["--port", str(free_port())]
    return argv


def _start_and_stop(line: ShellLine, sample_dir: Path, xerj: XerjStandIn) -> None:
    argv = _on_a_free_port(line.argv[1:])
    env = {**os.environ, "XERJ_URL": xerj.url, **line.env}
    http = next((argv[i + 1] for i, a in enumerate(argv) if a == "--http"), None)
    stdio = argv[0] == "mcp" and http is None
    with subprocess.Popen(
        [sys.executable, "-m", "xerj_tools", *argv], cwd=sample_dir, env=env, text=True,
        stdin=subprocess.DEVNULL if stdio else subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as process:
        try:
            if stdio:  # over stdio the server ends at the end of its input
                _, err = process.communicate(timeout=60)
                assert process.returncode == 0 and "tools over stdio" in err, (line.where, err)
            elif http is not None:
                host, _, port = http.rpartition(":")
                assert _listening(host, int(port), process), line.where
            else:
                assert process.stdout is not None
                assert process.stdout.readline().startswith("XERJ_URL=http://127.0.0.1:"), line.where
        finally:
            process.terminate()
            process.communicate(timeout=30)


def _listening(host: str, port: int, process: subprocess.Popen[str]) -> bool:
    """Whether the server accepts a connection on (host, port) before it exits (30 s at most)."""
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((host, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False
