"""The report of slow tests CI asks for (XERJ_TEST_TIME_LIMIT, tests/time_limit.py), run on a small
suite of its own in this process (pytester)."""

from __future__ import annotations

import pytest

import time_limit

pytest_plugins = ["pytester"]

SUITE = """
import time
import pytest

def test_slow_unmarked():
    time.sleep(0.05)

@pytest.mark.slow
def test_slow_marked():
    time.sleep(0.05)

def test_failing():
    time.sleep(0.05)
    assert False
"""


def run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, quick: bool = True
) -> pytest.RunResult:
    """The suite, with a quick test too unless `quick` is false (a limit of a few milliseconds can
    catch even that one on a busy machine)."""
    pytester.makeini("[pytest]\nmarkers =\n    slow: several seconds\n")
    pytester.makepyfile(test_suite=SUITE + ("\ndef test_quick():\n    pass\n" if quick else ""))
    # Only pytest's own plugins and this one: loading every installed plugin costs a second.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_inprocess(
        "-p",
        "time_limit",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    )


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time_limit.os, "getloadavg", lambda: (0.0, 0.0, 0.0))


def test_a_test_over_the_limit_is_reported_and_fails_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    monkeypatch.setenv(time_limit.ENV, "0.005")  # the sleeps take 0.05 s at least
    result = run(pytester, monkeypatch, quick=False)
    # Only the test that fails on its own fails; the run's outcome is the code's.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tests over 0.005 s (XERJ_TEST_TIME_LIMIT: reported, not failed)*",
            "*s  test_suite.py::test_slow_unmarked",
            "*test(s) over 0.005 s; 1-minute load average 0.0 per core: make them cheaper*",
        ]
    )
    listed = result.stdout.str().split("reported, not failed", 1)[1]
    assert "test_slow_marked" not in listed  # marked slow: never listed
    assert "test_failing" in listed  # a failing test's time counts as any other's


def test_the_report_lists_the_slowest_first() -> None:
    spent = {"a": 1.0, "b": 12.5, "c": 30.0, "d": 10.0}
    assert time_limit.over_the_limit(spent, 10.0) == [("c", 30.0), ("b", 12.5)]


def test_without_the_variable_nothing_is_reported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(time_limit.ENV, raising=False)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=3, failed=1)
    assert time_limit.ENV not in result.stdout.str()


def test_a_generous_limit_says_no_test_was_over_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    monkeypatch.setenv(time_limit.ENV, "60")
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*XERJ_TEST_TIME_LIMIT=60: no test took longer than 60 s*"])


@pytest.mark.parametrize("value", ["ten", "0", "-3"])
def test_a_limit_that_is_not_a_positive_number_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(time_limit.ENV, value)
    result = run(pytester, monkeypatch)
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        [f"*XERJ_TEST_TIME_LIMIT='{value}': expected a number of seconds above 0*"]
    )


@pytest.mark.parametrize(("load", "cores", "per_core"), [(0.5, 2, 0.25), (4.0, 2, 2.0)])
def test_the_load_is_given_per_core(
    monkeypatch: pytest.MonkeyPatch, load: float, cores: int, per_core: float
) -> None:
    monkeypatch.setattr(time_limit.os, "getloadavg", lambda: (load, 0.0, 0.0))
    monkeypatch.setattr(time_limit.os, "cpu_count", lambda: cores)
    assert time_limit.load_per_core() == per_core


def test_no_property_test_is_timed() -> None:
    """Hypothesis' deadline and too-slow check are off for the whole suite (conftest's profile),
    also under a test's own `@settings`: a loaded machine slows an example, never fails it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=3)
    @given(st.integers())
    def own(n: int) -> None: ...

    chosen = own._hypothesis_internal_use_settings  # type: ignore[attr-defined]
    assert settings.default.deadline is None and chosen.deadline is None
    assert HealthCheck.too_slow in chosen.suppress_health_check
