"""Concurrency over a socket: the async pool after cancellations, the sync thread pool's life,
using a dispatcher after `close()`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from support import until

from xerj_tools import (
    AsyncDispatcher,
    ClosedError,
    ConfigurationError,
    Dispatcher,
    Limits,
    RetryPolicy,
    Timeout,
)
from xerj_tools.testing import Fault, XerjStandIn

from conftest import chat_call
from storm import left_behind, settle

ONE_TRY = RetryPolicy(max_attempts=1)
# Without the in-flight bound every cancelled request is cut inside the connection pool, where
# httpcore 1.x lost slots (encode/httpcore#1093, #1115): these tests turn it off to look there.
UNBOUNDED = Limits(max_in_flight=None)


def turn(i: int, width: int = 4) -> list[dict[str, Any]]:
    """`width` distinct searches (distinct, so none is merged with another)."""
    return [
        chat_call(
            "xerj_search",
            {"index": "docs", "query": {"match": {"body": f"w{i}-{j}"}}, "size": 1},
            f"c{j}",
        )
        for j in range(width)
    ]


async def cancel_turns(dispatcher: AsyncDispatcher, count: int) -> None:
    """Start `count` contended turns and cancel each after 0 to 8 passes of the event loop:
    deterministic cancellation points from before the first connection to mid-response."""
    for i in range(count):
        transcript: list[Any] = []
        task = asyncio.ensure_future(dispatcher.dispatch_many(turn(i), transcript=transcript))
        for _ in range(i % 9):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert [m["tool_call_id"] for m in transcript] == ["c0", "c1", "c2", "c3"]


def codes(messages: list[Any]) -> list[str | None]:
    return [json.loads(m["content"]).get("error", {}).get("code") for m in messages]


def test_async_dispatcher_serves_normal_calls_after_hundreds_of_cancelled_turns(
    xerj: XerjStandIn,
) -> None:
    # A small pool, so that every turn contends for it; a short pool timeout, so that a pool
    # whose slots leaked shows as `timeout` answers in bounded time.
    async def go() -> None:
        async with AsyncDispatcher(
            url=xerj.url, limits=Limits(pool_size=2, max_in_flight=None), timeout=Timeout(read=2), retry=ONE_TRY
        ) as dispatcher:
            await cancel_turns(dispatcher, 150)
            await settle(dispatcher)
            assert left_behind(dispatcher) == []
            for i in range(3):
                assert codes(await dispatcher.dispatch_many(turn(1000 + i))) == [None] * 4
            assert (await dispatcher.run(turn(2000, 1)[0])).ok

    asyncio.run(go())


def test_a_client_you_pass_in_survives_cancelled_turns_and_is_left_open(xerj: XerjStandIn) -> None:
    async def go() -> None:
        limits = httpx2.Limits(max_connections=2)
        async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(5.0)) as client:
            dispatcher = AsyncDispatcher(url=xerj.url, client=client, retry=ONE_TRY, limits=UNBOUNDED)
            await cancel_turns(dispatcher, 200)
            await settle(dispatcher)
            pool = client._transport._pool  # type: ignore[attr-defined]
            assert pool._requests == [] and all(
                c.is_idle() or c.is_closed() for c in pool.connections
            )
            result = await dispatcher.run(turn(1000, 1)[0])
            assert result.ok, result.message
            await dispatcher.aclose()
            assert not client.is_closed

    asyncio.run(go())


def test_a_plain_httpx_client_is_accepted_with_a_warning_and_its_errors_become_answers(
    xerj: XerjStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    httpx = pytest.importorskip("httpx")  # the library a caller may still use; never ours

    async def go() -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(2.0)) as client:
            dispatcher = AsyncDispatcher(url=xerj.url, client=client, retry=ONE_TRY, timeout=Timeout(call=1))
            assert (await dispatcher.run(turn(1, 1)[0])).ok
            closed = AsyncDispatcher(url="http://127.0.0.1:9", client=client, retry=ONE_TRY)
            failure = json.loads((await closed.dispatch(turn(2, 1)[0]))["content"])
            assert failure["error"]["code"] == "unreachable"  # httpx.ConnectError, mapped
            await dispatcher.aclose()
            assert not client.is_closed
        with (
            httpx.Client() as sync_client,
            Dispatcher(url="http://127.0.0.1:9", client=sync_client, retry=ONE_TRY) as sync,
        ):
            assert (
                json.loads(sync.dispatch(turn(3, 1)[0])["content"])["error"]["code"]
                == "unreachable"
            )

    with caplog.at_level(logging.WARNING, logger="xerj_tools"):
        asyncio.run(go())
    warnings = [r.getMessage() for r in caplog.records if "plain httpx client" in r.getMessage()]
    assert len(warnings) == 2 and "encode/httpcore#1093" in warnings[0]


def test_concurrent_first_turns_make_one_thread_pool(
    xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    import xerj_tools._dispatch._sync as dispatch_module

    made: list[ThreadPoolExecutor] = []
    gate = threading.Barrier(4)

    class Counted(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Hold each thread here until all four arrive: without a lock all four make a pool;
            # with one, the first waits alone (until the barrier gives up) and the rest reuse it.
            # The fixed path always waits the timeout out: 0.3 s, ample for four threads to start.
            with contextlib.suppress(threading.BrokenBarrierError):
                gate.wait(timeout=0.3)
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(dispatch_module, "ThreadPoolExecutor", Counted)
    with Dispatcher(url=xerj.url) as dispatcher:
        results: list[list[str | None]] = []
        threads = [
            threading.Thread(
                target=lambda i=i: results.append(codes(dispatcher.dispatch_many(turn(i, 2))))
            )
            for i in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [[None, None]] * 4
    assert len(made) == 1


def xerj_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("xerj-tools")]


def test_a_closed_dispatcher_raises_closed_error_and_starts_no_thread(xerj: XerjStandIn) -> None:
    dispatcher = Dispatcher(url=xerj.url)
    assert codes(dispatcher.dispatch_many(turn(0, 2))) == [None, None]
    dispatcher.close()
    assert xerj_threads() == []
    transcript: list[Any] = []
    for attempt in (
        lambda: dispatcher.dispatch_many(turn(1, 3), transcript=transcript),
        lambda: dispatcher.run_many(turn(2, 1)),
        lambda: dispatcher.dispatch(turn(3, 1)[0]),
    ):
        with pytest.raises(ClosedError, match="closed"):
            attempt()
    assert xerj_threads() == [] and transcript == []
    dispatcher.close()  # twice is harmless

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as aio:
            assert codes(await aio.dispatch_many(turn(4, 2))) == [None, None]
        with pytest.raises(ClosedError):
            aio.dispatch_many(turn(5, 2))
        with pytest.raises(ClosedError):
            await aio.dispatch(turn(6, 1)[0])
        await aio.aclose()

    asyncio.run(go())
    assert issubclass(ClosedError, ConfigurationError) and not issubclass(ClosedError, RuntimeError)


def test_close_waits_for_the_turn_in_flight(xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=0.3, match="_search"))
    dispatcher = Dispatcher(url=xerj.url)
    out: list[list[str | None]] = []
    worker = threading.Thread(
        target=lambda: out.append(codes(dispatcher.dispatch_many(turn(0, 3))))
    )
    worker.start()
    # all three searches on the wire (the index listing read first is not one), one held up
    until(lambda: sum("_search" in r.path for r in xerj.requests) == 3)
    dispatcher.close()
    worker.join()
    assert out == [[None, None, None]]  # answered, not broken by the close
    assert xerj_threads() == []


def test_aclose_during_a_call_answers_it_and_sends_no_more(xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=0.5, match="_search"))

    async def go() -> None:
        dispatcher = AsyncDispatcher(url=xerj.url)
        task = asyncio.ensure_future(dispatcher.run(turn(0, 1)[0]))
        for _ in range(1000):  # until the request is on the wire (bounded)
            if xerj.requests:
                break
            await asyncio.sleep(0.01)
        await dispatcher.aclose()
        result = await task  # answered, nothing raised
        assert not result.ok and result.code in ("cancelled", "unreachable")
        assert len(xerj.requests) == 1  # no retry went out on the closed client

    asyncio.run(go())
