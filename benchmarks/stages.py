"""Where a dispatch's time goes: each stage of `Dispatcher.dispatch`, timed between real requests.

Run:  .venv/bin/python benchmarks/stages.py   (writes stages.json and stages.md to a new temporary directory; --out benchmarks to update the kept results)
      --quick: fewer calls, a smoke test (the test suite runs it); --out DIR.

A stage timed alone in a loop looks several times cheaper than it costs between requests (its
code and data are cold again after each trip through httpx and the socket), so each stage is
timed in place: the functions that make it up are wrapped with `time.perf_counter_ns` hooks
while the dispatcher answers a typical 10-hit `xerj_search` from the loopback server of
benchmarks/run.py. A hook counts its function's own time (a stage inside another is taken out of
it); "bookkeeping" is the rest of the call: parsing the tool call, tracing scopes, the deadline,
locks, the retry decision, the result object and the tool message. The hooks cost a few hundred
nanoseconds each (about fifteen run per call), counted in the stages they wrap; the same
dispatches run without them, interleaved, to show what they add, and so does the transport's
`send` of the same request alone, with no other work between requests. The raw call (httpx
`post` and `.json()`) runs interleaved with all three.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import run  # noqa: E402  (the loopback server and the typical call)

import xerj_tools  # noqa: E402
from xerj_tools._dispatch import _core  # noqa: E402
from xerj_tools._dispatch._policy import Policy  # noqa: E402
from xerj_tools._http import _transport  # noqa: E402
from xerj_tools._http._deadline import Deadline  # noqa: E402
from xerj_tools._schema import _fused, _validation  # noqa: E402
from xerj_tools._schema._registry import ToolSpec  # noqa: E402
from xerj_tools._shapes import parse_tool_call  # noqa: E402
from xerj_tools.tools import Tool, _search  # noqa: E402

STAGES = ["argument decode", "validation", "policy", "request build", "send", "response decode",
          "shaping", "serialisation", "bookkeeping"]
WHAT = {
    "argument decode": "the model's `arguments` string to a dict (`quick_object`, else `decode_arguments`)",
    "validation": ("`checked_arguments`: the typical call's one pass (argument types, the tool's quick yes); "
                   "any other: fast schema check, the tool's checks, integral numbers"),
    "policy": "size guard, index rules and caps, write refusal",
    "request build": "the tool's `build`, path check, request body JSON",
    "send": "httpx: request out, wait, response bytes in (`SyncTransport._attempt`)",
    "response decode": "the answer's JSON decoded (orjson with the `fast` extra), each hit's `_source` view",
    "shaping": "the tool's reading: the payload the model reads",
    "serialisation": "the tool message's JSON (`clean_json`/`dumps`)",
    "bookkeeping": "the rest: call parsing, tracing scopes, deadline, locks, result, message",
}


class Hooks:
    """Exclusive time per stage: a hooked function's time less that of hooked functions it calls."""

    def __init__(self) -> None:
        self.ns = dict.fromkeys(STAGES, 0)
        self._inner: list[int] = []  # per open hook: time spent in hooks below it

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock, ns, inner = time.perf_counter_ns, self.ns, self._inner

        @functools.wraps(fn)
        def hooked(*args: Any, **kwargs: Any) -> Any:
            inner.append(0)
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = clock() - start
                below = inner.pop()
                ns[stage] += spent - below
                if inner:
                    inner[-1] += spent

        return hooked


def install(hooks: Hooks, dispatcher: Any) -> Callable[[bool], None]:
    """Wrap every stage's functions; returns a switch that puts the hooks on (True) or off."""
    swaps: list[tuple[Any, str, Any, Any]] = []  # owner, name, original, hooked

    def patch(owner: Any, name: str, stage: str) -> None:
        original = getattr(owner, name)
        swaps.append((owner, name, original, hooks.wrap(stage, original)))

    patch(_validation, "decode_arguments", "argument decode")
    patch(_validation, "quick_object", "argument decode")  # the one-pass decode (`_quick`)
    patch(_fused, "quick_object", "argument decode")  # the same, where `checked_arguments` asks
    # the whole of validation: the one pass, or the general path and `integral_numbers` in it
    patch(_core, "checked_arguments", "validation")
    patch(ToolSpec, "validate", "validation")  # a call the operator's limits changed: again
    for name in ("check_size", "apply", "write_refusal"):
        patch(Policy, name, "policy")
    for tool in dispatcher._core.tools.values():
        patch(tool, "build", "request build")
    patch(_core, "dot_segment", "request build")
    patch(_core, "reading_tool", "request build")
    patch(_transport, "encode_body", "request build")
    patch(_transport.SyncTransport, "_attempt", "send")
    patch(_search, "decode_search", "response decode")
    patch(_core.DispatchCore, "payload_for", "shaping")
    patch(_core, "clean_json", "serialisation")
    patch(_core, "dumps", "serialisation")

    def switch(on: bool) -> None:
        for owner, name, original, hooked in swaps:
            # a frozen Tool takes object.__setattr__; modules and classes take setattr
            setter = object.__setattr__ if isinstance(owner, Tool) else setattr
            setter(owner, name, hooked if on else original)

    return switch


