"""Limits the engine cannot stretch, over real sockets on 127.0.0.1: the decoded size of a body
(compressed or not), one deadline per call, and the stand-in's socket options."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import socket
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from xerj_tools import AsyncDispatcher, Dispatcher, Limits, RetryPolicy, Timeout
from xerj_tools.testing import Fault, XerjStandIn

from conftest import Runner, chat_call
from rawserver import RawServer, answer, dribble, hang

# a pattern XERJ globs itself: the dispatcher reads no index listing before it (docs/policy.md)
SEARCH = {"index": "doc*", "query": {"match": {"body": "checkout"}}}
REPLY = json.dumps({"took": 1, "timed_out": False, "hits": {"total": {"value": 1, "relation": "eq"},
                    "hits": [{"_index": "docs", "_id": "1", "_score": 1.0, "_source": {"title": "t"}}]}}).encode()
MiB = 1024 * 1024


@functools.cache
def zeros_gzip(size: int, layers: int = 1) -> bytes:
    """`size` zero bytes, gzipped `layers` times, made without holding the zeros in memory (once,
    when a test first asks: ~2 s of CPU that every pytest-xdist worker would pay at collection)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MiB)
    data = b"".join(packer.compress(block) for _ in range(size // MiB)) + packer.flush()
    for _ in range(layers - 1):
        data = gzip.compress(data, 9)
    return data


BOMB_1 = functools.partial(zeros_gzip, 64 * MiB)
BOMB_2 = functools.partial(zeros_gzip, 256 * MiB, layers=2)


def run(make_runner: Any, url: str, **options: Any) -> Any:
    runner: Runner = make_runner(url=url, **options)
    return runner.run(chat_call("xerj_search", SEARCH))


def peak_of(action: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- decoded size -------------------------------------------------------------------------------

@pytest.mark.parametrize(("encoding", "body"), [("gzip", BOMB_1), ("gzip, gzip", BOMB_2)])
def test_a_compression_bomb_stops_at_the_cap_with_memory_near_it(
    make_runner: Any, encoding: str, body: Callable[[], bytes]
) -> None:
    with RawServer(answer(200, body(), {"Content-Encoding": encoding})) as server:
        result, peak = peak_of(lambda: run(make_runner, server.url, limits=Limits(max_response_bytes=MiB)))
    assert result.code in ("response_too_large", "invalid_response"), result.payload
    assert peak < 6 * MiB, f"peak {peak / MiB:.1f} MiB for a 1 MiB cap"


def test_stacked_codings_are_refused_and_say_why(make_runner: Any) -> None:
    body = gzip.compress(gzip.compress(REPLY))
    with RawServer(answer(200, body, {"Content-Encoding": "gzip, gzip"})) as server:
        result = run(make_runner, server.url)
    assert result.code == "invalid_response" and "gzip, gzip" in result.payload["error"]["reason"]


@pytest.mark.parametrize(("encoding", "pack"), [
    ("gzip", gzip.compress), ("deflate", zlib.compress),
    ("deflate", lambda b: zlib.compress(b)[2:-4]),  # raw deflate, as some servers send it
    ("identity", lambda b: b),
])
def test_a_compressed_reply_within_the_cap_is_read(make_runner: Any, encoding: str, pack: Any) -> None:
    with RawServer(answer(200, pack(REPLY), {"Content-Encoding": encoding})) as server:
        result = run(make_runner, server.url)
    assert result.ok and result.payload["hits"][0]["_id"] == "1"
    # XERJ never compresses; the dispatcher does not ask for it either
    assert b"accept-encoding: identity" in server.requests[0].lower()


def test_decoded_size_counts_against_the_cap(make_runner: Any) -> None:
    body = json.dumps({"hits": {"hits": [], "pad": "a" * 5000}}).encode()
    with RawServer(answer(200, gzip.compress(body), {"Content-Encoding": "gzip"})) as server:
        result = run(make_runner, server.url, limits=Limits(max_response_bytes=1000))
    assert result.code == "response_too_large"


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "x-bogus"])
def test_an_unknown_coding_is_an_invalid_response(make_runner: Any, encoding: str) -> None:
    with RawServer(answer(200, b"\x00\x01garbage", {"Content-Encoding": encoding})) as server:
        result = run(make_runner, server.url)
    assert result.code == "invalid_response" and encoding in result.payload["error"]["reason"]


def test_a_cut_compressed_body_is_an_invalid_response(make_runner: Any) -> None:
    with RawServer(answer(200, gzip.compress(REPLY)[:-12], {"Content-Encoding": "gzip"})) as server:
        result = run(make_runner, server.url)
    assert result.code == "invalid_response"


# -- one deadline per call ----------------------------------------------------------------------

def _head(body: bytes, pad: int = 0) -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            + (f"X-Pad: {'a' * pad}\r\n" if pad else "") + "\r\n").encode()


BODY = REPLY + b" " * 400
DRIBBLERS = {
    # a byte every 0.05 s: each read answers well within read_timeout, and the whole takes minutes
    "dribbled body": dribble(_head(BODY), BODY, every=0.05, limit=8),
    "dribbled headers": dribble(b"", _head(BODY, pad=400) + BODY, every=0.05, limit=8),
    "hung node": hang(8),
}


