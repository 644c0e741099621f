"""Offline validation at scale: the formats calls are kept in, a file without a call,
`--jobs N`, Parquet, plain mergeable batch results and the Dask path."""

from __future__ import annotations

import io
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import FakeTTY
from support import run_cli as run

from xerj_tools import merge_results, validate_batch
from xerj_tools._cli._main import main
from xerj_tools._install import install_hint
from xerj_tools._offline import _batch

from conftest import chat_call

SEARCH = {"index": "docs", "query": {"match": {"body": "outage"}}}



def completion(*calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": list(calls)},
            }
        ],
    }


def batch_line(custom_id: str, *calls: dict[str, Any]) -> dict[str, Any]:
    """One line of an OpenAI Batch API output file."""
    return {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "response": {"status_code": 200, "request_id": "req_1", "body": completion(*calls)},
        "error": None,
    }


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- formats


def test_a_batch_output_file_with_an_invalid_search_is_invalid(tmp_path: Path) -> None:
    """The calls are found in each line's response body, and one invalid call fails the file."""
    path = write_jsonl(
        tmp_path / "batch_output.jsonl",
        [
            batch_line("a", chat_call("xerj_search", SEARCH, "call_a")),
            batch_line("b", chat_call("xerj_search", {**SEARCH, "size": -1}, "call_b")),
            {
                "id": "batch_req_c",
                "custom_id": "c",
                "response": None,
                "error": {"code": "server_error", "message": "failed"},
            },
        ],
    )
    code, out, _ = run("validate", str(path))
    assert code == 1
    assert (
        "line 2, id call_b xerj_search: invalid\n  $.size: must be between 0 and 10000; got -1"
        in out
    )
    assert out.splitlines()[-1] == "2 calls: 1 valid (0 after repair), 1 invalid"


def test_a_valid_batch_output_file_passes(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "batch_output.jsonl", [batch_line("a", chat_call("xerj_search", SEARCH))]
    )
    assert run("validate", str(path))[0] == 0


LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}
NARROW_SEARCH = {
    "type": "function",
    "function": {
        "name": "xerj_search",
        "parameters": {
            "type": "object",
            "properties": {"index": {"type": "string"}, "query": {"type": "object"}},
            "required": ["index", "query"],
        },
    },
}


def example(tools: list[Any] | None, *calls: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "find it"},
            {"role": "assistant", "content": None, "tool_calls": list(calls)},
            {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
        ]
    }
    if tools is not None:
        record["tools"] = tools
    return record


def test_fine_tuning_examples_are_validated_against_their_own_tools(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "train.jsonl",
        [
            example([LOOKUP], chat_call("lookup_order", {"order_id": "A-1"})),  # a tool of its own
            example([LOOKUP], chat_call("lookup_order", {"order_id": [7]})),  # its schema says string
            example(
                [NARROW_SEARCH], chat_call("xerj_search", {**SEARCH, "size": 10})
            ),  # not in its tools
            example(
                [NARROW_SEARCH], chat_call("xerj_search", {"index": "a/b", "query": {}})
            ),  # XERJ's checks
            example(
                None, chat_call("xerj_search", {**SEARCH, "size": 10})
            ),  # no tools: the registry's
            example(
                [LOOKUP], chat_call("xerj_search", SEARCH)
            ),  # a tool the example does not offer
        ],
    )
    code, report = validate_json(str(path))
    assert code == 1
    assert report["calls"] == 6 and report["valid"] == 2
    problems = {r["line"]: [p["path"] for p in r["problems"]] for r in report["results"]}
    assert problems == {2: ["$.order_id"], 3: ["$.size"], 4: ["$.index"], 6: ["$"]}
    assert "unknown tool 'xerj_search'; known tools: lookup_order" in json.dumps(report)


def test_an_example_whose_tools_are_not_valid_says_so(tmp_path: Path) -> None:
    bad = {"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object"}}}
    path = write_jsonl(tmp_path / "train.jsonl", [example([bad], chat_call("lookup_order", {}))])
    code, report = validate_json(str(path))
    assert (
        code == 1
        and "the example's tools are invalid" in report["results"][0]["problems"][0]["message"]
    )


