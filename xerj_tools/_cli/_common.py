"""What the command line's modules share: the usage error and reading an argument or a tools
file (a leaf of the CLI: `_cli._main`, `_cli._validate` and `_cli._mcp` import it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

__all__ = ["UsageError", "_read_argument", "_registry", "ascii_only"]


class UsageError(Exception):
    """A usage mistake or an unreadable input: exit status 2."""


def _read_argument(value: str, stdin: TextIO) -> str:
    if value == "-":
        return stdin.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_text("utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {value[1:]}: {exc.strerror}") from None
    return value


def _registry(path: str | None) -> Any:
    from .._exceptions import ToolDefinitionError
    from .._schema._registry import load_registry

    try:
        return load_registry(path)
    except (OSError, ToolDefinitionError) as exc:
        raise UsageError(f"cannot load the tools file: {exc}") from None


def ascii_only(out: TextIO) -> bool:
    """Whether `out` cannot encode every character (an ASCII locale, PYTHONIOENCODING=ascii):
    JSON written to it then escapes each non-ASCII character (``\\u00e9``), as JSON allows."""
    import codecs

    encoding = getattr(out, "encoding", None)
    try:
        return encoding is not None and not codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return True
