"""The command line at its edges: a reader that goes away, an ASCII stdout, hostile names,
big reports, odd arguments; as the installed script where the process's own streams matter."""

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

from xerj_tools._cli._main import main

SCRIPT = Path(sys.executable).with_name("xerj-tools")
GOOD = {"id": "c1", "type": "function", "function": {"name": "xerj_search", "arguments": '{"index": "docs", "query": {}}'}}
BAD = {"id": "c2", "type": "function",
       "function": {"name": "xerj_search", "arguments": '{"index": "docs", "query": {}, "size": 20000}'}}
REPAIRABLE = {"id": "c3", "type": "function",
              "function": {"name": "xerj_search", "arguments": '{"index": "docs", "query": {}, "size": "10"}'}}  # fmt: skip


def script(*argv: str, env: dict[str, str] | None = None, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *argv], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "XERJ_URL": "", **(env or {})}, timeout=120)


def jsonl(path: Path, records: list[Any], times: int = 1) -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) * times)
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough report to fill any pipe: 20,000 invalid calls among 60,000."""
    return jsonl(tmp_path_factory.mktemp("big") / "big.jsonl", [BAD, GOOD, REPAIRABLE], 20_000)


# ---------------------------------------------------------------- a reader that goes away


@pytest.mark.parametrize(
    "argv",
    [
        ("validate", "{big}"),
        ("validate", "{big}", "--format", "json"),
        ("validate", "{big}", "--jobs", "2"),
        ("validate", "{big}", "--jobs", "2", "--format", "json"),
        ("validate", "-", "--jobs", "2"),
        ("tools",),
        ("lint", "--strict-report"),
        ("call", "xerj_search", '{"index": "docs", "query": {}}', "--dry-run"),
        ("demo",),
    ],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(big: Path, argv: tuple[str, ...]) -> None:
    args = [a.replace("{big}", str(big)) for a in argv]
    with open(big, "rb") as stdin:
        done = subprocess.run(f"{SCRIPT} {' '.join(map(_quoted, args))} | head -c 1 >/dev/null; "
                              'echo "${PIPESTATUS[0]}"', shell=True, executable="/bin/bash", stdin=stdin,
                              capture_output=True, text=True, env={**os.environ, "XERJ_URL": ""}, timeout=120)
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert done.stdout.strip() in ("141", "0", "1")  # 141: the pipe was closed on it; 0/1: it had finished


def _quoted(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def test_a_closed_pipe_is_exit_141_not_the_invalid_status(big: Path) -> None:
    done = subprocess.run(f"{SCRIPT} validate {big} | head -n 1; echo \"status ${{PIPESTATUS[0]}}\"", shell=True,
                          executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[0].startswith("line 1, id c2 xerj_search: invalid")
    assert done.stdout.splitlines()[-1] == "status 141" and done.stderr == ""


# ---------------------------------------------------------------- encodings and hostile names


def test_an_ascii_stdout_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "r.jsonl", [REPAIRABLE])
    env = {"PYTHONIOENCODING": "ascii"}
    text = script("validate", str(path), env=env)
    assert text.returncode == 0 and '"10" \\u2192 10' in text.stdout and text.stderr == ""
    as_json = script("validate", str(path), "--format", "json", env=env)
    assert json.loads(as_json.stdout)["results"][0]["repairs"] == ['$.size: "10" → 10']
    assert as_json.stdout.isascii()
    tools = script("tools", env=env)
    assert tools.returncode == 0 and len(json.loads(tools.stdout)) == 9


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_lone_surrogate_tool_name_is_reported_escaped(tmp_path: Path, jobs: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"name": "\\udfff", "arguments": "{}"}\n' + json.dumps(GOOD).encode() + b"\n")
    text = script("validate", str(path), "--jobs", jobs)
    assert text.returncode == 1 and text.stderr == ""
    assert text.stdout.splitlines()[0] == "line 1 \\udfff: invalid"
    as_json = script("validate", str(path), "--format", "json", "--jobs", jobs)
    report = json.loads(as_json.stdout)
    assert report["results"][0]["tool"] == "\udfff" and report["calls"] == 2
    assert "\\udfff" in as_json.stdout  # the escape JSON has for it, not the raw character


def test_the_same_report_from_one_or_two_jobs_when_a_line_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + json.dumps(BAD).encode() + b"\n"
                     + b'{"name": "xerj_search", "arguments": "\xff\xfe"}\n' + json.dumps(GOOD).encode() + b"\n")
    for form in ("text", "json"):  # in-process: a file is read alike there (stdin is not: below)
        one = run("validate", str(path), "--format", form)
        two = run("validate", str(path), "--format", form, "--jobs", "2")
        assert one == two
        assert one[0] == 2
        assert ("line 2, id c2" if form == "text" else '"line": 2, "index": 2') in one[1]
    assert json.loads(run("validate", str(path), "--format", "json", "--jobs", "2")[1])["error"] == (
        "the input is not UTF-8 text"
    )


def test_the_same_report_from_one_or_two_jobs_on_stdin_that_stops_being_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stdin of bytes, as a process's own is (read through its `buffer`), cut into blocks of 40
    # lines rather than 4,000: the line that is not UTF-8 comes after two whole blocks.
    from xerj_tools._offline import _batch

    monkeypatch.setattr(_batch, "BLOCK_LINES", 40)
    data = (json.dumps(BAD) + "\n") * 90 + '{"name": "xerj_search", "arguments": "\udcff"}\n'
    raw = data.encode("utf-8", "surrogateescape")

    def validate(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="surrogateescape")
        return main(["validate", "-", *argv], stdin=stdin, stdout=out, stderr=err), out.getvalue(), err.getvalue()

    one, two = validate(), validate("--jobs", "2")
    assert one == two and one[0] == 2 and one[1].count(": invalid") == 90
    assert one[2] == "xerj-tools: the input is not UTF-8 text\n"


# ---------------------------------------------------------------- what the command line takes


def test_validate_on_a_tools_file_points_to_lint() -> None:
    code, out, err = run("validate", str(Path(__file__).parents[2] / "tools.json"))
    assert code == 2 and out == ""
    assert "a tools file (9 tool definitions)" in err and "xerj-tools lint" in err


def lint_stdin(data: bytes, *argv: str) -> tuple[int, str, str]:
    """`lint -` on a standard input of bytes, as a process's own stdin is."""
    out, err = io.StringIO(), io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="latin-1")  # not UTF-8, as a locale may be
    code = main(["lint", "-", *argv], stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_lint_reads_a_tools_file_from_stdin() -> None:
    tools = (Path(__file__).parents[2] / "tools.json").read_bytes()
    assert lint_stdin(tools) == (0, "0 errors, 0 warnings\n", "")
    named = json.dumps([{"type": "function", "function": {"name": "café_search"}}]).encode()
    code, out, _ = lint_stdin(json.dumps(json.loads(named), ensure_ascii=False).encode())
    assert code == 1 and "error: café_search: the name must match" in out  # read as UTF-8


@pytest.mark.parametrize(
    ("data", "finding"),
    [
        (b"[{", "error: <stdin>: the file is not JSON: Expecting"),
        (b"", "error: <stdin>: the file is not JSON: Expecting value"),
        (b'{"name": "x"}', "error: <stdin>: the file must hold a JSON array of tool definitions"),
        (b"[" * 100_000, "error: <stdin>: the file is nested too deep to read"),
    ],
    ids=["broken", "empty", "no-array", "deep"],
)
def test_lint_names_stdin_and_exits_1_on_a_bad_tools_file(data: bytes, finding: str) -> None:
    code, out, err = lint_stdin(data)
    assert (code, err) == (1, "")
    assert out.startswith(finding) and out.endswith("\n1 errors, 0 warnings\n")


def test_lint_names_the_file_it_read(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("[{")
    code, out, _ = run("lint", str(path))
    assert code == 1 and out.startswith(f"error: {path}: the file is not JSON: ")
    path.write_text('{"tools": 3}')
    code, out, _ = run("lint", str(path))
    assert code == 1 and out.startswith(f"error: {path}: the file must hold a JSON array")
    levels = 400  # JSON 800 deep: read, but past the recursion limit for the schema's check
    schema = '{"type": "object", "properties": {"a": ' * levels + "{}" + "}}" * levels
    path.write_text(f'[{{"type": "function", "function": {{"name": "deep", "parameters": {schema}}}}}]')
    assert run("lint", str(path))[:2] == (1, f"error: {path}: a schema is nested too deep to check\n1 errors, 0 warnings\n")


def test_lint_exits_2_on_a_file_it_cannot_read(tmp_path: Path) -> None:
    assert lint_stdin(b"[\xff]") == (2, "", "xerj-tools: cannot read <stdin>: the file is not UTF-8 text\n")
    path = tmp_path / "latin1.json"
    path.write_bytes(b"[\xff]")
    assert run("lint", str(path)) == (2, "", f"xerj-tools: cannot read {path}: the file is not UTF-8 text\n")
    assert run("lint", str(tmp_path / "gone.json"))[0::2] == (2, f"xerj-tools: cannot read {tmp_path / 'gone.json'}: No such file or directory\n")


def test_a_request_body_with_tools_and_messages_is_still_read_for_its_calls(tmp_path: Path) -> None:
    body = {"tools": [{"type": "function", "function": {"name": "xerj_search", "parameters": {}}}],
            "messages": [{"role": "assistant", "tool_calls": [GOOD]}]}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body, indent=1))
    code, out, _ = run("validate", str(path))
    assert code == 0 and out.startswith("1 call: 1 valid")