def validate_json(*argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run("validate", *argv, "--format", "json")
    return code, json.loads(out)


@pytest.mark.parametrize(
    "text",
    [
        "",
        json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": {"choices": []}}})
        + "\n",
        json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n",
        json.dumps({"some": "record"}) + "\n",
    ],
    ids=["empty", "batch-without-calls", "chat-without-calls", "unknown"],
)
def test_an_input_in_which_no_call_is_recognised_never_passes(text: str) -> None:
    code, out, err = run("validate", "-", stdin=text)
    assert code == 1
    assert "0 calls" in out and "formats tried: OpenAI Batch API output; fine-tuning JSONL" in out
    assert "no tool call recognised" in err
    code, out, _ = run("validate", "-", "--format", "json", stdin=text)
    document = json.loads(out)
    assert code == 1 and document["calls"] == 0 and "Parquet" in document["formats_tried"]


def test_the_formats_are_a_table_a_new_one_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Detection is extensible: a format is one entry of `FORMATS`, tried before transcripts."""
    from xerj_tools._offline import _formats
    from xerj_tools._offline._validate import FoundCall

    def calls(record: Any) -> Any:
        yield FoundCall(record["fn"], record["args"])

    custom = _formats.RecordFormat("custom", "a custom log", lambda r: "fn" in r, calls)
    monkeypatch.setattr(_formats, "FORMATS", [custom, *_formats.FORMATS])
    line = json.dumps({"fn": "xerj_search", "args": {**SEARCH, "size": -1}}) + "\n"
    code, out, _ = run("validate", "-", stdin=line)
    assert code == 1 and "$.size: must be between 0 and 10000" in out
    code, out, _ = run("validate", "-", stdin=json.dumps({"x": 1}) + "\n")
    assert code == 1 and "formats tried: a custom log; OpenAI Batch API output" in out


# ---------------------------------------------------------------- --jobs N and batches


def mixed_lines(n: int) -> list[str]:
    """Valid, invalid, repaired, unreadable, blank, call-less and unrecognised lines, mixed."""
    out = []
    for i in range(n):
        kind = i % 9
        if kind == 0:
            out.append(json.dumps(chat_call("xerj_search", {**SEARCH, "size": -1}, f"c{i}")))
        elif kind == 1:
            out.append(
                json.dumps(chat_call("xerj_search", {**SEARCH, "size": "10"}, f"c{i}"))
            )  # repaired
        elif kind == 2:
            out.append("{not json")
        elif kind == 3:
            out.append("")
        elif kind == 4:
            out.append(json.dumps([{"type": "web_search_call", "id": "ws"}]))
        elif kind == 5:
            out.append(
                json.dumps(
                    batch_line(
                        str(i),
                        chat_call("xerj_get_document", {"index": "d", "id": "x"}),
                        chat_call("xerj_memory_recall", {"namespace": "A"}, ""),
                    )
                )
            )
        elif kind == 6:
            out.append(json.dumps({"name": "xerj_search", "arguments": SEARCH}))  # no id: "call #n"
        else:
            out.append(json.dumps(chat_call("xerj_search", SEARCH, f"c{i}")))
    return out


@pytest.mark.parametrize("form", ["text", pytest.param("json", marks=pytest.mark.slow)])
def test_jobs_gives_the_report_of_one_process(
    tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_batch, "BLOCK_LINES", 10)  # many blocks, so that numbering crosses them
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(mixed_lines(95)) + "\n", encoding="utf-8")
    one = run("validate", str(path), "--format", form)
    two = run("validate", str(path), "--format", form, "--jobs", "2")
    assert one == two and one[0] == 1
    assert (
        "line 48 is not JSON" in one[1] and "call #" not in one[1]
    )  # unreadable lines keep their number


def test_jobs_reads_a_json_document_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / "conversation.json"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [chat_call("xerj_search", {**SEARCH, "size": -1})],
                    }
                ]
            },
            indent=2,
        )
    )
    assert run("validate", str(path), "--jobs", "2") == run("validate", str(path))


@pytest.mark.parametrize("argv", [("--jobs", "-1"), ("--jobs", "x")])
def test_jobs_must_be_a_count(argv: tuple[str, ...]) -> None:
    assert run("validate", "-", *argv)[0] == 2


@settings(max_examples=25)
@given(cuts=st.lists(st.integers(0, 60), max_size=5))
def test_batches_merged_are_the_report_of_one_pass(cuts: list[int]) -> None:
    lines = mixed_lines(60)
    whole = validate_batch(lines)
    bounds = [0, *sorted(cuts), len(lines)]
    parts = [validate_batch(lines[a:b]) for a, b in itertools.pairwise(bounds)]
    assert merge_results(parts) == whole
    json.dumps(whole)  # plain data


def test_a_batch_is_what_the_command_prints(tmp_path: Path) -> None:
    lines = mixed_lines(40)
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, printed = validate_json(str(path))
    assert _batch.report_of(validate_batch(lines)) == printed
    out = io.StringIO()
    assert (
        _batch.write_report(printed, out) == 1 and out.getvalue() == run("validate", str(path))[1]
    )


@pytest.mark.slow
def test_progress_on_a_terminal_with_jobs(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text(
        (json.dumps(chat_call("xerj_get_document", {"index": "d", "id": "x"})) + "\n") * 20_000
    )
    tty = FakeTTY()
    code = main(["validate", str(path), "--jobs", "2"], stdout=io.StringIO(), stderr=tty)
    shown = tty.getvalue()  # counted as byte ranges come back, 10,000 calls apart at least
    assert code == 0 and re.search(r"\rvalidated 1\d,\d{3} calls \([\d,]+/s\), \d+% of 2.6 MB", shown)
    assert shown.rsplit("\r", 1)[1].startswith("validated 20,000 calls (") and shown.endswith("\n")


# ---------------------------------------------------------------- Parquet


def write_parquet(path: Path, columns: dict[str, list[Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table(columns), path, row_group_size=3)
    return path


def test_a_parquet_column_of_calls(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "calls.parquet",
        {
            "request_id": ["r1", "r2", "r3", "r4", "r5"],
            "tool_call": [
                json.dumps(chat_call("xerj_search", SEARCH, "a")),
                json.dumps(chat_call("xerj_search", {**SEARCH, "size": -1}, "b")),
                None,
                "{broken",
                json.dumps(batch_line("x", chat_call("xerj_search", {**SEARCH, "from": -2}, "e"))),
            ],
        },
    )
    code, report = validate_json(str(path))
    assert code == 1 and (report["calls"], report["invalid"], report["unreadable_lines"]) == (
        3,
        2,
        1,
    )
    assert [(r["line"], r.get("call_id")) for r in report["results"]] == [
        (2, "b"),
        (4, None),
        (5, "e"),
    ]


def test_a_parquet_struct_column_and_the_column_option(tmp_path: Path) -> None:
    calls = [
        {"name": "xerj_search", "arguments": json.dumps(SEARCH)},
        {"name": "xerj_search", "arguments": json.dumps({**SEARCH, "size": -1})},
    ]
    path = write_parquet(
        tmp_path / "calls.parquet", {"a": [1, 2], "b": ["x", "y"], "recorded": calls}
    )
    code, _, err = run("validate", str(path))
    assert code == 2 and "--column" in err and "recorded" in err
    code, report = validate_json(str(path), "--column", "recorded")
    assert code == 1 and report["calls"] == 2 and report["results"][0]["line"] == 2
    assert run("validate", str(path), "--column", "nope")[0] == 2


def test_parquet_without_pyarrow_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calls.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, _, err = run("validate", str(path))
    assert code == 2 and f"the `parquet` extra: {install_hint('parquet')}" in err


# ---------------------------------------------------------------- the installed command


@pytest.mark.slow
def test_the_command_with_jobs_on_a_real_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(mixed_lines(9_000)) + "\n", encoding="utf-8")
    script = Path(sys.executable).parent / "xerj-tools"
    one = subprocess.run(
        [script, "validate", str(path), "--format", "json"], capture_output=True, text=True
    )
    two = subprocess.run(
        [script, "validate", str(path), "--format", "json", "--jobs", "2"],
        capture_output=True,
        text=True,
    )
    assert (one.returncode, one.stdout) == (two.returncode, two.stdout) and one.returncode == 1
    assert json.loads(one.stdout)["calls"] == 7_000  # 7 calls in every 9 lines
    # `python -m xerj_tools` too (multiprocessing does not re-run a package's __main__ in its workers)
    module = subprocess.run(
        [
            sys.executable,
            "-m",
            "xerj_tools",
            "validate",
            str(path),
            "--format",
            "json",
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert (module.returncode, module.stdout) == (one.returncode, one.stdout)
