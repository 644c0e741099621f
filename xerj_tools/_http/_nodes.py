"""Several nodes of one cluster: which one the next attempt goes to, and which rest."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from .._exceptions import ConfigurationError
from ._models import Outcome, Reply
from ._tracing import node_rested

__all__ = ["NodePool", "check_url", "checked_urls", "header_safe"]


def check_url(url: str) -> str:
    """A XERJ base URL, checked (http or https, a host, no credentials) and without its ``/``."""
    shape = "a XERJ URL must look like http://host:9200 or https://host:9200"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # (raises on a port past 65535 or not a number)
    except ValueError as exc:  # an unclosed `[`, a port out of range
        raise ConfigurationError(f"{shape} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(shape)
    if parts.username or parts.password:
        # XERJ accepts only ApiKey or Bearer (auth.rs:185-194), and a URL travels into logs.
        raise ConfigurationError(
            "put credentials in api_key= (on the command line: $XERJ_API_KEY, or a whole "
            "Authorization value in $XERJ_AUTH for `mcp`), not in the XERJ URL"
        )
    return url.rstrip("/")


def checked_urls(url: str | Sequence[str]) -> tuple[str, ...]:
    """`url` (one URL, several separated by commas, or a list) as checked base URLs."""
    urls = [u.strip() for u in url.split(",")] if isinstance(url, str) else list(url)
    if not urls or not all(urls):
        raise ConfigurationError("give at least one XERJ URL")
    return tuple(check_url(u) for u in urls)


def header_safe(value: str) -> bool:
    """Visible ASCII, spaces and tabs only: anything else fails on every request (with the value
    in the error text) or, with a line break, would add a header of its own."""
    return all(" " <= c <= "~" or c == "\t" for c in value)


class NodePool:
    """Round-robin over a cluster's nodes, skipping a node that refused connections, timed out
    or ran a call past its deadline until its cooldown ends (5 s, doubling with each failure in
    a row, at most 60 s)."""

    def __init__(self, nodes: Sequence[str], clock: Callable[[], float]) -> None:
        self._nodes = list(nodes)
        self._clock = clock
        self._next = 0
        self._dead_until: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def pick(self) -> str:
        if len(self._nodes) == 1:
            return self._nodes[0]  # one node: nothing to choose, and nothing to skip to
        with self._lock:
            now = self._clock()
            for offset in range(len(self._nodes)):
                node = self._nodes[(self._next + offset) % len(self._nodes)]
                if self._dead_until.get(node, 0.0) <= now:
                    self._next = (self._next + offset + 1) % len(self._nodes)
                    return node
            # every node is resting: try the one whose rest ends first
            return min(self._nodes, key=lambda n: self._dead_until.get(n, 0.0))

    def report(self, node: str, outcome: Outcome) -> None:
        if len(self._nodes) == 1:
            return
        with self._lock:
            if isinstance(outcome, Reply):
                self._failures.pop(node, None)
                self._dead_until.pop(node, None)
                return
            if outcome.kind not in ("unreachable", "timeout", "deadline"):
                return
            failures = self._failures.get(node, 0) + 1
            self._failures[node] = failures
            rest = min(60.0, 5.0 * 2 ** (failures - 1))  # the cooldown, as the class says
            self._dead_until[node] = self._clock() + rest
        node_rested(node, rest, failures, outcome)  # logged outside the lock
