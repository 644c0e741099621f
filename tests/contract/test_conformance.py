"""XERJ's es-compat YAML suite against the stand-in, one test per in-scope case.

Skipped unless ``XERJ_COMPAT_YAML_DIR`` names the suite in a XERJ checkout (CI has none);
``tests/conformance.py`` holds the runner, the feature filter and how to print the summary, and
docs/testing.md the figures. An in-scope case passes, or is listed in
``tests/conformance_not_served.txt`` with its reason: a listed case is an expected failure, and
one that passes fails here so that the list stays true.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from conformance import (
    ENV,
    Case,
    Failed,
    Skipped,
    load_cases,
    not_served,
    out_of_scope,
    run_case,
    suite_dir,
)

from xerj_tools.testing import XerjStandIn

ROOT = suite_dir()
if ROOT is None:
    pytest.skip(f"{ENV} is not set: XERJ's YAML suite is not replayed", allow_module_level=True)
pytest.importorskip("yaml")

CASES = [case for case in load_cases(ROOT) if out_of_scope(case) is None]
LISTED = not_served()


@pytest.fixture(scope="module")
def node() -> Iterator[tuple[XerjStandIn, httpx2.Client]]:
    with XerjStandIn() as stand_in, httpx2.Client(base_url=stand_in.url, timeout=30) as client:
        yield stand_in, client


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case(case: Case, node: tuple[XerjStandIn, httpx2.Client]) -> None:
    listed = LISTED.get(case.id)
    failure = None
    try:
        run_case(case, *node)
    except Skipped as exc:
        pytest.skip(str(exc))
    except Failed as exc:
        failure = str(exc)
    # Outside the `except`: pytest would render the chained traceback of every expected failure.
    if failure is not None and listed is None:
        pytest.fail(f"{failure} (not listed in conformance_not_served.txt)", pytrace=False)
    if failure is not None:
        pytest.xfail(f"not served: {listed} ({failure})")
    assert listed is None, f"listed as not served ({listed}) but passes: take it off the list"
