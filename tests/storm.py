"""Cancellation storms against `AsyncDispatcher`: hundreds of seeded
cancellations of `dispatch_many` turns and `arun_agent` runs at every delay, then a look at
what they left behind (tests/dispatch/test_storm.py; `python tests/storm.py` for the measurement that
docs/configuration.md records)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from canned import listing

from xerj_tools import AsyncDispatcher, Limits, Timeout, arun_agent

from conftest import chat_call

SEARCH_ANSWER = json.dumps({
    "took": 1, "timed_out": False,
    "hits": {"total": {"value": 1, "relation": "eq"}, "max_score": 1.0,
             "hits": [{"_index": "docs", "_id": "1", "_score": 1.0, "_source": {"body": "hi"}}]},
}).encode()  # fmt: skip


LISTING = json.dumps(listing()).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a connection serves request after request

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # the index listing a dispatcher resolves names against, else one search hit
        body = LISTING if self.path == "/_resolve/index/*" else SEARCH_ANSWER
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops a storm's sixth connection opened at once: each such
    # connection waited out TCP's 1 s SYN retransmission.
    request_queue_size = 128


@contextlib.contextmanager
def threaded_server() -> Iterator[str]:
    """A plain `ThreadingHTTPServer` with keep-alive on 127.0.0.1 that answers every request
    with one search hit."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # resets
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def search(i: int, j: int) -> tuple[str, dict[str, Any], str]:
    return ("xerj_search", {"index": "docs", "query": {"match": {"body": f"w{i}-{j}"}}}, f"c{j}")


class _Model:
    """An AsyncOpenAI stand-in: the first turn asks for `width` searches, the second ends."""

    def __init__(self, i: int, width: int) -> None:
        self.chat, self.completions = self, self
        self._turns = [[chat_call(*search(i, j)) for j in range(width)], []]

    async def create(self, **_: Any) -> dict[str, Any]:
        calls = self._turns.pop(0) if self._turns else []
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else "done"}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


@dataclass
class Storm:
    """`count` cancellations, seeded: each waits 0 to `max_ms` ms (every whole ms in turn, plus a
    seeded fraction) or 0 to 12 passes of the event loop, then cancels; `twice` of them
    are cancelled a second time a few passes later (a cancel landing in the cleanup of the first)."""

    count: int
    seed: int
    max_ms: int = 12
    width: int = 8
    twice: float = 0.25
    cancelled: int = 0
    completed: int = 0
    problems: list[str] = field(default_factory=list)

    async def _pause(self, i: int, rng: random.Random) -> None:
        if i % 3 == 0:
            for _ in range(rng.randint(0, 12)):
                await asyncio.sleep(0)
        else:
            await asyncio.sleep(((i % (self.max_ms + 1)) + rng.random()) / 1000)

    async def _cut(self, task: asyncio.Future[Any], rng: random.Random) -> None:
        task.cancel()
        if rng.random() < self.twice:
            for _ in range(rng.randint(0, 4)):
                await asyncio.sleep(0)
            task.cancel()
        try:
            await task
            self.completed += 1
        except asyncio.CancelledError:
            self.cancelled += 1

    async def turns(self, dispatcher: AsyncDispatcher) -> None:
        """Cancel `dispatch_many` turns; each leaves every call answered in its transcript."""
        rng = random.Random(self.seed)
        for i in range(self.count):
            calls = [chat_call(*search(i, j)) for j in range(self.width)]
            transcript: list[Any] = []
            task = asyncio.ensure_future(dispatcher.dispatch_many(calls, transcript=transcript))
            await self._pause(i, rng)
            await self._cut(task, rng)
            answered = [m["tool_call_id"] for m in transcript]
            if answered != [c["id"] for c in calls]:
                self.problems.append(f"turn {i}: transcript answers {answered}")

    async def runs(self, dispatcher: AsyncDispatcher) -> None:
        """Cut `arun_agent` runs with `asyncio.wait_for`, or cancel them (every third)."""
        rng = random.Random(self.seed)
        for i in range(self.count):
            run = arun_agent(_Model(i, self.width), model="m", messages="q", dispatcher=dispatcher)
            if i % 3:
                try:
                    await asyncio.wait_for(run, ((i % (self.max_ms + 1)) + rng.random()) / 1000)
                    self.completed += 1
                except asyncio.TimeoutError:
                    self.cancelled += 1
                continue
            task = asyncio.ensure_future(run)
            await self._pause(i, rng)
            await self._cut(task, rng)


def left_behind(dispatcher: AsyncDispatcher) -> list[str]:
    """What a storm stranded: requests or busy connections in the client's pool, slots held
    in the in-flight gate. Empty when nothing was."""
    found = []
    gate = dispatcher._gate
    if gate is not None and (gate.in_flight or gate.waiting):
        found.append(f"gate: {gate.in_flight} slots held, {gate.waiting} waiting")
    pool = dispatcher._transport.client._transport._pool  # type: ignore[attr-defined]
    if pool._requests:
        found.append(f"pool: {len(pool._requests)} requests")
    busy = [c for c in pool.connections if not (c.is_idle() or c.is_closed())]
    if busy:
        found.append(f"pool: {len(busy)} busy connections ({pool!r})")
    return found


async def settle(dispatcher: AsyncDispatcher) -> None:
    """Let whatever a cancellation started (a connection's close) run: every task of this loop
    but the caller's is done, or 10 s have passed."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        await asyncio.wait(others, timeout=10)
    await asyncio.sleep(0)


async def after(dispatcher: AsyncDispatcher) -> tuple[list[str], bool, float]:
    """Settle, look for what was left, then make one more call: (left, answered ok, seconds)."""
    await settle(dispatcher)
    left = left_behind(dispatcher)
    started = time.monotonic()
    message = await asyncio.wait_for(dispatcher.dispatch(chat_call(*search(-1, 0))), 30)
    ok = json.loads(message["content"]).get("ok") is True
    return left, ok, time.monotonic() - started


async def measure(url: str, kind: str, gate: bool, count: int, seed: int) -> str:
    storm = Storm(count, seed)
    options: dict[str, Any] = {
        "limits": Limits(pool_size=4, max_in_flight="pool" if gate else None),
        "timeout": Timeout(read=5),
    }
    async with AsyncDispatcher(url=url, **options) as dispatcher:
        started = time.monotonic()
        await (storm.turns if kind == "turns" else storm.runs)(dispatcher)
        took = time.monotonic() - started
        left, ok, seconds = await after(dispatcher)
    return (
        f"{kind:5} gate={'on ' if gate else 'off'} seed={seed}: {storm.cancelled} cancelled, "
        f"{storm.completed} completed in {took:.1f} s; left {left or 'nothing'}; next call "
        f"{'ok' if ok else 'FAILED'} in {seconds:.2f} s; problems: {storm.problems[:2] or 'none'}"
    )


def main() -> None:  # pragma: no cover - the measurement for docs/configuration.md
    import sys

    from xerj_tools.testing import XerjStandIn

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seeds = [int(s) for s in sys.argv[2:]] or [1, 2, 3, 4]
    with XerjStandIn() as standin, threaded_server() as plain:
        for name, url in (("stand-in", standin.url), ("threaded", plain)):
            for kind in ("turns", "runs"):
                for gate in (True, False):
                    for seed in seeds:
                        line = asyncio.run(measure(url, kind, gate, count, seed))
                        print(f"{name:8} {line}", flush=True)


if __name__ == "__main__":
    main()
