"""What an invalid call costs offline: µs per reported call, and the whole `validate`.

Run:  .venv/bin/python benchmarks/invalid.py [--against DIR] [--calls N] [--rounds N] [--quick]
      (writes invalid.json and invalid.md to --out DIR, else to a new temporary directory)

The calls are benchmarks/calls.py's: one in ten invalid in the mixed file (a negative `size`, a
missing required argument, a wrong type, an unknown argument), every one in the invalid file
(the same mistakes, the same tools). What `validate` reports is the invalid mix: calls the
schema refuses (jsonschema's explanation before, the compiled explainer now), calls only the
prose limits refuse, and calls a repair makes valid. Measured, each in a process of its own and
in its CPU time (the interpreter's start and the imports left out), best of the rounds:

- `xerj-tools validate FILE --format json` (to /dev/null) on the invalid file, per call: what an
  invalid call costs in the CLI, reading and reporting included; on a file of valid calls alone,
  for comparison; and on the mixed file of `--calls` calls, whole;
- in-process, `validate_calls` with the JSON report written to memory, on the found calls of a
  mixed file (reading left out), per reported call, by kind.

`--against [NAME=]DIR` (repeated): the same on the xerj-tools checkout in DIR (main's, say), the
trees interleaved round by round so that all see the same machine.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calls import write_calls  # noqa: E402

PER_CALL = """
import gc, io, json, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, {root!r})
from xerj_tools._json import _load
from xerj_tools import load_registry
from xerj_tools._offline._validate import jsonl_calls, validate_calls
from xerj_tools._offline._report import JsonReport
_load()
registry = load_registry()
found = list(jsonl_calls(enumerate(open({path!r}, encoding="utf-8"), start=1)))
kinds = {{}}
def keep(report):
    kinds[report.call.index] = report
validate_calls(registry, found, on_report=keep)  # also compiles every check
mix = [f for f in found if f.index in kinds]
groups = {{"repaired": [], "schema": [], "prose": []}}
for f in mix:  # repaired; else refused by the schema, or by the prose limits alone
    refused = not registry[f.name].fast_check(json.loads(f.arguments))
    groups["repaired" if kinds[f.index].ok else "schema" if refused else "prose"].append(f)
gc.collect(); gc.freeze()
out = {{}}
for name, calls in [("mix", mix), *groups.items()]:
    best = float("inf")
    for _ in range({repeat}):
        writer = JsonReport(io.StringIO())
        started = time.process_time()
        validate_calls(registry, calls, on_report=writer.report)
        best = min(best, time.process_time() - started)
    out[name] = [len(calls), best / len(calls) * 1e6]
print("RESULT", out)
"""
WHOLE = """
import os, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, {root!r})
from xerj_tools._cli._main import main
if __name__ == "__main__":
    C = time.process_time()
    with open(os.devnull, "w") as out:
        main(["validate", {path!r}, "--format", "json"], stdout=out)
    print("RESULT", time.process_time() - C)
"""
CLI_CALLS = 30_000  # calls in each of the invalid and the valid file


def child(code: str) -> object:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return eval(line[7:])  # a literal printed by the child


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--against", action="append", default=[], metavar="DIR",
        help="another xerj-tools checkout to measure beside this one (NAME=DIR names it)",
    )  # fmt: skip
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--mix-calls", type=int, default=60_000, help="calls whose invalid mix is timed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="where to write invalid.json and invalid.md (default: a new temporary directory)")
    args = parser.parse_args(argv)
    cli_calls = CLI_CALLS
    if args.quick:
        args.calls, args.mix_calls, args.rounds, cli_calls = 5_000, 5_000, 1, 2_000
    roots = {"this": str(HERE.parent)}
    for other in args.against:
        name, _, folder = other.rpartition("=")
        roots[name or Path(folder).name] = str(Path(folder).resolve())
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        big = write_calls(Path(folder) / "calls.jsonl", args.calls)
        small = write_calls(Path(folder) / "mix.jsonl", args.mix_calls)
        files = {
            "invalid": write_calls(Path(folder) / "invalid.jsonl", cli_calls, invalid=1.0),
            "valid": write_calls(Path(folder) / "valid.jsonl", cli_calls, invalid=0.0),
            "mixed": big,
        }
        per_call: dict[str, list[object]] = {name: [] for name in roots}
        cli: dict[str, dict[str, list[float]]] = {name: {f: [] for f in files} for name in roots}
        for _ in range(args.rounds):
            for name, root in roots.items():
                per_call[name].append(child(PER_CALL.format(root=root, path=str(small), repeat=3)))
                for kind, path in files.items():
                    cli[name][kind].append(child(WHOLE.format(root=root, path=str(path))))  # type: ignore[arg-type]
    load = tuple(max(a, b) for a, b in zip(load, os.getloadavg(), strict=True))
    report = {
        "machine": {"python": platform.python_version(), "cores": os.cpu_count(),
                    "load_average_max": load},
        "calls": args.calls, "mix_calls": args.mix_calls, "rounds": args.rounds,
        "per_call_us": {name: {kind: [rounds[0][kind][0], min(r[kind][1] for r in rounds)]  # type: ignore[index]
                               for kind in rounds[0]} for name, rounds in per_call.items()},  # type: ignore[union-attr]
        "cli_calls": cli_calls,
        "cli_cpu_s": {name: {k: sorted(t) for k, t in kinds.items()} for name, kinds in cli.items()},
    }  # fmt: skip
    from _common import results_dir, wrote

    out = results_dir(["--out", args.out] if args.out else [], "invalid")
    (out / "invalid.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"Machine: Python {report['machine']['python']}, {report['machine']['cores']} cores, "
        f"load average up to {', '.join(f'{x:.1f}' for x in load)}; {args.rounds} rounds, best.",
        "",
        f"| tree | CLI, invalid µs/call | CLI, valid µs/call | CLI, {args.calls:,} mixed: CPU s "
        "| in-process, invalid mix µs/call | schema refused | prose only | repaired |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in roots:
        p = report["per_call_us"][name]
        c = {k: min(t) for k, t in report["cli_cpu_s"][name].items()}
        lines.append(
            f"| {name} | {c['invalid'] / cli_calls * 1e6:.1f} | {c['valid'] / cli_calls * 1e6:.1f} "
            f"| {c['mixed']:.2f} | {p['mix'][1]:.1f} ({p['mix'][0]}) "
            f"| {p['schema'][1]:.1f} ({p['schema'][0]}) | {p['prose'][1]:.1f} ({p['prose'][0]}) "
            f"| {p['repaired'][1]:.1f} ({p['repaired'][0]}) |"
        )
    (out / "invalid.md").write_text("\n".join(lines) + "\n")
    wrote(out, "invalid.json", "invalid.md")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
