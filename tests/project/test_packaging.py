"""The package's metadata: a license a company can adopt, one version, the extras the docs name;
the sdist: the whole project, so that the suite runs from it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest

import xerj_tools

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_license_is_apache_2_and_ships_with_the_package() -> None:
    assert PROJECT["license"] == "Apache-2.0"  # an SPDX expression (PEP 639)
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "## License" in (ROOT / "README.md").read_text()


def test_one_version_everywhere() -> None:
    assert PROJECT["version"] == xerj_tools.__version__
    assert f"## [{PROJECT['version']}]" in (ROOT / "CHANGELOG.md").read_text()


def test_the_metadata_a_user_reads() -> None:
    assert PROJECT["readme"] == "README.md" and PROJECT["authors"] and PROJECT["keywords"]
    assert "Typing :: Typed" in PROJECT["classifiers"]
    minors = {c.rsplit(" ", 1)[-1] for c in PROJECT["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert minors == {"3.10", "3.11", "3.12", "3.13"}
    assert PROJECT["requires-python"] == ">=3.10"
    assert all(url.startswith("https://") for url in PROJECT["urls"].values())


def test_every_extra_the_install_table_names_exists() -> None:
    usage = (ROOT / "docs" / "usage.md").read_text()
    table = usage[usage.index("| extra | adds |"):usage.index("With a plain `pip install`")]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    named = {e for row in rows for e in re.findall(r"`([a-z-]+)`", row.split("|")[1])}
    assert named and named <= set(PROJECT["optional-dependencies"]), named - set(PROJECT["optional-dependencies"])
    assert set(PROJECT["optional-dependencies"]) - {"test-tools"} <= named


def _tracked_files() -> list[str] | None:
    """The project's files as git knows them, or None outside a git checkout."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True)
    return sorted(name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).is_file())


def test_the_sdist_holds_the_whole_project_and_nothing_else(tmp_path: Path) -> None:
    """Built from the tracked files alone, as CI builds it from a fresh clone: every one of them
    is in the sdist (the tests' fixtures and helpers, the docs, examples and benchmarks the tests
    read), and nothing else is but the metadata the build writes."""
    tracked = _tracked_files()
    if tracked is None:
        pytest.skip("not a git checkout (an unpacked sdist): no list of the project's files to compare with")
    if int(metadata.version("setuptools").split(".")[0]) < 77:
        pytest.skip("building needs setuptools 77 or newer (the test-tools extra)")
    source = tmp_path / "project"
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (sdist,) = (tmp_path / "dist").glob("xerj_tools-*.tar.gz")
    with tarfile.open(sdist) as tar:
        packed = {member.name.split("/", 1)[1] for member in tar.getmembers() if member.isfile()}
    project = set(tracked) - {".gitignore"}
    assert sorted(project - packed) == []
    written = {"PKG-INFO", "setup.cfg"} | {n for n in packed if n.startswith("xerj_tools.egg-info/")}
    assert sorted(packed - project - written) == []
    assert {"tests/conftest.py", "docs/usage.md", "examples/agent_loop.py", "benchmarks/validate.py"} <= packed
