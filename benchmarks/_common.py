"""What the benchmark scripts share: the typical call, a ten-hit answer, a minimal loopback
server in its own process, and the tables' formatting. A leaf: it imports no other script."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TYPICAL = {"index": "docs", "query": {"bool": {"must": [{"match": {"body": "checkout outage"}}],
                                               "filter": [{"term": {"kind": "postmortem"}}]}},
           "size": 10, "from": 0, "sort": [{"_score": "desc"}], "source": ["title", "body", "year"]}


def ten_hits() -> bytes:
    hits = [{"_index": "docs", "_id": f"d-{i}", "_score": 3.2 - i * 0.1,
             "_source": {"title": f"Postmortem {i}", "year": 2026, "body": "Checkout search failed " * 8}}
            for i in range(10)]
    return json.dumps({"took": 2, "timed_out": False, "_shards": {"total": 1, "successful": 1, "failed": 0},
                       "hits": {"total": {"value": 10, "relation": "eq"}, "max_score": 3.2, "hits": hits}}).encode()


def results_dir(argv: list[str], name: str) -> Path:
    """Where a run writes its result files: ``--out DIR``, else a new temporary directory, so that
    a run leaves the tracked results in benchmarks/ alone unless told (``--out benchmarks``)."""
    if "--out" in argv:
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        return out
    return Path(tempfile.mkdtemp(prefix=f"xerj-bench-{name}-"))


def wrote(out_dir: Path, *names: str) -> None:
    """Say where the result files went (on stderr, after the tables)."""
    print(f"wrote {', '.join(names)} to {out_dir}", file=sys.stderr)


# ---------------------------------------------------------------- the minimal server (own process)

LISTING = json.dumps({"indices": [{"name": "docs", "attributes": ["open"]}], "aliases": [],
                      "data_streams": []}).encode()  # XERJ's `_resolve` shape (es_compat.rs:15816-15863)


def _serve(port_out: Any, connections: Any, body: bytes, ready: Any) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with connections.get_lock():
            connections.value += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                line = head.split(b"\r\n", 1)[0]
                if b" /slow/" in line:
                    await asyncio.sleep(0.05)
                # the index listing the dispatcher reads once per 30 s to resolve `docs`
                answer = LISTING if b" /_resolve/index/" in line else body
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(answer)).encode() + b"\r\n\r\n" + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
        port_out.value = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class MinimalServer:
    def __init__(self, body: bytes) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.port, self.connections, self.ready = ctx.Value("i", 0), ctx.Value("i", 0), ctx.Event()
        self.process = ctx.Process(target=_serve, args=(self.port, self.connections, body, self.ready), daemon=True)

    def __enter__(self) -> MinimalServer:
        self.process.start()
        self.ready.wait(20)
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port.value}"


# ---------------------------------------------------------------- helpers

def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def per_call(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "xerj_search", "arguments": json.dumps(arguments)}}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fmt(value: Any) -> str:
    if isinstance(value, dict) and "median" in value:
        return f"{value['median']:.3g} ({value['min']:.3g}–{value['max']:.3g})"
    return f"{value:.3g}" if isinstance(value, float) else str(value)
