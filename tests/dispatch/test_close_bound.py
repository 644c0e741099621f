"""`Dispatcher`'s count of running calls against interrupts, and the bound on `close()`:
a KeyboardInterrupt landing on any line of the dispatcher leaves no call
counted, and `close()` never waits longer than its bound."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from xerj_tools import Dispatcher, Limits, RetryPolicy, Timeout
from xerj_tools.testing import XerjStandIn

from conftest import chat_call, interrupted
from rawserver import RawServer

DISPATCH = ("xerj_tools/_dispatch/_sync.py",)  # the sync dispatcher's own lines

CALLS = [chat_call("xerj_search", {"index": "docs", "query": {"match": {"body": f"w{i}"}}}, f"c{i}")
         for i in range(2)]  # fmt: skip


@pytest.mark.parametrize("many", [False, True], ids=["run", "dispatch_many"])
def test_an_interrupt_on_any_line_leaves_no_call_counted(xerj: XerjStandIn, many: bool) -> None:
    dispatcher = Dispatcher(url=xerj.url, limits=Limits(max_workers=1))

    def job() -> None:
        if many:
            dispatcher.dispatch_many(CALLS[:1], transcript=[])
        else:
            dispatcher.run(CALLS[0])

    total = interrupted(job, DISPATCH, None)
    stuck = []
    for k in range(1, total + 1):
        interrupted(job, DISPATCH, k)
        if dispatcher._running:
            stuck.append(k)
    assert stuck == []
    dispatcher.close(timeout=5)


def test_close_waits_at_most_its_bound_then_closes_anyway(caplog: pytest.LogCaptureFixture) -> None:
    released = threading.Event()

    def hold(conn: Any, server: RawServer) -> None:
        released.wait(10)

    with RawServer(hold) as server:
        dispatcher = Dispatcher(url=server.url, retry=RetryPolicy(max_attempts=1), timeout=Timeout(call=30))
        answers: list[Any] = []
        caller = threading.Thread(target=lambda: answers.append(dispatcher.dispatch(CALLS[0])))
        caller.start()
        for _ in range(500):  # until the request is on the wire
            if server.requests:
                break
            time.sleep(0.01)
        closer = threading.Thread(target=dispatcher.close, kwargs={"timeout": 0.2})
        with caplog.at_level(logging.WARNING, logger="xerj_tools"):
            closer.start()
            closer.join(10)
            assert not closer.is_alive(), "close() waited past its bound"
        released.set()
        caller.join(10)
    assert any("still running after 0.2 s" in r.getMessage() for r in caplog.records)
    assert len(answers) == 1  # the call held across close() still got an answer
