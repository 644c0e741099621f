"""Start-up benchmark: what importing xerj-tools and making the first Dispatcher cost a new process.

Run:  .venv/bin/python benchmarks/startup.py   (writes startup.json and startup.md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: three samples, a smoke test (the test suite runs it); --out DIR.

Each sample is a new Python process, with its modules' bytecode cached as after an install
(in a temporary `PYTHONPYCACHEPREFIX`, written by a warm-up run; `PYTHONDONTWRITEBYTECODE` is
lifted for the children, else every sample would compile every module from source). `import xerj_tools` is the CPU time (user + system) of a
process that imports it less that of `python -c pass`, the two run one after the other in each
round; the figure is the median over rounds. The later steps are timed inside one process with
`time.process_time`: the first use of `xerj_tools.Dispatcher` (which imports httpx and the
dispatcher), the first `Dispatcher()`, the first validation of a valid and of an invalid call
(the invalid one imports jsonschema to explain itself) and a validation once warm.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from run import cpu_name  # noqa: E402  (the machine, named as benchmarks/run.py names it)

SAMPLES = 21

TYPICAL = {"index": "docs", "query": {"match": {"body": "checkout outage"}}, "size": 10}
INVALID = {"index": "docs", "query": {"match": {"body": "checkout outage"}}, "size": "ten"}

# Timed inside the child; prints one JSON object of milliseconds.
STEPS = f"""
import json, sys, time
clock = time.process_time
out = {{}}
t = clock(); import xerj_tools; out["import"] = clock() - t
t = clock(); Dispatcher = xerj_tools.Dispatcher; out["dispatcher_module"] = clock() - t
t = clock(); dispatcher = Dispatcher(url="http://127.0.0.1:9"); out["first_dispatcher"] = clock() - t
t = clock(); Dispatcher(url="http://127.0.0.1:9").close(); out["later_dispatcher"] = clock() - t
registry = dispatcher.registry
valid, invalid = {json.dumps(json.dumps(TYPICAL))}, {json.dumps(json.dumps(INVALID))}
t = clock(); assert registry.validate("xerj_search", valid).ok; out["first_valid"] = clock() - t
t = clock(); assert not registry.validate("xerj_search", invalid).ok; out["first_invalid"] = clock() - t
t = clock()
for _ in range(1000):
    registry.validate("xerj_search", valid)
out["steady_valid"] = (clock() - t) / 1000
dispatcher.close()
print(json.dumps({{k: v * 1e3 for k, v in out.items()}}))
"""

GOALS: dict[str, tuple[str, float]] = {
    # step: (goal text, limit in ms)
    "import": ("< 150 ms", 150.0),
    "first_dispatcher": ("< 20 ms", 20.0),
    "first_valid": ("< 5 ms", 5.0),
}

LABELS = {
    "import": "`import xerj_tools` (process CPU less `python -c pass`)",
    "dispatcher_module": "first `xerj_tools.Dispatcher` (imports httpx and the dispatcher)",
    "first_dispatcher": "first `Dispatcher()` (bundled registry, client)",
    "later_dispatcher": "a later `Dispatcher()` (and its `close()`)",
    "first_valid": "first validation of a valid `xerj_search` call",
    "first_invalid": "first validation of an invalid call (imports jsonschema)",
    "steady_valid": "a validation once warm",
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child_cpu(code: str) -> tuple[float, str]:
    """Run `code` in a new interpreter; its CPU seconds (user + system) and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                          env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(samples: int) -> dict[str, dict[str, float]]:
    bare: list[float] = []
    imported: list[float] = []
    steps: dict[str, list[float]] = {}
    child_cpu(STEPS)  # the warm-up: writes the bytecode cache
    for _ in range(samples):  # interleaved: each round sees the same machine
        bare.append(child_cpu("pass")[0] * 1e3)
        imported.append(child_cpu("import xerj_tools")[0] * 1e3)
        for key, value in json.loads(child_cpu(STEPS)[1]).items():
            steps.setdefault(key, []).append(value)
    figures = {"python -c pass": summary(bare), "python -c 'import xerj_tools'": summary(imported)}
    figures["import"] = summary([i - b for i, b in zip(imported, bare, strict=True)])
    figures["import (timed in process)"] = summary(steps.pop("import"))
    for key, values in steps.items():
        figures[key] = summary(values)
    return figures


def fmt(value: dict[str, float]) -> str:
    return f"{value['median']:.3g} ({value['min']:.3g}–{value['max']:.3g})"


def main() -> None:
    samples = SAMPLES
    if "--quick" in sys.argv:
        samples = 3
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "startup")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        ENV["PYTHONPYCACHEPREFIX"] = cache
        figures = measure(samples)
    machine = {"python": platform.python_version(), "cpu": cpu_name(), "cores": os.cpu_count(),
               "platform": platform.platform(), "date": time.strftime("%Y-%m-%d")}
    results = []
    for key, value in figures.items():
        goal = GOALS.get(key)
        results.append({"case": LABELS.get(key, key), "step": key, "unit": "ms CPU", "ours": value,
                        "goal": goal[0] if goal else "",
                        "met": (value["median"] < goal[1]) if goal else None})
    report = {"machine": machine, "samples": samples, "seconds": round(time.perf_counter() - started, 1),
              "results": results}
    (out_dir / "startup.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    rows = ["| step | ms CPU | goal |", "|---|---|---|"]
    for r in results:
        verdict = f"{r['goal']}: {'met' if r['met'] else 'MISSED'}" if r["goal"] else ""
        rows.append(f"| {r['case']} | {fmt(r['ours'])} | {verdict} |")
    text = (f"Machine: Python {machine['python']}, {machine['cpu']}, {machine['cores']} cores, {machine['date']}. "
            f"Median (lowest–highest) over {samples} new processes; {report['seconds']} s in all.\n\n"
            + "\n".join(rows) + "\n")
    (out_dir / "startup.md").write_text(text)
    wrote(out_dir, "startup.json", "startup.md")
    print(text)


if __name__ == "__main__":
    main()
