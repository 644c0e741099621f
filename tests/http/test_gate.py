"""The in-flight bound (`max_in_flight`): at most N requests at the server, first come first
served, the wait counted against the deadline, every slot given back.

The server holds each request until the test lets it go, and counts the requests it holds: no
timing is asserted, only what the server saw and what each call answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx2
import pytest
from support import until, until_async

from xerj_tools import AsyncDispatcher, ConfigurationError, Dispatcher, Limits, RetryPolicy, Timeout
from xerj_tools._http._deadline import Deadline
from xerj_tools._http._gate import AsyncGate
from xerj_tools._http._models import Reply
from xerj_tools.testing import Fault, XerjStandIn
from xerj_tools.testing._loopback import LoopbackServer

from conftest import chat_call

ONE_TRY = RetryPolicy(max_attempts=1)
EMPTY = json.dumps({"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}})


class Holding:
    """A XERJ stand-in that holds every request until `open()` (or one `let_one()`), and counts
    the requests it holds: now (`held`) and at most (`most`), and their order of arrival."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.held = self.most = 0
        self.order: list[str] = []
        self.opened = threading.Event()
        self._permits = threading.Semaphore(0)
        holding = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                holding._arrive(json.dumps(body.get("query"), sort_keys=True))
                while not holding.opened.is_set() and not holding._permits.acquire(timeout=0.02):
                    pass
                with holding.changed:
                    holding.held -= 1
                    holding.changed.notify_all()
                data = EMPTY.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = LoopbackServer(0, Handler)

    def _arrive(self, query: str) -> None:
        with self.changed:
            self.held += 1
            self.most = max(self.most, self.held)
            self.order.append(query)
            self.changed.notify_all()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def wait_for(self, check: Callable[[], bool], seconds: float = 10) -> None:
        with self.changed:
            assert self.changed.wait_for(check, seconds), "the server never got there"

    def open(self) -> None:
        self.opened.set()

    def let_one(self) -> None:
        self._permits.release()

    def __enter__(self) -> Holding:
        self._server.start("holding")
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()
        self._server.stop()


@pytest.fixture
def server() -> Iterator[Holding]:
    with Holding() as holding:
        yield holding


def search(tag: str, call_id: str = "call_1") -> dict[str, Any]:
    # a pattern XERJ globs itself: the dispatcher reads no index listing before sending it
    return chat_call("xerj_search", {"index": "doc*", "query": {"term": {"tag": tag}}}, call_id)


def arrived(tag: str) -> str:
    return json.dumps({"term": {"tag": tag}}, sort_keys=True)


def payload(message: Any) -> dict[str, Any]:
    return json.loads(message["content"])  # type: ignore[no-any-return]


# ---------------------------------------------------------------- at most N at the server

