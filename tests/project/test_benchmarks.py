"""The benchmark scripts run (a quick smoke run: two rounds, small counts) and write both files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import installed

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
sys.path.insert(0, str(SCRIPT.parent))


def run_quick(name: str, out: Path, timeout: float = 300) -> tuple[Any, str]:
    """Run benchmarks/NAME.py with `--quick --out OUT`; the two files it wrote there, the JSON
    report read and the Markdown table (NAME.json and NAME.md, results.* for run.py)."""
    done = subprocess.run([sys.executable, str(SCRIPT.parent / f"{name}.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    stem = "results" if name == "run" else name
    return json.loads((out / f"{stem}.json").read_text()), (out / f"{stem}.md").read_text()


@pytest.mark.slow  # ~10 s: CI runs it (`-m slow`)
def test_benchmark_script_writes_json_and_markdown(tmp_path: Path) -> None:
    report, table = run_quick("run", tmp_path)
    cases = [r["case"] for r in report["results"]]
    assert len(cases) >= 8 and report["machine"]["python"]
    assert any(c.startswith("fitting 50 hits") for c in cases) and any(c.startswith("what the model reads") for c in cases)
    assert all("ours" in r and "baseline" in r for r in report["results"])
    assert table.count("\n|") == len(cases) + 2 and "Machine: Python" in table


@pytest.mark.slow  # ~10 s: new processes, each importing xerj-tools
def test_startup_benchmark_writes_json_and_markdown(tmp_path: Path) -> None:
    report, table = run_quick("startup", tmp_path)
    steps = {r["step"]: r for r in report["results"]}
    assert {"import", "first_dispatcher", "first_valid", "first_invalid", "steady_valid"} <= set(steps)
    assert all(r["ours"]["median"] > 0 for r in report["results"])
    assert steps["import"]["goal"] and steps["import"]["met"] in (True, False)
    assert table.count("\n|") == len(report["results"]) + 2 and "Machine: Python" in table


@pytest.mark.slow  # a few seconds: a loopback server in its own process
def test_stages_benchmark_accounts_for_every_stage(tmp_path: Path) -> None:
    report, table = run_quick("stages", tmp_path)
    stages = report["stages_us"]
    assert list(stages) == ["argument decode", "validation", "policy", "request build", "send", "response decode",
                            "shaping", "serialisation", "bookkeeping"]
    assert all(stages[s] > 0 for s in stages if s != "bookkeeping")  # every hook ran
    assert abs(sum(stages.values()) - report["total_us"]) < 1e-6 * report["total_us"] + 1e-9 and report["bare_us"] > 0
    assert report["transport_alone_us"] > 0
    assert report["raw_us"] > 0 and "| **dispatch, in all** |" in table


def test_all_runs_the_other_benchmarks_with_the_same_flags() -> None:
    import run  # benchmarks/run.py

    assert run.others(["run.py"]) == [] and run.others(["run.py", "--quick"]) == []
    commands = run.others(["run.py", "--all", "--quick", "--out", "/tmp/x"])
    assert [Path(c[1]).name for c in commands] == ["stages.py", "startup.py", "throughput.py", "mcp_load.py",
                                                   "validate.py"]
    assert all(c[0] == sys.executable and c[2:] == ["--quick", "--out", "/tmp/x"] for c in commands)
    assert all(Path(c[1]).is_file() for c in commands)
    assert [c[2:] for c in run.others(["run.py", "--all"])] == [[]] * 5


@pytest.mark.slow  # two server processes and a loopback XERJ
@pytest.mark.skipif(not installed("mcp"), reason="the MCP SDK is not installed")
def test_mcp_load_benchmark_writes_json_and_markdown(tmp_path: Path) -> None:
    report, table = run_quick("mcp_load", tmp_path, timeout=600)
    assert [r["side"] for r in report["results"]] == ["raw dispatcher", "MCP, 1 replica", "MCP, 2 replicas"]
    assert all(r["calls_per_s"]["median"] > 0 and r["p99_ms"]["median"] > 0 for r in report["results"])
    assert report["callers"] == 50 and "| MCP, 2 replicas |" in table


@pytest.mark.slow  # ~30 s: new processes, each loop and `validate` on 10,000 calls
def test_validate_benchmark_writes_json_and_markdown(tmp_path: Path) -> None:
    report, table = run_quick("validate", tmp_path, timeout=600)
    assert report["calls"] == 10_000 and "xerj-tools validate --jobs 2" in report["calls_per_second"]
    assert [m["calls"] for m in report["memory"]] == [2_500, 5_000, 10_000]
    assert "| goal | ratio |" in table
    parts = report["breakdown"]
    assert parts["lines the lane passes"]["lines"] + parts["lines the lane refuses"]["lines"] == 10_000
    assert parts["lines the lane refuses"]["lines"] > 0 and parts["one line"]["lines"] == 1
    if parts["lines the lane passes"]["lines"]:  # (the lane needs orjson: the `fast` extra)
        assert set(report["budget"]) == {"≥ 10× the jsonschema loop", "≥ 0.5× orjson + jsonschema-rs"}


def test_a_run_writes_to_a_new_temporary_directory_unless_told_where(tmp_path: Path) -> None:
    """The kept results in benchmarks/ change only with `--out benchmarks`."""
    from _common import results_dir  # benchmarks/_common.py
    first, second = results_dir(["run.py"], "run"), results_dir(["run.py", "--quick"], "run")
    try:
        assert first != second and first.is_dir() and not any(first.iterdir())
        assert SCRIPT.parent.resolve() not in (first.resolve(), *first.resolve().parents)
    finally:
        first.rmdir()
        second.rmdir()
    assert results_dir(["run.py", "--out", str(tmp_path / "r")], "run") == tmp_path / "r"
    assert (tmp_path / "r").is_dir()


@pytest.mark.parametrize("name", ["run", "stages", "startup", "throughput", "mcp_load", "validate", "invalid"])
def test_every_benchmark_writes_where_results_dir_says(name: str) -> None:
    source = (SCRIPT.parent / f"{name}.py").read_text()
    assert "results_dir(" in source and "out_dir = HERE" not in source and "default=str(HERE)" not in source
