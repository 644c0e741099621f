"""`Dispatcher`'s count of running calls against interrupts, and the bound on `close()`
(issue 25, N6): a KeyboardInterrupt landing on any line of the dispatcher leaves no call
counted, and `close()` never waits longer than its bound."""

from __future__ import annotations

import logging
import sys
import threading
import time
from types import FrameType
from typing import Any

import pytest

from xerj_tools import Dispatcher, RetryPolicy
from xerj_tools.testing import XerjStandIn

from conftest import chat_call
from rawserver import RawServer

CALLS = [chat_call("xerj_search", {"index": "docs", "query": {"match": {"body": f"w{i}"}}}, f"c{i}")
         for i in range(2)]  # fmt: skip


def _lines_of_dispatch(job: Any, stop_at: int | None) -> int:
    """Run `job` with a line counter on xerj_tools/_dispatch.py; raise KeyboardInterrupt at
    line event `stop_at` (as a signal would land there). Returns the events counted."""
    seen = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal seen
        if not frame.f_code.co_filename.endswith("xerj_tools/_dispatch.py"):
            return None
        if event == "line":
            seen += 1
            if seen == stop_at:
                raise KeyboardInterrupt
        return trace

    sys.settrace(trace)
    try:
        job()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize("many", [False, True], ids=["run", "dispatch_many"])
def test_an_interrupt_on_any_line_leaves_no_call_counted(xerj: XerjStandIn, many: bool) -> None:
    dispatcher = Dispatcher(url=xerj.url, max_workers=1)

    def job() -> None:
        if many:
            dispatcher.dispatch_many(CALLS[:1], transcript=[])
        else:
            dispatcher.run(CALLS[0])

    total = _lines_of_dispatch(job, None)
    stuck = []
    for k in range(1, total + 1):
        _lines_of_dispatch(job, k)
        if dispatcher._running:
            stuck.append(k)
    assert stuck == []
    dispatcher.close(timeout=5)


def test_close_waits_at_most_its_bound_then_closes_anyway(caplog: pytest.LogCaptureFixture) -> None:
    released = threading.Event()

    def hold(conn: Any, server: RawServer) -> None:
        released.wait(10)

    with RawServer(hold) as server:
        dispatcher = Dispatcher(url=server.url, retry=RetryPolicy(max_attempts=1), deadline=30)
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
