"""Throughput under concurrency: calls per second and latency with many calls in flight.

Run:  .venv/bin/python benchmarks/throughput.py   (writes throughput.json and .md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: one round, one call per worker, a smoke test (the test suite runs it); --out DIR.

Levels: `AsyncDispatcher` with 1, 10, 100 and 500 calls in flight (C tasks, each starting its
next call when its last one ends), and `Dispatcher.dispatch_many` with 8-call turns from 1 and
8 threads. Every level runs four sides against benchmarks/run.py's loopback server (a minimal
asyncio server in its own process), interleaved round by round, in one process:

- ours: the dispatcher as shipped (``Limits(max_in_flight="pool")``: at most 10 requests on the wire);
- ours unbounded: ``Limits(max_in_flight=None)``, what the dispatcher did before the bound;
- raw: httpx doing the same, post + ``.json()``, unbounded (what users write);
- raw bounded: the same with a semaphore of the pool's size around each post.

Every side has a pool of 10 connections. A sync side's threads each run their turns on a thread
pool of 8 (raw: one per thread; ours: the dispatcher's one shared pool of 8 workers). Figures are
medians over rounds with the lowest and highest round; latency is per call (async) or per turn
(sync), p50 and p99 within each round.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import run  # noqa: E402  (the loopback server, the typical search, the formatting)

from xerj_tools import AsyncDispatcher, Dispatcher, Limits  # noqa: E402

POOL = 10
ASYNC_LEVELS = (1, 10, 100, 500)
THREAD_LEVELS = (1, 8)
TURN = 8
ROUNDS = 7
QUICK = False
CALLS = {1: 150, 10: 200, 100: 300, 500: 1500}  # per side and round (--quick: one per worker)
TURNS = {1: 20, 8: 80}
SIDES = ("ours", "ours unbounded", "raw", "raw bounded")
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
GOAL_RATE, GOAL_P99 = 0.85, 1.5


def calls_for(in_flight: int) -> int:
    return in_flight if QUICK else CALLS[in_flight]


def turns_for(threads: int) -> int:
    return threads if QUICK else TURNS[threads]


def messages(width: int) -> list[dict[str, Any]]:
    """Distinct searches (identical calls of one turn would be sent once)."""
    return [{**run.call({**run.TYPICAL, "size": i + 1}), "id": f"c{i}"} for i in range(width)]


def bodies(width: int) -> list[bytes]:
    return [json.dumps({"query": run.TYPICAL["query"], "size": i + 1}).encode() for i in range(width)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def limits() -> httpx2.Limits:
    return httpx2.Limits(max_connections=POOL, max_keepalive_connections=POOL)


# ---------------------------------------------------------------- async levels

async def closed_loop(one: Callable[[int], Awaitable[bool]], in_flight: int, total: int) -> tuple[float, list[float], int]:
    """`in_flight` workers share `total` calls; (wall seconds, each call's latency in ms, how
    many calls failed). A call is timed whether it failed or not."""
    latencies: list[float] = []
    left, failed = total, 0

    async def worker() -> None:
        nonlocal left, failed
        while left > 0:
            left -= 1
            start = time.perf_counter()
            try:
                ok = await one(left)
            except httpx2.HTTPError:
                ok = False
            failed += not ok
            latencies.append((time.perf_counter() - start) * 1e3)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - start, latencies, failed


async def async_level(url: str, in_flight: int) -> dict[str, list[dict[str, float]]]:
    calls, posts = messages(TURN), bodies(TURN)
    target = url + "/docs/_search"
    bound = asyncio.Semaphore(POOL)
    async with AsyncDispatcher(url=url, limits=Limits(pool_size=POOL)) as ours, \
            AsyncDispatcher(url=url, limits=Limits(pool_size=POOL, max_in_flight=None)) as unbounded, \
            httpx2.AsyncClient(limits=limits()) as client:  # fmt: skip

        async def raw(i: int) -> bool:
            response = await client.post(target, content=posts[i % TURN], headers=HEADERS)
            return response.status_code == 200 and "hits" in response.json()

        async def raw_bounded(i: int) -> bool:
            async with bound:
                return await raw(i)

        def dispatching(dispatcher: AsyncDispatcher) -> Callable[[int], Awaitable[bool]]:
            async def one(i: int) -> bool:
                return ok(await dispatcher.dispatch(calls[i % TURN]))
            return one

        sides = {"ours": dispatching(ours), "ours unbounded": dispatching(unbounded), "raw": raw,
                 "raw bounded": raw_bounded}
        assert await dispatching(ours)(0)
        for one in sides.values():  # warm: every connection of the pool open
            await closed_loop(one, POOL, 2 * POOL)
        rounds: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
        for r in range(ROUNDS):
            for side in SIDES[r % 4:] + SIDES[:r % 4]:  # each side first in turn
                seconds, latencies, failed = await closed_loop(sides[side], in_flight, calls_for(in_flight))
                rounds[side].append(figures(len(latencies), seconds, latencies, failed))
        return rounds


def ok(message: Any) -> bool:
    return str(message["content"]).startswith('{"ok":true')


def figures(calls: int, seconds: float, latencies: list[float], failed: int) -> dict[str, float]:
    return {"calls_per_s": calls / seconds, "p50_ms": percentile(latencies, 0.5),
            "p99_ms": percentile(latencies, 0.99), "failed": failed}


# ---------------------------------------------------------------- sync levels

def threaded(turn: Callable[[int], int], threads: int, turns: int) -> tuple[float, list[float], int]:
    """`threads` threads share `turns` turns; (wall seconds, each turn's latency in ms, how many
    calls failed). `turn(k)` runs a turn on thread number k and says how many calls failed."""
    latencies: list[float] = []
    lock = threading.Lock()
    left, failed = [turns], [0]

    def worker(k: int) -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            start = time.perf_counter()
            lost = turn(k)
            with lock:
                latencies.append((time.perf_counter() - start) * 1e3)
                failed[0] += lost

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start, latencies, failed[0]


def sync_level(url: str, threads: int) -> dict[str, list[dict[str, float]]]:
    calls, posts = messages(TURN), bodies(TURN)
    target = url + "/docs/_search"
    bound = threading.BoundedSemaphore(POOL)
    pools = [ThreadPoolExecutor(TURN) for _ in range(threads)]  # raw: a pool of 8 per thread

    with Dispatcher(url=url, limits=Limits(pool_size=POOL)) as ours, \
            Dispatcher(url=url, limits=Limits(pool_size=POOL, max_in_flight=None)) as unbounded, \
            httpx2.Client(limits=limits()) as client:  # fmt: skip

        def post(body: bytes) -> bool:
            try:
                response = client.post(target, content=body, headers=HEADERS)
                return response.status_code == 200 and "hits" in response.json()
            except httpx2.HTTPError:
                return False

        def post_bounded(body: bytes) -> bool:
            with bound:
                return post(body)

        def raw_turn(send: Callable[[bytes], bool]) -> Callable[[int], int]:
            return lambda k: TURN - sum(pools[k].map(send, posts))

        def dispatching(dispatcher: Dispatcher) -> Callable[[int], int]:
            return lambda _: TURN - sum(map(ok, dispatcher.dispatch_many(calls)))

        sides = {"ours": dispatching(ours), "ours unbounded": dispatching(unbounded),
                 "raw": raw_turn(post), "raw bounded": raw_turn(post_bounded)}
        assert dispatching(ours)(0) == 0
        for turn in sides.values():
            threaded(turn, threads, threads)
        rounds: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
        for r in range(ROUNDS):
            for side in SIDES[r % 4:] + SIDES[:r % 4]:
                seconds, latencies, failed = threaded(sides[side], threads, turns_for(threads))
                rounds[side].append(figures(len(latencies) * TURN, seconds, latencies, failed))
    for pool in pools:
        pool.shutdown()
    return rounds


# ---------------------------------------------------------------- report

def summarise(level: str, in_flight: str, latency: str, rounds: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    sides = {side: {**{k: run.summary([r[k] for r in rs]) for k in rs[0] if k != "failed"},
                    "failed": sum(r["failed"] for r in rs)} for side, rs in rounds.items()}

    def ratio(key: str, side: str, base: str) -> dict[str, float]:
        return run.summary([a[key] / b[key] for a, b in zip(rounds[side], rounds[base], strict=True)])

    ratios = {f"{side} / {base}": {"calls_per_s": ratio("calls_per_s", side, base), "p99_ms": ratio("p99_ms", side, base)}
              for side, base in (("ours", "raw"), ("ours", "raw bounded"), ("ours unbounded", "raw"))}
    goals = {f"calls/s ≥ {GOAL_RATE:g}× raw": ratios["ours / raw"]["calls_per_s"]["median"] >= GOAL_RATE,
             f"p99 ≤ {GOAL_P99:g}× raw": ratios["ours / raw"]["p99_ms"]["median"] <= GOAL_P99}
    return {"level": level, "in_flight": in_flight, "latency": latency, "sides": sides, "ratios": ratios,
            "goals": goals}


def table(report: dict[str, Any]) -> str:
    machine = report["machine"]
    rows = [f"Machine: Python {machine['python']}, {machine['cpu']}, {machine['cores']} cores, {machine['date']}. "
            f"Median (lowest–highest) over {report['rounds']} interleaved rounds; pool of {POOL} connections on "
            f"every side; {report['seconds']} s in all.", "",
            "| level | in flight | side | calls/s | p50 ms | p99 ms | failed calls |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        for side, s in r["sides"].items():
            rows.append(f"| {r['level']} | {r['in_flight']} | {side} | {run.fmt(s['calls_per_s'])} | "
                        f"{run.fmt(s['p50_ms'])} | {run.fmt(s['p99_ms'])} | {s['failed']} |")
    rows += ["", "| level | ours / raw calls/s | ours / raw p99 | ours / raw bounded calls/s | "
             "ours / raw bounded p99 | unbounded ours / raw calls/s | goals |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        q = r["ratios"]
        goals = "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in r["goals"].items())
        rows.append(f"| {r['level']} | {run.fmt(q['ours / raw']['calls_per_s'])} | {run.fmt(q['ours / raw']['p99_ms'])} | "
                    f"{run.fmt(q['ours / raw bounded']['calls_per_s'])} | {run.fmt(q['ours / raw bounded']['p99_ms'])} | "
                    f"{run.fmt(q['ours unbounded / raw']['calls_per_s'])} | {goals} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    global ROUNDS, QUICK
    if "--quick" in sys.argv:
        ROUNDS, QUICK = 1, True
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "throughput")
    started = time.perf_counter()
    results = []
    with run.MinimalServer(run.ten_hits()) as server:
        for n in ASYNC_LEVELS:
            rounds = asyncio.run(async_level(server.url, n))
            results.append(summarise(f"AsyncDispatcher, {n} in flight", str(n), "per call", rounds))
        for t in THREAD_LEVELS:
            rounds = sync_level(server.url, t)
            results.append(summarise(f"Dispatcher.dispatch_many, 8-call turns, {t} thread{'s' * (t > 1)}",
                                     f"up to {t * TURN}", "per turn", rounds))
    machine = {"python": platform.python_version(), "cpu": run.cpu_name(), "cores": os.cpu_count(),
               "platform": platform.platform(), "date": time.strftime("%Y-%m-%d")}
    report = {"machine": machine, "rounds": ROUNDS, "pool": POOL, "seconds": round(time.perf_counter() - started, 1),
              "results": results}
    (out_dir / "throughput.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    text = table(report)
    (out_dir / "throughput.md").write_text(text)
    wrote(out_dir, "throughput.json", "throughput.md")
    print(text)


if __name__ == "__main__":
    main()
