"""The suite does not depend on the caller's environment: an exported XERJ_URL, OPENAI_API_KEY or
OPENAI_BASE_URL reaches no test (tests/conftest.py clears them; docs/testing.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SUITE_SETTINGS, _clear_callers_environment

ROOT = Path(__file__).resolve().parents[2]


def test_the_callers_settings_are_cleared_and_the_suites_own_kept() -> None:
    environ = {
        "XERJ_URL": "http://127.0.0.1:9", "XERJ_API_KEY": "k", "XERJ_AUTH": "ApiKey k",
        "OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_MODEL": "m",
        "GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "g",
        "XERJ_TEST_TIME_LIMIT": "10", "XERJ_CONTRACT_URL": "http://127.0.0.1:9200", "PATH": "/bin",
    }
    cleared = _clear_callers_environment(environ)
    assert environ == {"XERJ_TEST_TIME_LIMIT": "10", "XERJ_CONTRACT_URL": "http://127.0.0.1:9200", "PATH": "/bin"}
    assert "XERJ_URL" in cleared and "OPENAI_API_KEY" in cleared
    assert {"XERJ_CONTRACT_URL", "XERJ_CONTRACT_API_KEY", "XERJ_TEST_TIME_LIMIT"} <= SUITE_SETTINGS


def test_no_callers_setting_reaches_a_test() -> None:
    leaked = [k for k in os.environ if k.startswith(("XERJ_", "OPENAI_")) and k not in SUITE_SETTINGS]
    assert not leaked, leaked


@pytest.mark.slow
def test_an_exported_xerj_url_changes_nothing_in_the_contract_tests() -> None:
    """What the MCP quick start suggests (`export XERJ_URL=...`), then the suite: the live tests
    stay on the stand-in (a node is named by XERJ_CONTRACT_URL), nothing errors."""
    env = {**os.environ, "XERJ_URL": "http://127.0.0.1:9", "XERJ_API_KEY": "not-a-key",
           "OPENAI_API_KEY": "sk-not-a-key"}
    env.pop("XERJ_CONTRACT_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/contract/test_contract_listing.py", "-n", "0", "-q",
         "-p", "no:cacheprovider", "-rs"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "error" not in done.stdout.splitlines()[-1]
    assert "XERJ_CONTRACT_URL is not set" in done.stdout