def test_call_takes_its_arguments_as_validate_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XERJ_URL", raising=False)
    args = '{"index": "docs", "query": {}}'
    forms = [("xerj_search", args), ("--tool", "xerj_search", "--args", args),
             ("xerj_search", "--args", args), ("--tool", "xerj_search", args)]
    outputs = {run("call", *form, "--dry-run")[1] for form in forms}
    assert len(outputs) == 1 and json.loads(outputs.pop())["url"].endswith("/docs/_search")
    code, _, err = run("call", "xerj_search", "--dry-run")
    assert code == 2 and "call --tool TOOL --args ARGS" in err
    code, _, err = run("validate", "--tool", "xerj_search")
    assert code == 2 and err == "xerj-tools: --tool xerj_search needs its arguments: --args JSON (or @file, or - for stdin)\n"


@pytest.mark.parametrize("port", ["99999", "-1", "abc"])
def test_a_port_out_of_range_is_a_one_line_usage_error(port: str) -> None:
    done = script("stand-in", "--port", port)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("xerj-tools stand-in: error: argument --port: ")


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "http://host:port"])
def test_a_malformed_url_is_a_one_line_usage_error(url: str) -> None:
    done = script("call", "xerj_search", '{"index": "docs", "query": {}}', env={"XERJ_URL": url})
    assert done.returncode == 2 and done.stderr.startswith("xerj-tools: a XERJ URL must look like")
    assert len(done.stderr.splitlines()) == 1


