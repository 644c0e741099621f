"""The package's metadata: a license a company can adopt, one version, the extras the docs name."""

from __future__ import annotations

import re
import sys
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
