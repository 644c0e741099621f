"""The install hint: each error about a missing extra names the command that adds it here.

xerj-tools is not on a package index yet, so `pip install 'xerj-tools[mcp]'` fails for everyone
who installed it from a clone or a wheel; the hint reads where this installation came from.
"""

from __future__ import annotations

import importlib
import re
import shlex
import sys
import types
from pathlib import Path

import pytest

import xerj_tools
from xerj_tools._install import WHEEL, install_command, install_hint

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "xerj_tools"


@pytest.mark.parametrize(
    ("origin", "command"),
    [
        # a clone, editable (pip's direct_url.json: PEP 610)
        ({"url": "file:///home/ann/xerj-tools", "dir_info": {"editable": True}},
         "pip install -e '/home/ann/xerj-tools[mcp]'"),
        # a clone, copied into site-packages
        ({"url": "file:///home/ann/xerj-tools", "dir_info": {}}, "pip install '/home/ann/xerj-tools[mcp]'"),
        # a built wheel, from a directory with a space in its name (quoted once, as a shell wants)
        ({"url": f"file:///home/ann/my%20builds/{WHEEL}", "archive_info": {"hash": "sha256=00"}},
         f"pip install '/home/ann/my builds/{WHEEL}[mcp]'"),
        # a git repository
        ({"url": "https://git.example.org/xerj-tools.git", "vcs_info": {"vcs": "git", "commit_id": "ab12"}},
         "pip install 'xerj-tools[mcp] @ git+https://git.example.org/xerj-tools.git'"),
        # a wheel on a web server
        ({"url": f"https://files.example.org/{WHEEL}", "archive_info": {}},
         f"pip install 'xerj-tools[mcp] @ https://files.example.org/{WHEEL}'"),
        # a package index: no direct_url.json
        ("index", "pip install 'xerj-tools[mcp]'"),
        # a record without a URL is read as no record
        ({"dir_info": {}}, "pip install 'xerj-tools[mcp]'"),
    ],
    ids=["editable-clone", "clone", "wheel-file", "git", "wheel-url", "index", "no-url"],
)
def test_the_command_follows_where_the_installation_came_from(origin: object, command: str) -> None:
    assert install_command("mcp", origin) == command  # type: ignore[arg-type]


def test_not_installed_the_hint_gives_the_forms_the_install_table_documents() -> None:
    hint = install_command("otel", "not installed")
    assert "pip install -e '.[otel]'" in hint and f"'dist/{WHEEL}[otel]'" in hint
    usage = (ROOT / "docs" / "usage.md").read_text()
    assert f"dist/{WHEEL}[mcp]" in usage and "#install" in hint and "## Install" in usage


def test_this_installation_is_named_by_its_own_path() -> None:
    """The suite runs from an installation of this tree (editable or not): the hint names it,
    and running from inside the clone (its own xerj_tools.egg-info first on sys.path) changes
    nothing."""
    if Path(xerj_tools.__file__).resolve().parent != PACKAGE:
        pytest.skip("xerj_tools is imported from elsewhere than this tree")
    quoted = shlex.quote(f"{ROOT}[mcp]")
    assert install_hint("mcp") in {f"pip install -e {quoted}", f"pip install {quoted}"}


def test_no_hint_in_the_package_names_an_index_install_of_its_own() -> None:
    """Only the hint's module writes `xerj-tools[...]` as a requirement; every other module
    asks it."""
    written = re.compile(r"pip install '?xerj-tools\[|install xerj-tools\[")
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_install.py" and written.search(path.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("xerj_tools.integrations.mcp", ("mcp", "mcp.server.lowlevel"), "mcp"),
        ("xerj_tools.integrations.openai_agents", ("agents", "agents.tool_context"), "openai-agents"),
        ("xerj_tools.integrations.langgraph", ("langchain_core.messages",), "langchain"),
        ("xerj_tools.integrations.langchain", ("langchain.agents.middleware",), "langchain"),
        ("xerj_tools.integrations.pydantic_ai", ("pydantic_ai",), "pydantic-ai"),
        ("xerj_tools.integrations.adk", ("google.adk", "google.adk.tools"), "adk"),
    ],
)
def test_an_adapter_without_its_framework_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, module: str, blocked: tuple[str, ...], extra: str
) -> None:
    # as if `blocked` were not installed, the integrations' modules imported afresh (monkeypatch
    # brings the originals back after the test)
    for name in [m for m in sys.modules if m.startswith("xerj_tools.integrations.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError) as raised:
        importlib.import_module(module)
    assert f"the `{extra}` extra: {install_hint(extra)}" in str(raised.value)


def test_a_toml_policy_on_python_3_10_without_tomli_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("mcp.server", reason="the policy file is the MCP server's: it needs the SDK")
    from xerj_tools._exceptions import ConfigurationError
    from xerj_tools.integrations.mcp import _policy_file

    monkeypatch.setattr(_policy_file, "sys", types.SimpleNamespace(version_info=(3, 10, 13)))
    monkeypatch.setitem(sys.modules, "tomli", None)
    with pytest.raises(ConfigurationError) as raised:
        _policy_file._read_toml("")
    assert f"in the `mcp` extra: {install_hint('mcp')}; or give the policy as .json" in str(raised.value)
