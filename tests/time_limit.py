"""A report of the tests that take too long, which keeps the suite fast without making a landing
depend on the machine's speed (docs/testing.md#keeping-the-suite-fast).

With ``XERJ_TEST_TIME_LIMIT=10`` in the environment (CI sets it for the README's test command),
every test not marked ``slow`` whose setup, call and teardown together take longer than 10 s of
wall time is listed at the end of the run, slowest first, with its time and the machine's
1-minute load average per core. Nothing fails for it: wall time depends on what else the machine
is doing, and a run must pass or fail on what the code does. Unset, nothing is reported.

The durations come from the test reports, so the list is made in the process that prints the
summary (pytest-xdist's controller gets every worker's reports).
"""

from __future__ import annotations

import os

import pytest

ENV = "XERJ_TEST_TIME_LIMIT"


def configured_limit() -> float | None:
    """The limit in seconds from the environment, or None (no report)."""
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


def load_per_core() -> float | None:
    """The 1-minute load average per core, or None where the platform has none."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    return load / (os.cpu_count() or 1)


class SlowTestReport:
    """The plugin: adds up each test's phases and lists those over the limit at the end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # In the process that prints the summary: pytest-xdist's controller gets every worker's
        # reports, with the keywords (markers included) of the test they are about.
        if "slow" not in report.keywords:
            self.spent[report.nodeid] = self.spent.get(report.nodeid, 0.0) + report.duration

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        over = over_the_limit(self.spent, self.seconds)
        load = load_per_core()
        loaded = "" if load is None else f"; 1-minute load average {load:.1f} per core"
        if not over:
            terminalreporter.write_line(
                f"{ENV}={self.seconds:g}: no test took longer than {self.seconds:g} s{loaded}"
            )
            return
        terminalreporter.section(f"tests over {self.seconds:g} s ({ENV}: reported, not failed)")
        for nodeid, took in over:
            terminalreporter.write_line(f"{took:6.1f} s  {nodeid}")
        terminalreporter.write_line(
            f"{len(over)} test(s) over {self.seconds:g} s{loaded}: make them cheaper or mark "
            "them @pytest.mark.slow (docs/testing.md#keeping-the-suite-fast)"
        )


def over_the_limit(spent: dict[str, float], seconds: float) -> list[tuple[str, float]]:
    """The tests that took longer than `seconds`, slowest first."""
    return sorted(
        ((nodeid, took) for nodeid, took in spent.items() if took > seconds),
        key=lambda item: (-item[1], item[0]),
    )


def pytest_configure(config: pytest.Config) -> None:
    """Registers the report when the variable is set; read once, at the start (a test that sets
    the variable changes nothing of its own run)."""
    seconds = configured_limit()
    if seconds is not None:
        config.pluginmanager.register(SlowTestReport(seconds), "xerj-slow-test-report")
