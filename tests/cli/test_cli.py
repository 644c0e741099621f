"""The command line, in-process through `main([...])`, and once as the installed script."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import FakeTTY
from support import run_cli as run

from xerj_tools import Dispatcher, load_registry
from xerj_tools._cli._main import EXAMPLES, main
from xerj_tools._offline._validate import read_calls
from xerj_tools.testing import XerjStandIn

FIXTURES = Path(__file__).parents[1] / "fixtures"


def validate_json(*argv: str, stdin: str = "") -> tuple[int, dict[str, Any]]:
    code, out, _ = run("validate", *argv, "--format", "json", stdin=stdin)
    return code, json.loads(out)


# fixture -> (calls found, invalid positions as (line, call id))
SHAPES = {
    "chat_messages.json": (3, [(None, "call_a2")]),
    "chat_messages.jsonl": (3, [(3, "call_a2")]),
    "chat_completion.json": (2, [(None, "call_c2")]),
    "responses_items.json": (2, [(None, "call_r2")]),
    "responses_response.json": (2, [(None, "call_r4")]),
    "anthropic_messages.json": (3, [(None, "toolu_a2")]),
    "anthropic_response.json": (2, [(None, "toolu_r2")]),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_conversation_shape(name: str) -> None:
    calls, invalid = SHAPES[name]
    code, report = validate_json(str(FIXTURES / name))
    assert code == 1 and report["calls"] == calls
    bad = [(r["line"], r["call_id"]) for r in report["results"] if not r["ok"]]
    assert bad == invalid


def test_mixed_file_reports_the_right_positions() -> None:
    code, report = validate_json(str(FIXTURES / "mixed.jsonl"))
    assert code == 1
    assert (report["calls"], report["valid"], report["invalid"], report["repaired"]) == (9, 5, 4, 1)
    assert report["unreadable_lines"] == 1
    seen = [(r["line"], r.get("call_id"), r["ok"]) for r in report["results"]]
    assert seen == [(2, "call_a2", False), (4, "call_c1", True), (4, "call_c2", False), (6, None, False),
                    (7, "call_r4", False), (8, "call_x", False)]
    problems = {r.get("call_id"): [p["path"] for p in r.get("problems", [])] for r in report["results"]}
    assert problems["call_a2"] == ["$.size"] and problems["call_c2"] == ["$.namespace"]
    assert problems["call_r4"] == ["$.fusion", "$.queries"]


def test_text_output_names_positions_and_paths() -> None:
    code, out, _ = run("validate", str(FIXTURES / "mixed.jsonl"))
    assert code == 1
    assert "line 2, id call_a2 xerj_search: invalid\n  $.size: must be between 0 and 10000; got -1" in out
    assert out.rstrip().endswith("9 calls: 5 valid (1 after repair), 4 invalid; 1 unreadable lines")


def test_one_call_from_an_argument_a_file_and_stdin(tmp_path: Path) -> None:
    args = '{"index": "docs", "query": {}}'
    assert run("validate", "--tool", "xerj_search", "--args", args)[0] == 0
    path = tmp_path / "args.json"
    path.write_text('{"index": "docs"}')
    code, out, _ = run("validate", "--tool", "xerj_search", "--args", f"@{path}")
    assert code == 1 and "$.query: is required" in out
    assert run("validate", "--tool", "xerj_search", "--args", "-", stdin=args)[0] == 0


def test_all_valid_input_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps({"name": "xerj_search", "arguments": {"index": "docs", "query": {}},
                                          "id": f"c{i}"}) for i in range(5)))
    code, out, _ = run("validate", str(path))
    assert code == 0 and out == "5 calls: 5 valid (0 after repair), 0 invalid\n"


def test_strict_refuses_what_repair_would_fix() -> None:
    args = '{"index": "docs", "query": {}, "size": "5"}'
    assert run("validate", "--tool", "xerj_search", "--args", args)[0] == 0
    code, out, _ = run("validate", "--tool", "xerj_search", "--args", args, "--strict")
    assert code == 1 and "$.size: expected integer, got string" in out


def test_a_conversation_on_stdin() -> None:
    code, report = validate_json("-", stdin=(FIXTURES / "chat_completion.json").read_text())
    assert code == 1 and report["calls"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("validate",), "give an input file"),
        (("validate", "/nonexistent/calls.jsonl"), "cannot read"),
        (("validate", "--tool", "xerj_search"), "--args"),
        (("validate", "--tools-file", "/nonexistent.json", "--tool", "x", "--args", "{}"), "tools file"),
        (("validate", str(FIXTURES.parent / "conftest.py")), "neither JSON nor JSON Lines"),
        (("call", "xerj_search", "@/nonexistent.json"), "cannot read"),
        (("lint", "/nonexistent.json"), "cannot read"),
    ],
)
def test_usage_errors_exit_2(argv: tuple[str, ...], message: str) -> None:
    code, _, err = run(*argv)
    assert code == 2 and message in err


def test_jsonl_is_streamed_not_read_whole() -> None:
    class NoReadAll(io.StringIO):
        def read(self, size: int | None = -1) -> str:
            raise AssertionError("read() of the whole input")

    lines = "".join(json.dumps({"name": "xerj_search", "arguments": "{}", "id": f"c{i}"}) + "\n" for i in range(1000))
    stream = NoReadAll(lines)
    calls = read_calls(stream)
    first = next(calls)
    assert getattr(first, "call_id", None) == "c0"
    assert stream.tell() < len(lines)  # the rest is still unread
    assert sum(1 for _ in calls) == 999


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    line = json.dumps({"name": "xerj_search", "arguments": {"index": "docs", "query": {}}}) + "\n"
    path.write_text(line * 20_000)
    tty = FakeTTY()
    assert run("validate", str(path), err=tty)[0] == 0
    assert "validated 10,000 calls" in tty.getvalue() and "validated 20,000 calls" in tty.getvalue()
    plain = io.StringIO()
    assert run("validate", str(path), err=plain)[0] == 0 and plain.getvalue() == ""


def test_validate_imports_nothing_of_the_network_stack() -> None:
    code = ("import sys, io; from xerj_tools._cli._main import main; "
            f"rc = main(['validate', {str(FIXTURES / 'mixed.jsonl')!r}], stdout=io.StringIO()); "
            "loaded = [m for m in ('httpx2', 'httpcore2', 'openai', 'tenacity', 'anyio') if m in sys.modules]; "
            "print(rc, loaded)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1 []"


@pytest.mark.parametrize("target", ["chat", "responses", "anthropic", "mcp"])
def test_tools_in_each_target_shape(target: str) -> None:
    code, out, _ = run("tools", "--target", target)
    tools = json.loads(out)
    assert code == 0 and len(tools) == len(load_registry())
    first = tools[0]
    if target == "chat":
        assert first["function"]["name"] == "xerj_search"
    elif target == "responses":
        assert first["name"] == "xerj_search" and first["type"] == "function"
    elif target == "anthropic":
        assert set(first) == {"name", "description", "input_schema"}
    else:
        assert set(first) == {"name", "description", "inputSchema"}


def test_lint_the_bundled_file_and_its_strict_report() -> None:
    code, out, _ = run("lint")
    assert code == 0 and out == "0 errors, 0 warnings\n"
    code, out, _ = run("lint", "--strict-report")
    assert "strict: xerj_search: [chat] $.query: a free-form object (no properties) cannot be strict" in out
    assert "strict: xerj_vector_search: [responses] $: needs additionalProperties: false" in out
    assert "[mcp] MCP has no strict mode" in out


def test_lint_reports_every_problem_of_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([
        {"type": "function", "function": {"name": "ok_tool", "description": "d", "parameters": {
            "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
            "additionalProperties": False}}},
        {"type": "function", "function": {"name": "bad name", "parameters": {"type": "objekt"}}},
        {"type": "function", "function": {"name": "ok_tool", "description": "d"}},
        {"type": "custom", "custom": {"name": "sql"}},
    ]))
    code, out, _ = run("lint", str(path), "--strict-report")
    assert code == 1
    assert "error: bad name: the name must match" in out
    assert "error: bad name: invalid JSON Schema at type" in out
    assert "error: ok_tool: duplicate name" in out
    assert "error: #3: not a function tool" in out
    assert "warning: ok_tool: no built-in handler" in out
    assert "strict: ok_tool: [chat]" not in out  # the first ok_tool is strict-ready
    not_json = tmp_path / "broken.json"
    not_json.write_text("[{")
    assert run("lint", str(not_json))[0] == 1


def test_call_dry_run_prints_the_request_and_redacts_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XERJ_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("XERJ_API_KEY", "SENTINEL-KEY")
    code, out, _ = run("call", "xerj_memory_recall", '{"namespace": "agent", "query": "tea", "k": "3"}', "--dry-run")
    shown = json.loads(out)
    assert code == 0 and "SENTINEL-KEY" not in out
    assert shown == {"method": "POST", "url": "http://127.0.0.1:9/_memory/agent/_recall",
                     "headers": {"Accept": "application/json", "Accept-Encoding": "identity",
                                 "Content-Type": "application/json",
                                 "User-Agent": "xerj-tools/0.1", "Authorization": "<redacted>"},
                     "body": {"query": "tea", "k": 3}, "repairs": ['$.k: "3" → 3']}
    code, out, _ = run("call", "xerj_search", '{"index": "../x"}', "--dry-run")
    assert code == 1 and json.loads(out)["error"]["code"] == "invalid_arguments"


def test_call_dry_run_refuses_what_the_dispatcher_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    # One default policy for every path: the dry run prints no request the dispatcher would refuse.
    monkeypatch.setenv("XERJ_URL", "http://127.0.0.1:9")
    for args in ('{"index": ".xerj-memory-tenant-b", "query": {}}', '{"index": "*", "query": {}}'):
        code, out, _ = run("call", "xerj_search", args, "--dry-run")
        error = json.loads(out)["error"]
        assert code == 1 and error["code"] == "policy_denied" and error["refused"] == "index"
        with XerjStandIn() as xerj, Dispatcher(url=xerj.url) as dispatcher:
            result = dispatcher.run({"id": "c", "type": "function",
                                     "function": {"name": "xerj_search", "arguments": args}})
            assert result.code == "policy_denied" and xerj.requests == []


def test_call_dispatches_to_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    with XerjStandIn() as xerj:
        monkeypatch.setenv("XERJ_URL", xerj.url)
        code, out, _ = run("call", "xerj_search", '{"index": "tickets", "query": {"term": {"status": "open"}}}')
        assert code == 0 and json.loads(out)["total"] == 4
        code, out, _ = run("call", "xerj_search", '{"index": "missing", "query": {}}')
        error = json.loads(out)["error"]
        assert code == 1 and error["code"] == "index_not_found" and error["indices"] == ["docs", "tickets"]
        # an unknown name: the listing is read (`xerj.listings`) and no search is sent
        assert [r.path for r in xerj.requests] == ["/tickets/_search"] and len(xerj.listings) == 2


def test_help_has_an_example_for_each_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("validate", "tools", "lint", "call", "demo"):
        assert main([command, "--help"]) == 0
        assert "example" in capsys.readouterr().out and EXAMPLES[command]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("xerj-tools 0.1.0")


def test_the_installed_script_and_python_dash_m() -> None:
    script = Path(sys.executable).with_name("xerj-tools")
    assert script.exists(), "the console script is installed with the package"
    env = {**os.environ, "XERJ_URL": ""}
    done = subprocess.run([str(script), "validate", str(FIXTURES / "chat_messages.jsonl")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 1 and "line 3, id call_a2" in done.stdout
    done = subprocess.run([sys.executable, "-m", "xerj_tools", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("xerj-tools ")


class LineFeed(io.TextIOBase):
    """A stdin that hands out lines from a generator, one at a time, and can look at stdout
    while the input is still being read."""

    def __init__(self, lines: Any, watch: io.StringIO | None = None, at: int = 0) -> None:
        self.lines, self.watch, self.at, self.count, self.seen = iter(lines), watch, at, 0, ""

    def readable(self) -> bool:
        return True

    def __iter__(self) -> LineFeed:
        return self

    def __next__(self) -> str:
        self.count += 1
        if self.watch is not None and self.count == self.at:
            self.seen = self.watch.getvalue()
        return next(self.lines)


def many_lines(total: int) -> Any:
    yield json.dumps({"name": "xerj_search", "id": "bad1", "arguments": {"index": "docs", "query": {}, "size": -1}}) + "\n"
    for i in range(total):
        yield json.dumps({"name": "xerj_search", "id": f"c{i}", "arguments": {"index": "docs", "query": {}}}) + "\n"
    yield json.dumps({"name": "xerj_search", "id": "bad2", "arguments": {"index": "docs"}}) + "\n"


@pytest.mark.parametrize("form", ["text", "json"])
def test_reports_are_written_while_the_input_streams(form: str) -> None:
    out = io.StringIO()
    feed = LineFeed(many_lines(5_000), watch=out, at=2_500)
    code = main(["validate", "-", "--format", form], stdin=feed, stdout=out, stderr=io.StringIO())
    assert code == 1 and feed.count > 5_000
    assert "bad1" in feed.seen and "bad2" not in feed.seen  # the first report was out halfway through
    if form == "json":
        report = json.loads(out.getvalue())
        assert (report["calls"], report["invalid"]) == (5_002, 2)
        assert [r["call_id"] for r in report["results"]] == ["bad1", "bad2"]
    else:
        assert out.getvalue().rstrip().endswith("5002 calls: 5000 valid (0 after repair), 2 invalid")


def test_a_deep_line_is_reported_and_the_rest_validated(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    deep_args = json.dumps({"index": "docs", "query": {"bool": {"filter": json.loads("[" * 80 + "]" * 80)}}})
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n"
                    + json.dumps({"name": "xerj_search", "id": "ok", "arguments": {"index": "docs", "query": {}}}) + "\n"
                    + json.dumps({"name": "xerj_search", "id": "deep", "arguments": deep_args}) + "\n"
                    + '{"name": "xerj_search", "id": "deeper", "arguments": ' + "[" * 5000 + "]" * 5000 + "}\n")
    code, out, err = run("validate", str(path))
    assert code == 1 and err == ""
    assert "line 1: invalid\n  $: line 1 is nested deeper than" in out
    assert "line 3, id deep xerj_search: invalid\n  $: arguments are nested deeper than 64 levels" in out
    assert "line 4: invalid\n  $: line 4 is nested deeper than" in out
    assert out.rstrip().endswith("2 calls: 1 valid (0 after repair), 1 invalid; 2 unreadable lines")


def test_non_string_arguments_are_reported_not_raised() -> None:
    lines = "".join(json.dumps(record) + "\n" for record in [
        {"type": "function_call", "call_id": "r1", "name": "xerj_search", "arguments": 5},
        {"type": "function_call", "call_id": "r2", "name": "xerj_search", "arguments": ["index", "docs"]},
        {"id": "c1", "type": "function", "function": {"name": "xerj_search", "arguments": 2.5}},
    ])
    code, report = validate_json("-", stdin=lines)
    assert code == 1 and (report["calls"], report["invalid"]) == (3, 3)
    assert all("JSON object" in r["problems"][0]["message"] for r in report["results"])


HOSTILE_ID = "call\x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil"


def test_control_characters_from_the_input_are_escaped() -> None:
    line = json.dumps({"name": "xerj_\x1b[31msearch", "id": HOSTILE_ID, "arguments": {"index": "docs\x1b[0m"}}) + "\n"
    code, out, _ = run("validate", "-", stdin=line)
    assert code == 1 and "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u202eevil" in out
    assert not any(c in out for c in "\x1b\x07\x9b\u202e")
    code, out, _ = run("validate", "-", "--format", "json", stdin=line)
    assert not any(c in out for c in "\x1b\x07\x9b\u202e")
    assert json.loads(out)["results"][0]["call_id"] == HOSTILE_ID  # escaped, and still the same string


def test_ctrl_c_prints_one_line_and_exits_130() -> None:
    def interrupted() -> Any:
        yield json.dumps({"name": "xerj_search", "arguments": {"index": "docs"}}) + "\n"
        raise KeyboardInterrupt

    err = io.StringIO()
    code = main(["validate", "-"], stdin=LineFeed(interrupted()), stdout=io.StringIO(), stderr=err)
    assert code == 130 and err.getvalue() == "xerj-tools: interrupted\n"


def test_a_mistyped_subcommand_gets_a_suggestion() -> None:
    code, _, err = run("valdate", "calls.jsonl")
    assert code == 2 and "did you mean 'validate'?" in err and err.count("\n") == 1
    code, _, err = run("frobnicate")
    assert code == 2 and "did you mean" not in err and "validate" in err
    assert run()[0] == 2  # no command: the help, and a usage error
