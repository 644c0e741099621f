"""Offline validation at scale: `xerj-tools validate` beside plain validator loops.

Run:  .venv/bin/python benchmarks/validate.py     (writes validate.json and validate.md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: 10,000 calls, one round (the test suite's smoke run); --out DIR; --calls N;
      --rounds N.

One file of N recorded calls (200,000 by default; benchmarks/calls.py: Chat Completions tool
calls over the seven tools, one in ten invalid) is validated, round after round, by each of:

- three plain loops, as a user would write them: `json.loads` + a precompiled jsonschema
  Draft 2020-12 validator's `is_valid`; `orjson` + fastjsonschema's generated code; `orjson` +
  jsonschema-rs's `is_valid`. They check the schema only: no prose limits, no repairs, no report;
- `xerj-tools validate FILE --format json` (stdout to /dev/null), with `--jobs 1` and `--jobs 2`;
- `xerj_tools.integrations.dask.validate_jsonl` on a `distributed.LocalCluster` of 2 worker
  processes (the cluster started before the clock, as a standing cluster would be).

Each run is a new process, timed from outside (wall clock; CPU time and peak memory from
`os.wait4`), the cases interleaved round by round so that all see the same machine. Then the
memory curve: `validate` on a quarter, a half and all of the file, its peak resident memory.
"""

from __future__ import annotations

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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calls import write_calls  # noqa: E402

VALIDATE = """
import os, sys, time
sys.path.insert(0, {root!r})
from xerj_tools._cli._main import main
if __name__ == "__main__":
    T = time.perf_counter(); C = time.process_time()
    with open(os.devnull, "w") as out:
        main({argv!r}, stdout=out)
    print("SECONDS", time.perf_counter() - T, time.process_time() - C)
    # the peak resident memory of this process alone (ru_maxrss would carry the parent's over exec)
    print("PEAK", [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")][0] / 1024)
"""
PRELUDE = "import sys, time; sys.path.insert(0, {root!r}); from xerj_tools import load_registry; R = load_registry()\n"
LOOPS = {
    "jsonschema": """
import json, jsonschema
V = {{s.name: jsonschema.Draft202012Validator(s.schema) for s in R}}
T = time.perf_counter(); C = time.process_time()
ok = 0
for line in open({path!r}, encoding="utf-8"):
    f = json.loads(line)["function"]
    ok += V[f["name"]].is_valid(json.loads(f["arguments"]))
print("SECONDS", time.perf_counter() - T, time.process_time() - C)
""",
    "orjson + fastjsonschema": """
import orjson, fastjsonschema
V = {{s.name: fastjsonschema.compile(json_schema) for s in R for json_schema in [dict(s.schema)]}}
T = time.perf_counter(); C = time.process_time()
ok = 0
for line in open({path!r}, "rb"):
    f = orjson.loads(line)["function"]
    try:
        V[f["name"]](orjson.loads(f["arguments"])); ok += 1
    except fastjsonschema.JsonSchemaException:
        pass
print("SECONDS", time.perf_counter() - T, time.process_time() - C)
""",
    "orjson + jsonschema-rs": """
import orjson, jsonschema_rs
V = {{s.name: jsonschema_rs.validator_for(dict(s.schema)) for s in R}}
T = time.perf_counter(); C = time.process_time()
ok = 0
for line in open({path!r}, "rb"):
    f = orjson.loads(line)["function"]
    ok += V[f["name"]].is_valid(orjson.loads(f["arguments"]))
print("SECONDS", time.perf_counter() - T, time.process_time() - C)
""",
}
DASK = """
import sys
sys.path.insert(0, {root!r})
if __name__ == "__main__":
    import time
    from distributed import Client, LocalCluster
    from xerj_tools.integrations.dask import validate_jsonl
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(lambda: __import__("xerj_tools._offline._batch"))
        start = time.perf_counter()
        report = validate_jsonl({path!r}, client=client, blocksize="4MiB")
        print("SECONDS", time.perf_counter() - start, "nan", report["calls"])
        print("PEAK", "nan")
"""


