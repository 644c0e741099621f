"""The MCP server under load: calls/s and latency with 50 concurrent callers over HTTP, one
replica and two, beside a raw `AsyncDispatcher` doing the same calls in-process.

Run:  .venv/bin/python benchmarks/mcp_load.py   (writes mcp_load.json and .md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: one round, few calls (a smoke test); --out DIR.

XERJ is benchmarks/run.py's loopback server (its own process: ten hits per search, no work), so
what is measured is the MCP layer and the dispatcher, not an engine. Sides, each with 50 callers
that start their next call when the last one ends:

- raw dispatcher: `AsyncDispatcher.run`, in this process (no MCP, no HTTP in front);
- MCP, 1 replica: `xerj-tools mcp --http 127.0.0.1:0 --stateless` (its own process);
- MCP, 2 replicas: two such processes; caller i always calls replica i % 2 (what a load
  balancer with no affinity does on average).

The callers speak MCP's streamable HTTP as plain JSON-RPC posts (``tools/call``, no session:
the server is stateless), with httpx2 from this process; the SDK's full client costs more CPU per
call on the caller's side and would measure the client instead. Every dispatcher has a pool of
10 connections (the default), so with 50 callers, calls queue for a connection inside each
process. Figures: medians over rounds, p50 and p99 per call within each round; a call that
failed (an `isError` answer, e.g. its 60 s deadline passed) is counted, not hidden.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import run  # noqa: E402  (the loopback server, the typical search)

from xerj_tools import AsyncDispatcher  # noqa: E402

CALLERS = 50
CALLS_EACH = 20
ROUNDS = 3
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def load(call_one: Any, callers: int, each: int) -> dict[str, float]:
    latencies: list[float] = []
    failed = 0

    async def caller(i: int) -> None:
        nonlocal failed
        for _ in range(each):
            start = time.perf_counter()
            failed += not await call_one(i)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(caller(i) for i in range(callers)))
    wall = time.perf_counter() - start
    return {
        "calls_per_s": len(latencies) / wall,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "failed": failed,
    }


async def raw_side(url: str, each: int) -> dict[str, float]:
    async with AsyncDispatcher(url=url) as dispatcher:
        arguments = json.dumps(run.TYPICAL)

        async def call_one(i: int) -> bool:
            result = await dispatcher.run(
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "xerj_search", "arguments": arguments},
                }
            )
            return result.ok

        return await load(call_one, CALLERS, each)


async def mcp_side(urls: list[str], each: int) -> dict[str, float]:
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "xerj_search", "arguments": run.TYPICAL}}  # fmt: skip
    limits = httpx2.Limits(max_connections=CALLERS, max_keepalive_connections=CALLERS)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as http:

        async def call_one(i: int) -> bool:
            reply = await http.post(urls[i % len(urls)], json=body, headers=HEADERS)
            data = reply.text
            if data.startswith("event:") or "\ndata:" in data or data.startswith("data:"):
                data = next(line[5:] for line in data.splitlines() if line.startswith("data:"))
            return json.loads(data)["result"]["isError"] is False

        return await load(call_one, CALLERS, each)


def start_replica(xerj_url: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XERJ_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "xerj_tools", "mcp", "--http", "127.0.0.1:0", "--stateless"],
        env={**env, "XERJ_URL": xerj_url}, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
    if match is None:
        raise RuntimeError(f"the replica did not start: {line}")
    return process, match.group(1)


def median_of(rounds: list[dict[str, float]]) -> dict[str, Any]:
    return {
        key: {
            "median": statistics.median(r[key] for r in rounds),
            "min": min(r[key] for r in rounds),
            "max": max(r[key] for r in rounds),
        }
        for key in rounds[0]
    }


def main() -> None:
    global ROUNDS, CALLS_EACH
    if "--quick" in sys.argv:
        ROUNDS, CALLS_EACH = 1, 2
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "mcp_load")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    sides: dict[str, list[dict[str, float]]] = {
        "raw dispatcher": [],
        "MCP, 1 replica": [],
        "MCP, 2 replicas": [],
    }
    with run.MinimalServer(run.ten_hits()) as xerj:
        while xerj.port.value == 0:  # a loaded machine can take longer than run.py waits
            time.sleep(0.1)
        replicas = [start_replica(xerj.url) for _ in range(2)]
        try:
            urls = [url for _, url in replicas]
            for _ in range(ROUNDS):  # interleaved, so that a slow moment hits every side alike
                sides["raw dispatcher"].append(asyncio.run(raw_side(xerj.url, CALLS_EACH)))
                sides["MCP, 1 replica"].append(asyncio.run(mcp_side(urls[:1], CALLS_EACH)))
                sides["MCP, 2 replicas"].append(asyncio.run(mcp_side(urls, CALLS_EACH)))
        finally:
            for process, _ in replicas:
                process.terminate()
                process.wait(30)
                if process.stderr is not None:
                    process.stderr.close()
    report = {
        "machine": {
            "python": platform.python_version(),
            "cpu": run.cpu_name(),
            "cores": os.cpu_count(),
            # a shared machine: the 1-minute load average before and after the run
            "load": [load_before, os.getloadavg()[0] if hasattr(os, "getloadavg") else None],
        },
        "callers": CALLERS,
        "calls_per_caller": CALLS_EACH,
        "rounds": ROUNDS,
        "results": [{"side": side, **median_of(rounds)} for side, rounds in sides.items()],
    }
    (out_dir / "mcp_load.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"50 concurrent callers, {CALLS_EACH} calls each, median of {ROUNDS} rounds (min–max)",
        "",
        "| side | calls/s | p50 ms | p99 ms | failed calls |",
        "|---|---|---|---|---|",
    ]
    for row in report["results"]:
        cells = [
            f"{row[k]['median']:.0f} ({row[k]['min']:.0f}–{row[k]['max']:.0f})"
            for k in ("calls_per_s", "p50_ms", "p99_ms")
        ]
        failed = f"{row['failed']['max']:.0f}"
        lines.append(f"| {row['side']} | " + " | ".join(cells) + f" | {failed} |")
    machine = report["machine"]
    lines += [
        "",
        f"Machine: Python {machine['python']}, {machine['cpu']}, {machine['cores']} cores; "
        f"load average {machine['load'][0]} before the run, {machine['load'][1]} after",
    ]
    (out_dir / "mcp_load.md").write_text("\n".join(lines) + "\n")
    wrote(out_dir, "mcp_load.json", "mcp_load.md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
