"""How many calls `xerj-tools mcp` runs: per caller (at once, per minute) and server-wide.

A call past a limit is not queued: it is answered at once with the ``rate_limited`` envelope
and ``retry_after`` (seconds), so the model or client knows when to try again, and a burst
from one caller cannot hold the slots another caller needs. The counters live in this process:
behind N replicas a caller's per-minute allowance is N times the configured one unless the load
balancer pins callers to replicas (docs/mcp.md, "Replicas").
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._exceptions import ToolCallError
from ..._message._format import error_payload
from ._callers import Caller

__all__ = ["CallLimits", "rate_limited"]

_WINDOW = 60.0
_BUSY_RETRY = 1.0  # seconds: a slot frees when a running call ends, usually well within this


@dataclass
class _Usage:
    in_flight: int = 0
    starts: deque[float] = field(default_factory=deque)


def rate_limited(reason: str, retry_after: float) -> dict[str, Any]:
    """The envelope of a call refused by a limit of this server (not XERJ's)."""
    error = ToolCallError(
        reason,
        code="rate_limited",
        retryable=True,
        hint=f"This server limits calls; wait {retry_after:g} s, then call again.",
        details={"retry_after": retry_after},
    )
    return error_payload(error)


class CallLimits:
    """The counters: `enter` before a call (None, or the refusal envelope), `leave` after it."""

    def __init__(
        self, max_in_flight: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self._clock = clock
        self._usage: dict[str, _Usage] = {}

    def enter(self, caller: Caller) -> dict[str, Any] | None:
        usage = self._usage.setdefault(caller.name, _Usage())
        now = self._clock()
        while usage.starts and now - usage.starts[0] >= _WINDOW:
            usage.starts.popleft()
        if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
            return rate_limited(
                f"the server is running {self.in_flight} calls, its bound (--max-in-flight)",
                _BUSY_RETRY,
            )
        if caller.max_concurrent is not None and usage.in_flight >= caller.max_concurrent:
            return rate_limited(
                f"{usage.in_flight} calls of this caller are running, its limit "
                f"(max_concurrent = {caller.max_concurrent})",
                _BUSY_RETRY,
            )
        limit = caller.calls_per_minute
        if limit is not None and len(usage.starts) >= limit:
            wait = max(0.001, _WINDOW - (now - usage.starts[len(usage.starts) - limit]))
            return rate_limited(
                f"this caller made {len(usage.starts)} calls in the last minute, its limit "
                f"(calls_per_minute = {limit})",
                round(wait, 3),
            )
        usage.in_flight += 1
        if limit is not None:
            usage.starts.append(now)
        self.in_flight += 1
        return None

    def leave(self, caller: Caller) -> None:
        self._usage[caller.name].in_flight -= 1
        self.in_flight -= 1
