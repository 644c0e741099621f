"""A limit on each test's time, which keeps the suite fast (docs/testing.md#keeping-the-suite-fast).

With ``XERJ_TEST_TIME_LIMIT=10`` in the environment (CI sets it for the README's test command),
a test not marked ``slow`` whose setup, call and teardown together take longer than 10 s of wall
time fails at its teardown, with the time it took. Unset, nothing is checked: a developer's
machine may be as busy as it likes.

Wall time is what the suite's time is made of, so that is what counts (a test that waits out a
timeout spends no CPU and still holds a worker). A machine busier than it has cores stretches
every test's wall time, so the limit stretches with the 1-minute load average per core, up to
three times: on a quiet 2-core machine a test gets 10 s, with a load of 4 it gets 20 s, never more
than 30 s. The slowest test of the suite takes about 3 s with coverage on a quiet 2-core machine.
"""

from __future__ import annotations

import os

import pytest

ENV = "XERJ_TEST_TIME_LIMIT"
MAX_STRETCH = 3.0
_LIMIT = pytest.StashKey["float | None"]()
_SPENT = pytest.StashKey[float]()
_FAILED = pytest.StashKey[bool]()


def configured_limit() -> float | None:
    """The limit in seconds from the environment, or None (no limit)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise pytest.UsageError(f"{ENV}={text!r}: expected a number of seconds above 0")
    return seconds


def load_stretch() -> float:
    """How much busier than its cores the machine is (1-minute load average per core), from 1
    (idle, or as busy as it has cores) to `MAX_STRETCH`."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return 1.0
    cores = os.cpu_count() or 1
    return min(MAX_STRETCH, max(1.0, load / cores))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Read once, at the start (a test that sets the variable changes nothing of its own run)."""
    session.config.stash[_LIMIT] = configured_limit()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    seconds = item.config.stash.get(_LIMIT, None)
    if seconds is None or item.get_closest_marker("slow") is not None:
        return None
    spent = item.stash.get(_SPENT, 0.0) + report.duration
    item.stash[_SPENT] = spent
    if not report.passed:
        item.stash[_FAILED] = True  # failed or skipped already: nothing to add
    if report.when != "teardown" or item.stash.get(_FAILED, False):
        return None
    stretch = load_stretch()
    allowed = seconds * stretch
    if spent > allowed:
        loaded = f", stretched ×{stretch:.1f} by the load average" if stretch > 1 else ""
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {spent:.1f} s (setup, call and teardown), over the limit of "
            f"{allowed:.1f} s ({ENV}={seconds:g}{loaded}): make it cheaper or mark it "
            "@pytest.mark.slow (docs/testing.md#keeping-the-suite-fast)"
        )
    return None
