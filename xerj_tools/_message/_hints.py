"""Hints that depend on the error: what the model can do about an index block. (What it can
ask for instead of a too-large answer, each tool says: `Tool.too_large`.)"""

from __future__ import annotations

import re

__all__ = ["block_hint"]


_BLOCKED = re.compile(r"index \[(?P<index>[^\]]*)\] is blocked for (?P<op>\S+) operations")


def block_hint(reason: str) -> str:
    # XERJ's reason: "index [<name>] is blocked for <read|write|...> operations"
    # (common error.rs:115-117).
    found = _BLOCKED.search(reason)
    what = (
        f"index {found['index']!r} is blocked for {found['op'].replace('_', ' ')} operations"
        if found
        else "index is blocked"
    )
    return (
        f"The {what} on the node (an index block set by its operator, or a full disk); "
        "credentials are not the problem and calling again will not help soon. "
        "Use another index or namespace, or tell the user."
    )
