"""How to add an extra: the install command an error hint shows, for this installation.

xerj-tools is not on a package index yet, so ``pip install 'xerj-tools[mcp]'`` fails for
everyone who got it another way. The hint names the command that works for the installation at
hand, read from the record pip keeps of where it came from (``direct_url.json``, PEP 610):

- installed from a directory (a clone; ``-e`` when editable): ``pip install -e '/path/to/clone[mcp]'``;
- installed from a wheel or sdist file: ``pip install '/path/to/xerj_tools-0.1.0-py3-none-any.whl[mcp]'``;
- installed from another URL (a git or https address): ``pip install 'xerj-tools[mcp] @ URL'``;
- installed from a package index (no such record): ``pip install 'xerj-tools[mcp]'``;
- not installed at all (the source tree on ``sys.path``): the forms docs/usage.md#install gives,
  from a clone and from a built wheel.
"""

from __future__ import annotations

from typing import Any, Literal

from ._version import __version__

__all__ = ["install_hint", "missing_extra"]

DISTRIBUTION = "xerj-tools"
WHEEL = f"xerj_tools-{__version__}-py3-none-any.whl"

# Where this installation came from: its ``direct_url.json``, or one of the two cases without one.
InstallOrigin = dict[str, Any] | Literal["index", "not installed"]


def install_hint(extra: str) -> str:
    """The command that adds `extra` to this installation of xerj-tools, as one line."""
    return install_command(extra, _origin())


def missing_extra(module: str, needed: str, extra: str) -> ImportError:
    """The error of a module imported without the extra it needs, with the command that adds it."""
    return ImportError(f"{module} needs {needed}, the `{extra}` extra: {install_hint(extra)}")


def install_command(extra: str, origin: InstallOrigin) -> str:
    """The command that adds `extra` to an installation that came from `origin`."""
    import shlex
    from urllib.parse import unquote, urlsplit

    if origin == "not installed":
        return (
            f"pip install -e '.[{extra}]' in a clone of xerj-tools, or "
            f"pip install 'dist/{WHEEL}[{extra}]' for a wheel built there (docs/usage.md#install)"
        )
    if isinstance(origin, str) or not isinstance(origin.get("url"), str):
        return f"pip install 'xerj-tools[{extra}]'"
    url: str = origin["url"]
    parts = urlsplit(url)
    if parts.scheme == "file" and "vcs_info" not in origin:
        from urllib.request import url2pathname

        path = url2pathname(unquote(parts.path))
        dir_info = origin.get("dir_info")
        editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
        return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{path}[{extra}]')}"
    vcs_info = origin.get("vcs_info")
    if isinstance(vcs_info, dict) and isinstance(vcs_info.get("vcs"), str):
        url = f"{vcs_info['vcs']}+{url}"
    return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}] @ {url}')}"


def _origin() -> InstallOrigin:
    """Where this installation came from: its ``direct_url.json``, else an index, if installed.

    Every distribution of the name is looked at: a clone's own ``xerj_tools.egg-info`` (which an
    editable install leaves in the source tree) comes first on ``sys.path`` when Python runs
    from the clone, and records no origin; an installer (pip, uv) writes ``INSTALLER``."""
    import json
    from importlib import metadata

    installed = False
    for distribution in metadata.distributions(name=DISTRIBUTION):
        text = distribution.read_text("direct_url.json")
        try:
            origin = json.loads(text) if text else None
        except ValueError:
            origin = None
        if isinstance(origin, dict):
            return origin
        installed = installed or distribution.read_text("INSTALLER") is not None
    return "index" if installed else "not installed"
