"""Benchmarks: the dispatcher's cost next to a raw HTTP call, each case beside its baseline.

Run:  .venv/bin/python benchmarks/run.py   (writes results.json and results.md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: two rounds and smaller counts, a smoke test (the test suite runs it); --out DIR.
      --all: then stages.py, startup.py, throughput.py and mcp_load.py too (with the same --quick / --out):
      every benchmark from one command.

Machines here are shared and noisy, so every figure is a ratio against a baseline measured in
the same run, interleaved round by round; each is the median over rounds, with the spread
(lowest and highest round). The dispatch cases' baseline is a raw httpx `post` and `.json()` of
the same answer: what a caller who reads the answer does at the least. The HTTP cases talk to a minimal asyncio server in another process
on 127.0.0.1, so that the server is not what is measured and shares no GIL with the client.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import jsonschema

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import fitting  # noqa: E402  (the budget's cases: fitting cost, big responses, what the model reads)
from _common import (  # noqa: E402  (shared with the other scripts, which may use them as run.X)
    TYPICAL,
    MinimalServer,
    call,
    cpu_name,
    fmt,
    per_call,
    summary,
    ten_hits,
)

from xerj_tools import AsyncDispatcher, Dispatcher, Limits, load_registry  # noqa: E402

ROUNDS = 7
SCALE = 1.0  # the share of each case's call counts that is run (--quick lowers it)


def count(n: int) -> int:
    return max(2, int(n * SCALE))


# ---------------------------------------------------------------- cases

def bench_validation() -> dict[str, Any]:
    registry = load_registry()
    raw = json.dumps(TYPICAL)
    schema = registry.get("xerj_search").validator.schema  # type: ignore[union-attr]
    assert registry.validate("xerj_search", raw).ok
    ours, naive = [], []
    for _ in range(ROUNDS):
        ours.append(per_call(lambda: registry.validate("xerj_search", raw), count(3000)) * 1e6)
        naive.append(per_call(lambda: jsonschema.validate(json.loads(raw), schema), count(150)) * 1e6)
    ratios = [n / o for n, o in zip(naive, ours, strict=True)]
    return {"case": "validation", "unit": "µs per call", "ours": summary(ours), "baseline": summary(naive),
            "speedup": summary(ratios), "targets": {"speedup ≥ 20×": statistics.median(ratios) >= 20,
                                                    "under 30 µs": statistics.median(ours) < 30}}


def bench_dispatch(server: MinimalServer) -> dict[str, Any]:
    body = json.dumps({"query": TYPICAL["query"], "size": 10}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    ours, raw, ratios = [], [], []
    with Dispatcher(url=server.url) as dispatcher, httpx2.Client() as client:
        message = call(TYPICAL)
        assert '"ok":true' in dispatcher.dispatch(message)["content"]  # type: ignore[typeddict-item]
        for _ in range(ROUNDS):
            a = b = 0.0
            for _ in range(10):  # fine interleaving: both sides see the same machine noise
                a += per_call(lambda: dispatcher.dispatch(message), count(40)) * 1e6 / 10
                b += per_call(lambda: client.post(server.url + "/docs/_search", content=body, headers=headers).json(),
                              count(40)) * 1e6 / 10
            ours.append(a), raw.append(b), ratios.append(a / b)
    return {"case": "dispatch overhead (sync)", "unit": "µs per call", "ours": summary(ours),
            "baseline": summary(raw), "ratio": summary(ratios),
            "targets": {"median ratio ≤ 1.15": statistics.median(ratios) <= 1.15}}


def bench_dispatch_async(server: MinimalServer) -> dict[str, Any]:
    body = json.dumps({"query": TYPICAL["query"], "size": 10}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}

    async def go() -> tuple[list[float], list[float]]:
        ours, raw = [], []
        async with AsyncDispatcher(url=server.url) as dispatcher, httpx2.AsyncClient() as client:
            message = call(TYPICAL)
            await dispatcher.dispatch(message)
            for _ in range(ROUNDS):
                a = b = 0.0
                for _ in range(10):  # fine interleaving
                    start = time.perf_counter()
                    for _ in range(count(40)):
                        await dispatcher.dispatch(message)
                    a += time.perf_counter() - start
                    start = time.perf_counter()
                    for _ in range(count(40)):
                        (await client.post(server.url + "/docs/_search", content=body, headers=headers)).json()
                    b += time.perf_counter() - start
                ours.append(a / (10 * count(40)) * 1e6), raw.append(b / (10 * count(40)) * 1e6)
        return ours, raw

    ours, raw = asyncio.run(go())
    ratios = [a / b for a, b in zip(ours, raw, strict=True)]
    return {"case": "dispatch overhead (async)", "unit": "µs per call", "ours": summary(ours),
            "baseline": summary(raw), "ratio": summary(ratios),
            "targets": {"median ratio ≤ 1.15": statistics.median(ratios) <= 1.15}}


def bench_fanout(server: MinimalServer) -> list[dict[str, Any]]:
    slow = {**TYPICAL, "index": "slow"}
    calls = [{**call({**slow, "size": i + 1}), "id": f"c{i}"} for i in range(8)]
    out = []
    with Dispatcher(url=server.url) as dispatcher:
        dispatcher.dispatch_many(calls)
        one, many = [], []
        for _ in range(ROUNDS):
            one.append(per_call(lambda: dispatcher.dispatch(calls[0]), 3) * 1e3)
            many.append(per_call(lambda: dispatcher.dispatch_many(calls), 3) * 1e3)
    ratios = [m / o for m, o in zip(many, one, strict=True)]
    out.append({"case": "fan-out, 8 calls of 50 ms (sync)", "unit": "ms per turn", "ours": summary(many),
                "baseline": summary(one), "ratio": summary(ratios),
                "targets": {"≤ 1.5× one call": statistics.median(ratios) <= 1.5}})

    async def go() -> tuple[list[float], list[float]]:
        one, many = [], []
        async with AsyncDispatcher(url=server.url) as dispatcher:
            await dispatcher.dispatch_many(calls)
            for _ in range(ROUNDS):
                start = time.perf_counter()
                for _ in range(3):
                    await dispatcher.dispatch(calls[0])
                one.append((time.perf_counter() - start) / 3 * 1e3)
                start = time.perf_counter()
                for _ in range(3):
                    await dispatcher.dispatch_many(calls)
                many.append((time.perf_counter() - start) / 3 * 1e3)
        return one, many

    one, many = asyncio.run(go())
    ratios = [m / o for m, o in zip(many, one, strict=True)]
    out.append({"case": "fan-out, 8 calls of 50 ms (async)", "unit": "ms per turn", "ours": summary(many),
                "baseline": summary(one), "ratio": summary(ratios),
                "targets": {"≤ 1.5× one call": statistics.median(ratios) <= 1.5}})
    return out


def bench_connections(server: MinimalServer) -> dict[str, Any]:
    before = server.connections.value
    pool = 10
    with Dispatcher(url=server.url, limits=Limits(pool_size=pool)) as dispatcher:
        message = call(TYPICAL)
        for _ in range(count(1000)):
            dispatcher.dispatch(message)
    opened = server.connections.value - before
    return {"case": f"TCP connections for {count(1000):,} sequential calls", "unit": "connections", "ours": opened,
            "baseline": pool, "targets": {"≤ pool size": opened <= pool}}


def bench_offline() -> dict[str, Any]:
    line = json.dumps({"id": "c", "type": "function", "function": {"name": "xerj_search",
                                                                   "arguments": json.dumps(TYPICAL)}}) + "\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calls.jsonl"
        calls = count(100_000)
        with path.open("w") as out:
            for _ in range(calls):
                out.write(line)
        # Peak memory is the child's VmHWM: ru_maxrss would carry over the parent's size across exec.
        hwm = "[l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
        code = ("import io, time; from xerj_tools._cli._main import main; t = time.perf_counter(); "
                f"rc = main(['validate', {str(path)!r}], stdout=io.StringIO()); "
                f"print(time.perf_counter() - t, {hwm}, rc)")
        base_code = ("import json, time; t = time.perf_counter(); "
                     f"[json.loads(json.loads(l)['function']['arguments']) for l in open({str(path)!r})]; "
                     f"print(time.perf_counter() - t, {hwm}, 0)")
        rates, base_rates, mem, base_mem = [], [], [], []
        for _ in range(3):
            for source, rate_sink, mem_sink in ((code, rates, mem), (base_code, base_rates, base_mem)):
                out = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, check=True,
                                     cwd=HERE.parent).stdout.split()
                rate_sink.append(calls / float(out[0]))
                mem_sink.append(int(out[1]) / 1024)
    return {"case": f"xerj-tools validate on a {calls:,}-call JSONL", "unit": "calls per second",
            "ours": summary(rates), "baseline": summary(base_rates),
            "peak_memory_mib": {"ours": statistics.median(mem), "json.loads into a list": statistics.median(base_mem)},
            "targets": {}}


def main() -> None:
    global ROUNDS, SCALE
    if "--quick" in sys.argv:
        ROUNDS, SCALE = 2, 0.05
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "run")
    started = time.perf_counter()
    results: list[dict[str, Any]] = [bench_validation()]
    with MinimalServer(ten_hits()) as server:
        results += [bench_dispatch(server), bench_dispatch_async(server), *bench_fanout(server),
                    bench_connections(server)]
        post = json.dumps({"query": TYPICAL["query"], "size": 10}).encode()
        results += fitting.results(server.url, post, ROUNDS, SCALE)
    results += [bench_offline()]
    machine = {"python": platform.python_version(), "cpu": cpu_name(), "cores": os.cpu_count(),
               "platform": platform.platform(), "date": time.strftime("%Y-%m-%d")}
    report = {"machine": machine, "rounds": ROUNDS, "seconds": round(time.perf_counter() - started, 1),
              "results": results}
    (out_dir / "results.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    rows = ["| case | unit | xerj-tools | baseline | ratio | targets |", "|---|---|---|---|---|---|"]
    for r in results:
        ratio = r.get("ratio") or r.get("speedup")
        label = ("speedup " if "speedup" in r else "") + fmt(ratio) if ratio else ""
        targets = "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in r["targets"].items())
        memory = r.get("peak_memory_mib")
        extra = f" — peak MiB: {', '.join(f'{k} {v:.1f}' for k, v in memory.items())}" if memory else ""
        rows.append(f"| {r['case']}{extra} | {r['unit']} | {fmt(r['ours'])} | {fmt(r['baseline'])} | {label} | {targets} |")
    text = (f"Machine: Python {machine['python']}, {machine['cpu']}, {machine['cores']} cores, {machine['date']}. "
            f"Median (lowest–highest) over {ROUNDS} rounds; {report['seconds']} s in all.\n\n" + "\n".join(rows) + "\n")
    (out_dir / "results.md").write_text(text)
    wrote(out_dir, "results.json", "results.md")
    print(text)


OTHERS = ("stages.py", "startup.py", "throughput.py", "mcp_load.py", "validate.py")


def others(argv: list[str]) -> list[list[str]]:
    """With ``--all``: the other benchmark scripts, each with this run's ``--quick`` and ``--out``."""
    if "--all" not in argv:
        return []
    flags = ["--quick"] if "--quick" in argv else []
    if "--out" in argv:
        flags += ["--out", argv[argv.index("--out") + 1]]
    return [[sys.executable, str(HERE / name), *flags] for name in OTHERS]


if __name__ == "__main__":
    main()
    failed = [cmd[1] for cmd in others(sys.argv) if subprocess.run(cmd).returncode != 0]
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
