"""The routes of XERJ's ES-compat router the stand-in serves (router.rs), and their methods."""

from __future__ import annotations

__all__ = ["route_of"]


def route_of(segments: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """The route a path matches and the methods it takes (router.rs), or None for no route."""
    n = len(segments)
    if segments == [""]:
        return "info", ("GET",)  # router.rs:210
    if segments == ["_cat", "indices"]:
        return "cat", ("GET",)  # router.rs:216
    if n == 3 and segments[:2] == ["_cat", "indices"]:
        return "cat_pattern", ("GET",)  # router.rs:217-220
    if segments == ["_mapping"] or (n == 2 and segments[1] == "_mapping" and segments[0] != ""):
        return "mapping", ("GET",)  # router.rs:248, 250-253; the stand-in serves the GET only
    if n == 3 and segments[:2] == ["_resolve", "index"]:
        return "resolve", ("GET",)  # router.rs:353
    if n == 2 and segments[0] == "_memory":
        return "memory", ("POST", "GET", "DELETE")  # router.rs:689-694
    if n == 3 and segments[0] == "_memory" and segments[2] == "_recall":
        return "recall", ("POST",)  # router.rs:695
    if n == 3 and segments[0] == "_memory":
        return "forget", ("DELETE",)  # router.rs:696
    if n == 3 and segments[1] == "_doc" and segments[0] != "":
        return "doc", ("GET",)  # router.rs:286-292; the stand-in serves the GET only
    if n <= 2 and segments[-1] == "_search" and segments[0] != "":
        return "search", ("GET", "POST")  # router.rs:301-308
    return None
