"""The Dask path of offline validation gives the report `xerj-tools validate` prints.

Skipped without the ``dask`` extra. The in-process scheduler runs by default; the local cluster
(processes, as on a real cluster) is `slow`.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dask.bag")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from test_validate_scale import mixed_lines

from xerj_tools._cli._main import main
from xerj_tools.integrations.dask import validate_jsonl, validate_parquet, write_report


def cli(*argv: str) -> tuple[int, dict[str, Any], str]:
    out = io.StringIO()
    code = main(["validate", *argv, "--format", "json"], stdout=out, stderr=io.StringIO())
    text = io.StringIO()
    main(["validate", *argv], stdout=text, stderr=io.StringIO())
    return code, json.loads(out.getvalue()), text.getvalue()


@pytest.fixture
def calls_file(tmp_path: Path) -> Path:
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(mixed_lines(300)) + "\n", encoding="utf-8")
    return path


def test_dask_gives_the_report_of_the_command(calls_file: Path) -> None:
    code, printed, text = cli(str(calls_file))
    report = validate_jsonl(str(calls_file), scheduler="sync", blocksize=2_000)  # many partitions
    assert report == printed
    out = io.StringIO()
    assert write_report(report, out) == code == 1 and out.getvalue() == text


def test_dask_over_several_files_names_each(calls_file: Path, tmp_path: Path) -> None:
    second = tmp_path / "more.jsonl"
    second.write_text("\n".join(mixed_lines(20)) + "\n", encoding="utf-8")
    report = validate_jsonl([str(calls_file), str(second)], scheduler="sync", blocksize=5_000)
    one, two = cli(str(calls_file))[1], cli(str(second))[1]
    assert report["calls"] == one["calls"] + two["calls"]
    later = [r for r in report["results"] if r["file"] == str(second)]
    assert [r["line"] for r in later] == [r["line"] for r in two["results"]]  # lines per file
    assert later[0].get("index", 0) in (0, one["calls"] + two["results"][0].get("index", 0))


def test_dask_over_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = [line for line in mixed_lines(60) if line]
    path = tmp_path / "calls.parquet"
    pq.write_table(
        pa.table({"n": list(range(len(lines))), "tool_call": lines}), path, row_group_size=16
    )
    assert validate_parquet(str(path), column="tool_call", scheduler="sync") == cli(str(path))[1]


@pytest.mark.slow
# The scheduler's HTTP server tries port 8787 first and warns when another cluster holds it (two
# suites at once): it then takes another port, which is all this test needs (the probe's socket
# is left to the collector by distributed itself).
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dask_on_a_local_cluster_gives_the_report_of_the_command(calls_file: Path) -> None:
    assert validate_jsonl(str(calls_file), blocksize=4_000) == cli(str(calls_file))[1]


GOOD_LINE = json.dumps({"name": "xerj_search", "arguments": '{"index": "docs", "query": {}}'}).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xef\xbb\xbf" + GOOD_LINE + b"\n" + GOOD_LINE + b"\n", "Unexpected UTF-8 BOM"),
        (GOOD_LINE + b"\x0c" + GOOD_LINE + b"\x0b" + GOOD_LINE + b"\n", "Extra data"),
        (b"\xff\xfe" + GOOD_LINE + b"\n", "not UTF-8 text"),
    ],
)
def test_dask_refuses_what_the_command_refuses(tmp_path: Path, data: bytes, why: str) -> None:
    from xerj_tools._offline._validate import InputError

    path = tmp_path / "odd.jsonl"
    path.write_bytes(data)
    err = io.StringIO()
    assert main(["validate", str(path)], stdout=io.StringIO(), stderr=err) == 2 and why in err.getvalue()
    with pytest.raises(InputError, match=why) as raised:
        validate_jsonl(str(path), scheduler="sync")
    assert str(raised.value).startswith(f"{path}: ")
