"""The per-test time limit CI sets (XERJ_TEST_TIME_LIMIT, tests/time_limit.py), run on a small
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


def test_a_test_over_the_limit_fails_unless_marked_slow(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    monkeypatch.setenv(time_limit.ENV, "0.005")  # the sleeps take 0.05 s at least
    result = run(pytester, monkeypatch, quick=False)
    # test_slow_unmarked passes its call and fails at its teardown (an error).
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_suite.py::test_slow_unmarked took * s (setup, call and teardown), over the limit"
            " of 0.0 s (XERJ_TEST_TIME_LIMIT=0.005): make it cheaper or mark it @pytest.mark.slow*"
        ]
    )
    # The failing test is reported for its failure alone; the marked one passes.
    assert "test_failing took" not in result.stdout.str()


def test_without_the_variable_nothing_is_checked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(time_limit.ENV, raising=False)
    run(pytester, monkeypatch).assert_outcomes(passed=3, failed=1)


def test_a_generous_limit_passes_everything(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    monkeypatch.setenv(time_limit.ENV, "60")
    run(pytester, monkeypatch).assert_outcomes(passed=3, failed=1)


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


@pytest.mark.parametrize(
    ("load", "stretch"), [(0.5, 1.0), (2.0, 1.0), (4.0, 2.0), (6.0, 3.0), (40.0, 3.0)]
)
def test_the_limit_stretches_with_the_load_per_core_up_to_three_times(
    monkeypatch: pytest.MonkeyPatch, load: float, stretch: float
) -> None:
    monkeypatch.setattr(time_limit.os, "getloadavg", lambda: (load, 0.0, 0.0))
    monkeypatch.setattr(time_limit.os, "cpu_count", lambda: 2)
    assert time_limit.load_stretch() == stretch
