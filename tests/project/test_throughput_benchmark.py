"""The throughput benchmark runs (quick: one round, one call per worker) and writes both files."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_benchmarks import run_quick

SIDES = {"ours", "ours unbounded", "raw", "raw bounded"}


@pytest.mark.slow  # ~30 s on a busy machine: CI runs it (`-m slow`)
def test_throughput_benchmark_writes_every_level_beside_raw_httpx(tmp_path: Path) -> None:
    report, table = run_quick("throughput", tmp_path, timeout=600)
    assert report["machine"]["python"] and report["pool"] == 10
    levels = [r["in_flight"] for r in report["results"]]
    assert levels == ["1", "10", "100", "500", "up to 8", "up to 64"]
    for result in report["results"]:
        assert set(result["sides"]) == SIDES
        for side in result["sides"].values():
            assert {"calls_per_s", "p50_ms", "p99_ms", "failed"} <= set(side)
            assert side["calls_per_s"]["median"] > 0 and side["p50_ms"]["median"] <= side["p99_ms"]["median"]
        assert set(result["ratios"]) == {"ours / raw", "ours / raw bounded", "ours unbounded / raw"}
        assert len(result["goals"]) == 2 and all(isinstance(v, bool) for v in result["goals"].values())
    assert "Machine: Python" in table and table.count("| AsyncDispatcher, 500 in flight |") == 5
