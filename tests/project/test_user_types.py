"""The README's tour type-checks in a user's project: `mypy --strict` against the openai SDK's
types, with xerj-tools seen as an install shows it (py.typed).

.ci/run checks the same files (tests/readme_tour.py) with mypy and pyright in a clean venv where
the built wheel is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from readme_tour import write_tour

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_readme_tour_passes_mypy_strict_in_a_project_of_its_own(tmp_path: Path) -> None:
    """A separate project: its own folder, no configuration; xerj-tools found where an install
    with `editable_mode=compat` (docs/usage.md#install) puts it, the clone's root on the path."""
    tour = write_tour(tmp_path)
    assert len(tour) == 2
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        # --follow-imports=silent: mypy reports on the user's files, not on the library's, as it
        # does for an installed package
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", os.devnull, *(p.name for p in tour)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 2 source files" in done.stdout