def test_sync_at_most_n_requests_reach_the_server_from_many_threads_and_turns(server: Holding) -> None:
    with Dispatcher(url=server.url, limits=Limits(max_in_flight=3), retry=ONE_TRY) as dispatcher:
        gate = dispatcher._gate
        assert gate is not None
        answers: list[Any] = []

        def turn(i: int) -> None:
            answers.extend(dispatcher.dispatch_many([search(f"t{i}-{j}", f"c{j}") for j in range(4)]))

        def one(i: int) -> None:
            answers.append(dispatcher.dispatch(search(f"s{i}")))

        threads = [threading.Thread(target=turn, args=(i,)) for i in range(2)]
        threads += [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        until(lambda: gate.waiting == 9 and server.held == 3)  # 12 calls: 3 at the server, 9 queued
        assert gate.in_flight == 3
        server.open()
        for t in threads:
            t.join(10)
        assert len(answers) == 12 and all(payload(m)["ok"] for m in answers)
        assert server.most == 3 and gate.in_flight == 0 and gate.waiting == 0


@pytest.mark.parametrize("bound", [4, None])
def test_async_at_most_n_requests_reach_the_server(server: Holding, bound: int | None) -> None:
    async def go() -> None:
        async with AsyncDispatcher(url=server.url, limits=Limits(max_in_flight=bound), retry=ONE_TRY) as dispatcher:
            tasks = [asyncio.ensure_future(dispatcher.dispatch(search(f"a{i}"))) for i in range(30)]
            # unbounded, the pool's 10 connections are what stops the rest
            await until_async(lambda: server.held == (bound or 10))
            if dispatcher._gate is not None:
                await until_async(lambda: dispatcher._gate.waiting == 30 - 4)  # type: ignore[union-attr]
            server.open()
            answers = await asyncio.gather(*tasks)
            assert all(payload(m)["ok"] for m in answers)
            assert server.most == (bound or 10)

    asyncio.run(go())


# ---------------------------------------------------------------- first come, first served

def test_sync_waiting_calls_are_sent_in_the_order_they_came(server: Holding) -> None:
    with Dispatcher(url=server.url, limits=Limits(max_in_flight=1), retry=ONE_TRY) as dispatcher:
        gate = dispatcher._gate
        assert gate is not None
        threads = []
        for i in range(6):
            threads.append(threading.Thread(target=dispatcher.dispatch, args=(search(f"q{i}"),)))
            threads[-1].start()
            until(lambda i=i: server.held == 1 and gate.waiting == i)  # type: ignore[misc]
        for _ in range(6):
            server.let_one()
        for t in threads:
            t.join(10)
        assert server.order == [arrived(f"q{i}") for i in range(6)] and server.most == 1


def test_async_waiting_calls_are_sent_in_the_order_they_came(server: Holding) -> None:
    async def go() -> None:
        async with AsyncDispatcher(url=server.url, limits=Limits(max_in_flight=1), retry=ONE_TRY) as dispatcher:
            gate = dispatcher._gate
            assert gate is not None
            tasks = []
            for i in range(6):
                tasks.append(asyncio.ensure_future(dispatcher.dispatch(search(f"q{i}"))))
                await until_async(lambda i=i: server.held == 1 and gate.waiting == i)  # type: ignore[misc]
            server.open()
            await asyncio.gather(*tasks)
            assert server.order == [arrived(f"q{i}") for i in range(6)] and server.most == 1

    asyncio.run(go())


# ---------------------------------------------------------------- the deadline while waiting

def assert_unsent_deadline(message: Any, server: Holding) -> None:
    error = payload(message)["error"]
    assert error["code"] == "timeout" and error["deadline"] == 0.2
    assert "nothing was sent" in error["reason"] and "attempts" not in error
    assert server.order == [arrived("first")]  # the late call never reached the server


def test_sync_a_call_with_no_slot_before_its_deadline_fails_unsent(server: Holding) -> None:
    with Dispatcher(url=server.url, limits=Limits(max_in_flight=1)) as dispatcher:
        first: list[Any] = []
        thread = threading.Thread(target=lambda: first.append(dispatcher.dispatch(search("first"))))
        thread.start()
        server.wait_for(lambda: server.held == 1)
        dispatcher.timeout = Timeout(call=0.2)  # for the calls that start from now on
        assert_unsent_deadline(dispatcher.dispatch(search("late")), server)
        server.open()
        thread.join(10)
        assert payload(first[0])["ok"] and dispatcher._gate.in_flight == 0  # type: ignore[union-attr]


def test_async_a_call_with_no_slot_before_its_deadline_fails_unsent(server: Holding) -> None:
    async def go() -> None:
        async with AsyncDispatcher(url=server.url, limits=Limits(max_in_flight=1)) as dispatcher:
            first = asyncio.ensure_future(dispatcher.dispatch(search("first")))
            await until_async(lambda: server.held == 1)
            dispatcher.timeout = Timeout(call=0.2)
            assert_unsent_deadline(await dispatcher.dispatch(search("late")), server)
            server.open()
            assert payload(await first)["ok"] and dispatcher._gate.in_flight == 0  # type: ignore[union-attr]

    asyncio.run(go())


def test_the_pool_timeout_of_a_client_you_pass_bounds_the_wait_too(server: Holding) -> None:
    timeout = httpx2.Timeout(30, pool=0.2)
    with httpx2.Client(timeout=timeout) as client, \
            Dispatcher(url=server.url, client=client, limits=Limits(max_in_flight=1), retry=ONE_TRY) as dispatcher:  # fmt: skip
        thread = threading.Thread(target=dispatcher.dispatch, args=(search("first"),))
        thread.start()
        server.wait_for(lambda: server.held == 1)
        error = payload(dispatcher.dispatch(search("late")))["error"]
        assert error["code"] == "timeout" and "no free connection" in error["reason"] and "deadline" not in error
        server.open()
        thread.join(10)
    assert server.order == [arrived("first")]


# ---------------------------------------------------------------- slots come back

def test_slots_come_back_after_failed_attempts(make_runner: Any, xerj: XerjStandIn) -> None:
    # One slot and a short deadline: a slot kept by a failed call would fail every later one.
    xerj.fail_next(500, Fault(drop="before"), Fault(truncate=5), 503)
    runner = make_runner(url=xerj.url, limits=Limits(max_in_flight=1), retry=ONE_TRY, timeout=Timeout(call=5))
    codes = [runner.run(search(f"f{i}")).code for i in range(5)]
    assert None not in codes[:4] and "timeout" not in codes and codes[4] is None


class Boom(BaseException):
    """Stands for KeyboardInterrupt (which pytest would take for the user's own Ctrl-C)."""


def exploding_once() -> Callable[[httpx2.Request], httpx2.Response]:
    calls = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        if len(calls) == 1:
            raise Boom
        return httpx2.Response(200, content=EMPTY.encode())

    return handler


def test_sync_a_slot_comes_back_when_an_interrupt_goes_through_the_send() -> None:
    with httpx2.Client(transport=httpx2.MockTransport(exploding_once())) as client, \
            Dispatcher(url="http://xerj.test", client=client, limits=Limits(max_in_flight=1)) as dispatcher:  # fmt: skip
        with pytest.raises(Boom):
            dispatcher.dispatch(search("boom"))
        assert dispatcher._gate is not None and dispatcher._gate.in_flight == 0
        assert payload(dispatcher.dispatch(search("after")))["ok"]


def test_async_a_slot_comes_back_when_an_interrupt_goes_through_the_send() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return exploding(request)

    exploding = exploding_once()

    async def go() -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client, \
                AsyncDispatcher(url="http://xerj.test", client=client, limits=Limits(max_in_flight=1)) as dispatcher:  # fmt: skip
            with pytest.raises(Boom):
                await dispatcher.dispatch(search("boom"))
            assert dispatcher._gate is not None and dispatcher._gate.in_flight == 0
            assert payload(await dispatcher.dispatch(search("after")))["ok"]

    asyncio.run(go())


def test_sync_an_interrupt_while_waiting_leaves_the_queue(server: Holding) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")

    def interrupt(*_: Any) -> None:
        raise Boom

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        with Dispatcher(url=server.url, limits=Limits(max_in_flight=1)) as dispatcher:
            gate = dispatcher._gate
            assert gate is not None
            first = threading.Thread(target=dispatcher.dispatch, args=(search("first"),))
            first.start()
            server.wait_for(lambda: server.held == 1)
            main = threading.main_thread().ident
            assert main is not None

            def ctrl_c() -> None:
                until(lambda: gate.waiting == 1)
                signal.pthread_kill(main, signal.SIGINT)

            helper = threading.Thread(target=ctrl_c)
            helper.start()
            with pytest.raises(Boom):
                dispatcher.dispatch(search("interrupted"))
            helper.join(10)
            assert gate.waiting == 0 and gate.in_flight == 1
            server.open()
            first.join(10)
            assert gate.in_flight == 0 and server.order == [arrived("first")]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_async_cancelled_calls_give_back_their_slot_or_their_place(server: Holding) -> None:
    async def go() -> None:
        async with AsyncDispatcher(url=server.url, limits=Limits(max_in_flight=2), retry=ONE_TRY) as dispatcher:
            gate = dispatcher._gate
            assert gate is not None
            tasks = [asyncio.ensure_future(dispatcher.dispatch(search(f"c{i}"))) for i in range(5)]
            await until_async(lambda: server.held == 2 and gate.waiting == 3)
            tasks[0].cancel()  # on the wire
            tasks[3].cancel()  # in the queue
            with contextlib.suppress(asyncio.CancelledError):
                await tasks[0]
            with contextlib.suppress(asyncio.CancelledError):
                await tasks[3]
            # c0's slot went to the next in line (c2); c3 left the queue; c4 still waits
            await until_async(lambda: len(server.order) == 3)
            assert gate.waiting == 1 and gate.in_flight == 2
            server.open()
            rest = await asyncio.gather(tasks[1], tasks[2], tasks[4])
            assert all(payload(m)["ok"] for m in rest)
            assert gate.in_flight == 0 and gate.waiting == 0
            assert arrived("c3") not in server.order and arrived("c4") in server.order

    asyncio.run(go())


def test_async_a_slot_handed_over_just_before_a_cancellation_goes_on() -> None:
    sent: list[str] = []

    def sender(name: str) -> Callable[[], Any]:
        async def send() -> Reply:
            sent.append(name)
            return Reply(200, {}, b"{}")

        return send

    async def go() -> None:
        gate = AsyncGate(1, None)
        gate._free = 0  # the one slot is held elsewhere
        second = asyncio.ensure_future(gate.send(Deadline(30), "n", sender("second")))
        third = asyncio.ensure_future(gate.send(Deadline(30), "n", sender("third")))
        await until_async(lambda: gate.waiting == 2)
        gate._release()  # the slot is handed to `second`, which has not run since
        second.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await second
        await third  # `second` passed the slot on
        assert sent == ["third"] and gate.in_flight == 0 and gate.waiting == 0

    asyncio.run(go())


# ---------------------------------------------------------------- the bound's value

def test_the_default_bound_is_the_pools_connection_limit() -> None:
    with Dispatcher(url="http://xerj.test") as d, Dispatcher(url="http://xerj.test", limits=Limits(pool_size=4)) as d4:
        assert d._gate is not None and d._gate.limit == 10
        assert d4._gate is not None and d4._gate.limit == 4
    with httpx2.Client(limits=httpx2.Limits(max_connections=7)) as client, \
            Dispatcher(url="http://xerj.test", client=client) as d:  # fmt: skip
        assert d._gate is not None and d._gate.limit == 7
    with httpx2.Client(limits=httpx2.Limits(max_connections=None)) as client, \
            Dispatcher(url="http://xerj.test", client=client) as d:  # fmt: skip
        assert d._gate is None  # an unlimited pool: no bound
    with httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200))) as client, \
            Dispatcher(url="http://xerj.test", client=client) as d:  # fmt: skip
        assert d._gate is None  # limits that cannot be read: the client's business
    with Dispatcher(url="http://xerj.test", limits=Limits(max_in_flight=None)) as d, \
            Dispatcher(url="http://xerj.test", limits=Limits(max_in_flight=50)) as d50:  # fmt: skip
        assert d._gate is None and d50._gate is not None and d50._gate.limit == 50

    async def go() -> None:
        async with AsyncDispatcher(url="http://xerj.test", limits=Limits(pool_size=3)) as a, \
                httpx2.AsyncClient(limits=httpx2.Limits(max_connections=6)) as client, \
                AsyncDispatcher(url="http://xerj.test", client=client) as b:  # fmt: skip
            assert a._gate is not None and a._gate.limit == 3
            assert b._gate is not None and b._gate.limit == 6

    asyncio.run(go())


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "many"])
def test_a_bound_that_is_no_positive_int_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_in_flight"):
        Limits(max_in_flight=bad)