def measure(server: run.MinimalServer, rounds: int, calls: int) -> dict[str, Any]:
    body = json.dumps({"query": run.TYPICAL["query"], "size": 10}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    message = run.call(run.TYPICAL)
    hooks = Hooks()
    total_ns = bare_ns = alone_ns = raw_ns = n = 0
    with xerj_tools.Dispatcher(url=server.url) as dispatcher, httpx2.Client() as client:
        request = dispatcher._core.prepare(parse_tool_call(message)).request  # a valid call: Prepared
        switch = install(hooks, dispatcher)
        switch(True)
        dispatcher.dispatch(message)
        client.post(server.url + "/docs/_search", content=body, headers=headers).json()
        hooks.ns.update(dict.fromkeys(STAGES, 0))  # the warm-up call does not count
        clock = time.perf_counter_ns
        for _ in range(rounds):
            for _ in range(10):  # fine interleaving, as benchmarks/run.py does
                start = clock()
                for _ in range(calls):
                    dispatcher.dispatch(message)
                total_ns += clock() - start
                switch(False)  # the same dispatches without the hooks: what they cost
                start = clock()
                for _ in range(calls):
                    dispatcher.dispatch(message)
                bare_ns += clock() - start
                start = clock()  # the transport alone: the same request, no other work between
                for _ in range(calls):
                    dispatcher._transport.send(request, Deadline(60.0))
                alone_ns += clock() - start
                switch(True)
                start = clock()
                for _ in range(calls):
                    client.post(server.url + "/docs/_search", content=body, headers=headers).json()
                raw_ns += clock() - start
                n += calls
    measured = sum(hooks.ns.values())
    hooks.ns["bookkeeping"] = total_ns - measured
    per_call = {stage: hooks.ns[stage] / n / 1e3 for stage in STAGES}
    raw = raw_ns / n / 1e3
    return {"calls": n, "total_us": total_ns / n / 1e3, "bare_us": bare_ns / n / 1e3,
            "transport_alone_us": alone_ns / n / 1e3, "raw_us": raw, "stages_us": per_call}


def table(result: dict[str, Any]) -> str:
    raw, total = result["raw_us"], result["total_us"]
    rows = ["| stage | what | µs per call | share of a raw post |", "|---|---|---|---|"]
    for stage in STAGES:
        us = result["stages_us"][stage]
        rows.append(f"| {stage} | {WHAT[stage]} | {us:.1f} | {us / raw:.1%} |")
    rows.append(f"| **dispatch, in all** | with the hooks | {total:.1f} | {total / raw:.1%} |")
    bare = result["bare_us"]
    rows.append(f"| dispatch without the hooks | interleaved, the hooks' own cost left out | {bare:.1f} | {bare / raw:.1%} |")
    alone = result["transport_alone_us"]
    rows.append(f"| the transport alone | `send` of the same request, nothing between, interleaved | {alone:.1f} | {alone / raw:.1%} |")
    rows.append(f"| raw httpx `post` + `.json()` | the baseline, interleaved | {raw:.1f} | 100% |")
    return "\n".join(rows)


def main() -> None:
    rounds, calls = 5, 40
    if "--quick" in sys.argv:
        rounds, calls = 1, 4
    from _common import results_dir, wrote

    out_dir = results_dir(sys.argv, "stages")
    started, load_before = time.perf_counter(), run.os.getloadavg()[0]
    with run.MinimalServer(run.ten_hits()) as server:
        result = measure(server, rounds, calls)
    machine = {"python": run.platform.python_version(), "cpu": run.cpu_name(), "cores": run.os.cpu_count(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average": [round(load_before, 2), round(run.os.getloadavg()[0], 2)]}
    report = {"machine": machine, "seconds": round(time.perf_counter() - started, 1), **result}
    (out_dir / "stages.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    text = (f"Machine: Python {machine['python']}, {machine['cpu']}, {machine['cores']} cores, {machine['date']}. "
            f"{result['calls']:,} dispatches of a 10-hit `xerj_search` on loopback, interleaved with as many raw "
            f"calls; {report['seconds']} s in all; load average {machine['load_average'][0]} at the start, "
            f"{machine['load_average'][1]} at the end.\n\n" + table(result) + "\n")
    (out_dir / "stages.md").write_text(text)
    wrote(out_dir, "stages.json", "stages.md")
    print(text)


if __name__ == "__main__":
    main()
