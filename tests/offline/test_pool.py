"""The offline validator's process pool: results in input order, and an end that never waits for
ever, however the caller stops (a reader gone, Ctrl-C, input that stops being text)."""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xerj_tools._offline._pool import in_order

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the tasks below are forked"
)
FORK = (
    multiprocessing.get_context("fork")
    if "fork" in multiprocessing.get_all_start_methods()
    else None
)


def _nothing() -> None:
    pass


def _square(n: int) -> int:
    return n * n


def _held_until_go(n: int, folder: str) -> int:
    """Task 0 answers at once; the others wait for the caller's "go", then leave a mark."""
    if n:
        deadline = time.monotonic() + 60
        while not (Path(folder) / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        (Path(folder) / f"done-{n}").touch()
    return n


def _sigint_ignored() -> bool:
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_results_come_in_input_order() -> None:
    taken: list[tuple[Any, ...]] = []
    in_order(FORK, 2, _square, ((n,) for n in range(25)), lambda args, r: taken.append((*args, r)),
             initializer=_nothing)  # fmt: skip
    assert taken == [(n, n * n) for n in range(25)]


def test_a_caller_that_stops_lets_the_tasks_in_flight_finish_before_the_pool_ends(
    tmp_path: Path,
) -> None:
    # The first result's taker raises (as writing to a reader gone raises BrokenPipeError); the
    # three tasks in flight then finish before `in_order` returns: the pool never ends while a
    # worker holds a task (ending it then can wait for ever on a lock that worker holds).
    def take(args: tuple[Any, ...], result: int) -> None:
        (tmp_path / "go").touch()
        raise BrokenPipeError

    with pytest.raises(BrokenPipeError):
        in_order(FORK, 2, _held_until_go, ((n, str(tmp_path)) for n in range(100)), take,
                 initializer=_nothing)  # fmt: skip
    assert sorted(p.name for p in tmp_path.glob("done-*")) == ["done-1", "done-2", "done-3"]


def test_input_that_stops_being_text_is_raised_after_what_was_read_before() -> None:
    def arguments() -> Iterator[tuple[int]]:
        yield from ((n,) for n in range(3))
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    taken: list[int] = []
    with pytest.raises(UnicodeDecodeError):
        in_order(
            FORK, 2, _square, arguments(), lambda args, r: taken.append(r), initializer=_nothing
        )
    assert taken == [0, 1, 4]


def test_workers_leave_ctrl_c_to_the_parent() -> None:
    taken: list[bool] = []
    in_order(
        FORK, 2, _sigint_ignored, [(), ()], lambda args, r: taken.append(r), initializer=_nothing
    )
    assert taken == [True, True]