def timed(argv: list[str]) -> dict[str, float]:
    """Wall seconds (or the SECONDS the process prints: the time measured inside), and the
    child's CPU seconds and peak resident MiB from `os.wait4`; its output is read and dropped."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=HERE.parent)
    out = process.stdout.read() if process.stdout else ""
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    inner = [line.split() for line in out.splitlines() if line.startswith("SECONDS")]
    if process.wait() != 0 and not inner:
        raise RuntimeError(f"{argv[:3]} failed")
    return {"wall": float(inner[0][1]) if inner else wall,
            "cpu": float(inner[0][2]) if inner else usage.ru_utime + usage.ru_stime,
            "process_cpu": usage.ru_utime + usage.ru_stime,
            "peak_mib": float(peak[0][1]) if (peak := [line.split() for line in out.splitlines()
                                                       if line.startswith("PEAK")]) else usage.ru_maxrss / 1024}


def _breakdown(path: Path, folder: Path, root: str, rounds: int) -> dict[str, dict[str, float]]:
    """`validate` on the lines the lane passes, on those it refuses, and on one line: CPU s."""
    sys.path.insert(0, root)
    from xerj_tools import load_registry
    from xerj_tools._offline._lane import Lane

    lane = Lane(load_registry())
    parts = {"lines the lane passes": folder / "passed.jsonl",
             "lines the lane refuses": folder / "refused.jsonl", "one line": folder / "one.jsonl"}
    counts = dict.fromkeys(parts, 0)
    with path.open("rb") as source, parts["lines the lane passes"].open("wb") as passed, \
            parts["lines the lane refuses"].open("wb") as refused, parts["one line"].open("wb") as one:
        for line in source:
            if not counts["one line"]:
                one.write(line)
                counts["one line"] = 1
            part = "lines the lane passes" if lane.valid(line.rstrip(b"\n")) else "lines the lane refuses"
            (passed if part == "lines the lane passes" else refused).write(line)
            counts[part] += 1
    out = {}
    for name, part in parts.items():
        script = folder / f"part-{part.stem}.py"
        script.write_text(VALIDATE.format(root=root, argv=["validate", str(part), "--format", "json"]))
        cpu = statistics.median(timed([sys.executable, str(script)])["cpu"] for _ in range(rounds))
        out[name] = {"lines": counts[name], "cpu": cpu, "us_per_line": float("nan")}
    fixed = out["one line"]["cpu"]
    for name in ("lines the lane passes", "lines the lane refuses"):
        if out[name]["lines"]:  # (without orjson the lane passes nothing)
            out[name]["us_per_line"] = (out[name]["cpu"] - fixed) / out[name]["lines"] * 1e6
    return out


def _budget(breakdown: dict[str, dict[str, float]], median: dict[str, float], calls: int) -> dict[str, Any]:
    """For each one-core goal: the seconds it allows for the file, and what that leaves a refused
    line after the fixed cost and the passed lines (at their measured cost, and at the cost of the
    reference loop's call)."""
    passed, refused = breakdown["lines the lane passes"], breakdown["lines the lane refuses"]
    fixed = breakdown["one line"]["cpu"]
    limits = {}
    if "loop: jsonschema" in median:
        limits["≥ 10× the jsonschema loop"] = calls / (10 * median["loop: jsonschema"])
    if "loop: orjson + jsonschema-rs" in median:
        limits["≥ 0.5× orjson + jsonschema-rs"] = calls / (0.5 * median["loop: orjson + jsonschema-rs"])
    loop_us = 1e6 / median["loop: orjson + jsonschema-rs"] if "loop: orjson + jsonschema-rs" in median else float("nan")
    out = {}
    if not passed["lines"] or not refused["lines"]:
        return {}  # (without orjson the lane passes nothing: no budget to share out)
    for name, seconds in limits.items():
        left = seconds - fixed
        out[name] = {
            "seconds": seconds,
            "refused_us": (left - passed["lines"] * passed["us_per_line"] / 1e6) / refused["lines"] * 1e6,
            "refused_us_at_loop_cost": (left - passed["lines"] * loop_us / 1e6) / refused["lines"] * 1e6,
        }
    return out


def available(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def main() -> None:
    quick = "--quick" in sys.argv
    calls = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else (10_000 if quick else 200_000)
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else (1 if quick else 3)
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "validate")
    root = str(HERE.parent)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = write_calls(Path(folder) / "calls.jsonl", calls)
        prelude = PRELUDE.format(root=root)
        cases: dict[str, list[str]] = {}
        for name, body in LOOPS.items():
            module = {"jsonschema": "jsonschema", "orjson + fastjsonschema": "fastjsonschema",
                      "orjson + jsonschema-rs": "jsonschema_rs"}[name]
            if available(module):
                cases[f"loop: {name}"] = [sys.executable, "-c", prelude + body.format(path=str(path))]
        command = ["validate", str(path), "--format", "json"]
        for name, argv in (("xerj-tools validate", command),
                           ("xerj-tools validate --jobs 2", [*command, "--jobs", "2"])):
            script = Path(folder) / f"{len(cases)}.py"
            script.write_text(VALIDATE.format(root=root, argv=argv))
            cases[name] = [sys.executable, str(script)]
        if available("distributed") and not quick:
            script = Path(folder) / "dask_run.py"
            script.write_text(DASK.format(root=root, path=str(path)))
            cases["Dask, local cluster of 2 workers"] = [sys.executable, str(script)]
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, argv in cases.items():
                runs[name].append(timed(argv))
        memory = []
        size = path.stat().st_size
        for fraction in (4, 2, 1):  # a quarter, a half and all of the file, streamed (never held here)
            part = Path(folder) / f"part{fraction}.jsonl"
            with path.open("rb") as source, part.open("wb") as sink:
                for number, line in enumerate(source):
                    if number >= calls // fraction:
                        break
                    sink.write(line)
            script = Path(folder) / f"memory{fraction}.py"
            script.write_text(VALIDATE.format(root=root, argv=["validate", str(part), "--format", "json"]))
            usage = timed([sys.executable, str(script)])
            memory.append({"calls": calls // fraction, "bytes": part.stat().st_size,
                           "peak_mib": usage["peak_mib"]})
        breakdown = _breakdown(path, Path(folder), root, rounds)
    # One process: calls per CPU second inside it (the machine is shared: CPU time is what one
    # core gives it); --jobs 2 and Dask: calls per wall second, as only the clock sees processes.
    rates = {name: [calls / (r["wall"] if "jobs" in name or "Dask" in name else r["cpu"]) for r in values]
             for name, values in runs.items()}
    median = {name: statistics.median(values) for name, values in rates.items()}
    one = median["xerj-tools validate"]
    goals = {}
    if "loop: jsonschema" in median:
        goals["validate ≥ 10× the jsonschema loop"] = one / median["loop: jsonschema"]
    if "loop: orjson + jsonschema-rs" in median:
        goals["validate within 2× of orjson + jsonschema-rs (ratio ≥ 0.5)"] = one / median["loop: orjson + jsonschema-rs"]
    one_wall = statistics.median(calls / r["wall"] for r in runs["xerj-tools validate"])
    goals["--jobs 2 ≥ 1.8× one job"] = median["xerj-tools validate --jobs 2"] / one_wall
    thresholds = {"validate ≥ 10× the jsonschema loop": 10.0,
                  "validate within 2× of orjson + jsonschema-rs (ratio ≥ 0.5)": 0.5,
                  "--jobs 2 ≥ 1.8× one job": 1.8}
    peaks = [m["peak_mib"] for m in memory]
    per_gib = (peaks[-1] - peaks[0]) / max(memory[-1]["bytes"] - memory[0]["bytes"], 1) * 2**30
    machine = {"python": platform.python_version(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
               "load_average": os.getloadavg()[0], "file_bytes": size}
    budget = _budget(breakdown, median, calls)
    report = {"machine": machine, "calls": calls, "rounds": rounds, "seconds": round(time.perf_counter() - started, 1),
              "runs": runs, "calls_per_second": {k: {"median": v, "all": rates[k]} for k, v in median.items()},
              "goals": {k: {"ratio": v, "met": v >= thresholds[k]} for k, v in goals.items()},
              "memory": memory, "memory_growth_mib_per_gib": per_gib,
              "breakdown": breakdown, "budget": budget}
    (out_dir / "validate.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    rows = [f"Machine: Python {machine['python']}, {machine['cores']} cores, {machine['date']}, load average "
            f"{machine['load_average']:.1f} at the end; {calls:,} calls ({size / 2**20:.1f} MiB), "
            f"{rounds} rounds interleaved, median; {report['seconds']} s in all.", "",
            "| path | calls/s | per | wall s | CPU s | peak MiB |", "|---|---|---|---|---|---|"]
    for name, values in runs.items():
        per = "wall second" if "jobs" in name or "Dask" in name else "CPU second"
        rows.append(f"| {name} | {median[name]:,.0f} | {per} | {statistics.median(r['wall'] for r in values):.2f} | "
                    f"{statistics.median(r['cpu'] for r in values):.2f} | "
                    f"{statistics.median(r['peak_mib'] for r in values):.0f} |")
    rows += ["", "| goal | ratio | |", "|---|---|---|"]
    rows += [f"| {k} | {v['ratio']:.2f} | {'met' if v['met'] else 'MISSED'} |" for k, v in report["goals"].items()]
    rows += ["", "| `validate` on | calls | peak MiB |", "|---|---|---|"]
    rows += [f"| {m['bytes'] / 2**20:.1f} MiB | {m['calls']:,} | {m['peak_mib']:.1f} |" for m in memory]
    rows += ["", f"Peak memory grows by {per_gib:.1f} MiB per GiB of input between the smallest and the largest file."]
    rows += ["", "Where one core's time goes: `validate` on the lines the lane passes alone, on the lines it "
             "refuses alone (the full path: each explained and reported), and on one line (the fixed cost); "
             "CPU seconds, median.", "",
             "| part | lines | CPU s | µs a line |", "|---|---|---|---|"]
    rows += [f"| {k} | {v['lines']:,} | {v['cpu']:.3f} | "
             f"{'(the fixed cost)' if k == 'one line' else format(v['us_per_line'], '.2f')} |"
             for k, v in breakdown.items()]
    rows += ["", "What each one-core goal leaves a refused line, given the cost measured for a passed line and "
             "the fixed cost (and given a passed line as cheap as the reference loop's call):", "",
             f"| goal | all {calls:,} calls within | a refused line within | with passed lines at the loop's cost |",
             "|---|---|---|---|"]
    rows += [f"| {k} | {v['seconds']:.3f} s | {v['refused_us']:.1f} µs | {v['refused_us_at_loop_cost']:.1f} µs |"
             for k, v in budget.items()]
    (out_dir / "validate.md").write_text("\n".join(rows) + "\n")
    wrote(out_dir, "validate.json", "validate.md")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