def test_jobs_are_bounded_by_the_cores(tmp_path: Path) -> None:
    cores = len(os.sched_getaffinity(0))
    many = cores + 6  # (enough to tell; a code without the bound starts them all)
    path = jsonl(tmp_path / "c.jsonl", [GOOD, BAD])
    code, out, err = run("validate", str(path), "--jobs", str(many))
    assert code == 1 and out.endswith("2 calls: 1 valid (0 after repair), 1 invalid\n")
    assert err == f"xerj-tools: --jobs {many}: this machine runs {cores} at once; using {cores}\n"


# ---------------------------------------------------------------- big reports


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_summary_counts_each_kind_of_problem_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    # Each kind a thousand times (a count with a thousands separator); with two jobs the file is
    # cut into ranges of 40 kB (about 130 lines) rather than 1 MiB, so that the counts of many
    # ranges are merged, as on a file of a million calls.
    from xerj_tools._offline import _ranges

    monkeypatch.setattr(_ranges, "CHUNK_BYTES", 40_000)
    path = jsonl(tmp_path / "calls.jsonl", [BAD, GOOD, REPAIRABLE], 1_000)
    assert path.stat().st_size > 5 * _ranges.CHUNK_BYTES
    code, out, _ = run("validate", str(path), "--summary", "--jobs", jobs)
    assert code == 1
    assert out.splitlines() == [
        "3000 calls: 2000 valid (1000 after repair), 1000 invalid",
        "problems by tool and argument (calls; where first seen):",
        "    1,000  xerj_search $.size  line 1: must be between 0 and 10000; got 20000",
        "repairs by tool and argument (calls; where first seen):",
        '    1,000  xerj_search $.size  line 3: $.size: "10" → 10',
    ]
    code, out, _ = run("validate", str(path), "--summary", "--format", "json", "--jobs", jobs)
    report = json.loads(out)
    assert report["invalid"] == 1_000 and "results" not in report
    assert report["problems"] == [{"tool": "xerj_search", "path": "$.size", "calls": 1_000,
                                   "first": {"line": 1, "message": "must be between 0 and 10000; got 20000"}}]


def test_summary_of_lines_that_are_not_json(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps(GOOD) + "\nnot json\n" + json.dumps(BAD) + "\n")
    code, out, _ = run("validate", str(path), "--summary")
    assert code == 1 and "        1  (not JSON) $  line 2: " in out