@pytest.mark.parametrize("script", DRIBBLERS, ids=str)
def test_no_server_stretches_the_call_past_its_deadline(make_runner: Any, script: str) -> None:
    with RawServer(DRIBBLERS[script]) as server:
        result = run(make_runner, server.url, timeout=Timeout(call=0.5, read=30.0))
        assert result.code == "timeout", result.payload
        error = result.payload["error"]
        assert error["deadline"] == 0.5 and "deadline" in error["reason"]
        assert result.attempts == 1 and len(server.requests) == 1


class FakeTime:
    """A clock that only the injected sleep moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, seconds: float) -> None:  # the sync sleep, as a `SleepRecorder` is
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_deadline_includes_the_waits(mode: str, xerj: XerjStandIn) -> None:
    xerj.fail_next(*[Fault(status=503, headers={"Retry-After": "4"})] * 10)
    fake = FakeTime()
    runner = Runner(mode, fake, url=xerj.url, timeout=Timeout(call=10.0), clock=fake.clock,  # type: ignore[arg-type]
                    retry=RetryPolicy(max_attempts=10, max_time=100.0))
    try:
        result = runner.run(chat_call("xerj_search", SEARCH))
    finally:
        runner.close()
    # waits of 4 s at 0 and 4; a third would end at 12, past the deadline of 10
    assert result.attempts == 3 and fake.now == 8.0 and result.code == "server_error"


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan")])
@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher])
def test_a_call_timeout_is_configuration(kind: type, seconds: float) -> None:
    from xerj_tools import ConfigurationError

    with pytest.raises(ConfigurationError, match="timeout must be a positive number of seconds"):
        kind(url="http://127.0.0.1:9", timeout=seconds)
    with pytest.raises(ConfigurationError, match=r"Timeout\.call must be a positive number"):
        kind(url="http://127.0.0.1:9", timeout=Timeout(call=seconds))


# -- the stand-in -------------------------------------------------------------------------------

def test_the_stand_in_disables_nagle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without TCP_NODELAY a keep-alive client waits ~40 ms on every response (Nagle and delayed
    ACK), which distorts every latency measured against the stand-in."""
    from xerj_tools.testing import _handler

    seen: list[int] = []
    setup = _handler.RequestHandler.setup

    def spy(self: Any) -> None:
        setup(self)
        seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(_handler.RequestHandler, "setup", spy)
    with XerjStandIn() as xerj, socket.create_connection(("127.0.0.1", int(xerj.url.rsplit(":", 1)[1]))) as conn:
        conn.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert conn.recv(100).startswith(b"HTTP/1.1 200")
    assert seen and all(seen)


def test_the_stand_in_queues_a_turn_of_connections_at_once() -> None:
    """socketserver listens with a backlog of 5: the sixth connection opened at once, before the
    server accepts, had its handshake dropped and waited out TCP's 1 s SYN retransmission (a
    second added to any turn of more concurrent calls). Here nothing accepts: 40 connections
    complete at once only with a deeper backlog (10 s is a failure bound, not a measurement)."""
    import select
    from http.server import BaseHTTPRequestHandler

    from xerj_tools.testing._loopback import LoopbackServer

    server = LoopbackServer(0, BaseHTTPRequestHandler)  # listening, never started: no accept
    clients = [socket.socket() for _ in range(40)]
    try:
        for client in clients:
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", server.server_port))
        pending = list(clients)
        for _ in range(100):
            _, writable, _ = select.select([], pending, [], 0.1)
            pending = [c for c in pending if c not in writable]
            if not pending:
                break
        assert pending == [], f"{len(pending)} of 40 connections not accepted into the queue"
        assert all(c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for c in clients)
    finally:
        for client in clients:
            client.close()
        server.server_close()


# -- an async read stopped early ----------------------------------------------------------------

def test_an_async_read_stopped_early_leaves_no_stream_to_the_collector(xerj: XerjStandIn) -> None:
    """httpx streams through a chain of async generators; one abandoned mid-way is finalized
    later by the loop, and on a closed loop (3.13) that is an error. Every read the dispatcher
    stops (the cap here) ends the chain before it returns."""
    import gc
    import sys

    big = b'{"x": "' + b"a" * 200_000 + b'"}'
    xerj.fail_next(*[Fault(status=200, body=big, match="_search")] * 3)

    async def go() -> tuple[list[Any], list[str]]:
        firstiter, finalizer = sys.get_asyncgen_hooks()
        left: list[str] = []

        def record(agen: Any) -> None:
            left.append(agen.__qualname__)
            if finalizer is not None:
                finalizer(agen)

        sys.set_asyncgen_hooks(firstiter, record)
        try:
            async with AsyncDispatcher(url=xerj.url, limits=Limits(max_response_bytes=1000)) as dispatcher:
                results = [await dispatcher.run(chat_call("xerj_search", SEARCH)) for _ in range(3)]
                gc.collect()
        finally:
            sys.set_asyncgen_hooks(firstiter, finalizer)
        return results, left

    results, left = asyncio.run(go())
    assert [r.code for r in results] == ["response_too_large"] * 3
    assert left == []