def test_progress_shows_how_far_into_the_file_and_what_is_left() -> None:
    from xerj_tools._cli._validate import Progress

    err, clock = FakeTTY(), iter([0.0, 10.0, 20.0])
    import time

    real = time.perf_counter
    time.perf_counter = lambda: next(clock)  # type: ignore[assignment]
    try:
        progress = Progress(err, io.StringIO(), size=4_000_000, position=lambda: 1_000_000)
        progress(10_000)
        progress.position = lambda: 2_000_000
        progress(20_000)
    finally:
        time.perf_counter = real  # type: ignore[assignment]
    shown = err.getvalue().split("\r")[1:]
    assert shown[0].startswith("validated 10,000 calls (1,000/s), 25% of 4.0 MB, about 30 s left")
    assert shown[1].startswith("validated 20,000 calls (1,000/s), 50% of 4.0 MB, about 20 s left")


def test_progress_goes_on_lines_of_its_own_when_the_report_shares_the_terminal() -> None:
    from xerj_tools._cli._validate import Progress

    err, out = FakeTTY(), FakeTTY()
    progress = Progress(err, out)
    progress(10_000)
    progress.end()
    shown = err.getvalue()
    assert "\r" not in shown and shown.startswith("validated 10,000 calls (") and shown.endswith("/s)\n")


def test_progress_on_a_terminal_with_jobs_shows_the_share_of_the_file(tmp_path: Path) -> None:
    # Progress shows every 10,000 calls: valid ones (the fast lane), and one invalid call.
    path = jsonl(tmp_path / "calls.jsonl", [GOOD], 10_500)
    with path.open("a") as file:
        file.write(json.dumps(BAD) + "\n")
    err = FakeTTY()
    code, _, _ = run("validate", str(path), "--jobs", "2", "--summary", err=err)
    assert code == 1 and "% of " in err.getvalue() and err.getvalue().endswith("\n")


# ---------------------------------------------------------------- Parquet


def test_a_corrupt_parquet_page_past_the_first_batch_is_a_usage_error(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "calls.parquet"
    cells = [json.dumps(BAD if i % 100 == 0 else GOOD) for i in range(10_000)]
    pq.write_table(pa.table({"tool_call": cells}), path, row_group_size=1000, compression="none")
    column = pq.ParquetFile(path).metadata.row_group(8).column(0)
    raw = bytearray(path.read_bytes())
    for at in range(column.data_page_offset, column.data_page_offset + 30):
        raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    code, out, err = run("validate", str(path), "--column", "tool_call")
    assert code == 2 and err.startswith(f"xerj-tools: cannot read {path} as Parquet after row ")
    assert out.count(": invalid") >= 8  # the rows read before the corrupt page are reported
    code, out, err = run("validate", str(path), "--format", "json")
    report = json.loads(out)  # one document still, closed with the error
    assert code == 2 and report["error"].startswith("cannot read") and len(report["results"]) >= 8


# ---------------------------------------------------------------- one huge line


@pytest.mark.parametrize("newline", [b"", b"\n"])
def test_one_huge_line_is_read_once_in_about_twice_its_size(tmp_path: Path, newline: bytes) -> None:
    import tracemalloc

    size = 24 << 20
    path = tmp_path / "line.jsonl"
    path.write_bytes(b'{"name": "xerj_search", "arguments": "' + b"a" * size + newline)
    tracemalloc.start()
    try:
        code, out, err = run("validate", str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and out == ""
    why = "Invalid control character at: line 1 column 25165863" if newline else "Unterminated string"
    assert err.startswith(f"xerj-tools: the input is neither JSON nor JSON Lines: {why}")
    assert peak < (2.3 if not newline else 3.3) * size, f"peak {peak / size:.2f}x the line"


@pytest.mark.parametrize("orjson", [True, False])
def test_a_one_line_document_reads_alike_with_or_without_orjson(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, orjson: bool
) -> None:
    """A file of one JSON document and no line end (what `json.dump` writes) is read as one
    document, whether or not orjson (the `fast` extra) is there to say it is JSON first."""
    from xerj_tools import _json

    pytest.importorskip("orjson") if orjson else monkeypatch.setattr(_json, "_orjson", False)
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"name": "xerj_search", "arguments": {"index": "docs"}}))
    out = io.StringIO()
    assert main(["validate", str(path)], stdout=out) == 1
    assert "xerj_search: invalid" in out.getvalue() and "1 call: 0 valid" in out.getvalue()
