"""Retry rules for XERJ requests: what is retried, how long to wait, and the tenacity wiring."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._models import Failure, HttpRequest, Outcome, Reply
from ._rerank import rerank_refusal
from ._tracing import backoff

if TYPE_CHECKING:  # tenacity is imported when a dispatcher first retries, not by offline validation
    from tenacity import RetryCallState

    from ._deadline import Deadline

__all__ = ["RetryPolicy", "retry_after_seconds", "retry_settings", "should_retry"]


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried.

    Connection failures, timeouts and HTTP 429/502/503/504 are retried with jittered exponential
    backoff (``random(0, backoff * 2**n)``, capped at `max_backoff`), or after the server's
    ``Retry-After`` when it sends one. A call stops after `max_attempts` attempts, and before a
    wait that would take it past `max_time` seconds. A ``Retry-After`` above `max_retry_after`
    is not waited for: the model is told to come back later instead.
    Other 4xx and every refusal of the reranker are never retried.
    """

    max_attempts: int = 4
    max_time: float = 30.0
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 502, 503, 504}))

    def __post_init__(self) -> None:
        from .._exceptions import ConfigurationError

        if self.max_attempts < 1:
            raise ConfigurationError("RetryPolicy.max_attempts must be at least 1")
        if self.max_time < 0 or self.backoff < 0 or self.max_backoff < 0:
            raise ConfigurationError("RetryPolicy times must not be negative")

    @classmethod
    def never(cls) -> RetryPolicy:
        """One attempt, no retries."""
        return cls(max_attempts=1)


def retry_after_seconds(reply: Reply, now: Callable[[], float] = time.time) -> float | None:
    """The server's ``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    value = reply.header("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # an HTTP date is rare; the module costs ~10 ms to import

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def should_retry(request: HttpRequest, outcome: Outcome, policy: RetryPolicy) -> bool:
    """Whether `outcome` of `request` is worth another attempt under `policy`."""
    if request.kind == "listing":
        # The index listing a call's names are resolved against before it is sent: a node that
        # was not reached is tried again (another one, when there are several); nothing else is.
        return isinstance(outcome, Failure) and outcome.kind == "unreachable"
    if isinstance(outcome, Failure):
        if outcome.kind in ("too_large", "protocol", "cancelled", "deadline", "tls"):
            return False
        # A request that may have reached the server is repeated only when that is harmless.
        return request.idempotent or not outcome.sent
    if outcome.status not in policy.statuses or rerank_refusal(request, outcome) is not None:
        return False
    if outcome.error_type == "cluster_block_exception":
        return False  # XERJ's 429 for a full disk's index block (api error.rs:113-122) stays
    delay = retry_after_seconds(outcome)
    return delay is None or delay <= policy.max_retry_after


class _Wait:
    """Jittered exponential backoff, replaced by the server's Retry-After when it sends one."""

    def __init__(self, policy: RetryPolicy) -> None:
        import tenacity

        self._fallback = tenacity.wait_random_exponential(
            multiplier=policy.backoff, max=policy.max_backoff
        )

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        if outcome is not None and not outcome.failed:
            result = outcome.result()
            if isinstance(result, Reply) and (delay := retry_after_seconds(result)) is not None:
                return delay
        return float(self._fallback(retry_state))


def retry_settings(request: HttpRequest, policy: RetryPolicy, deadline: Deadline) -> dict[str, Any]:
    """tenacity's `Retrying` (or `AsyncRetrying`) arguments for `request` under `policy`, all but
    ``sleep``: the dispatcher's own."""
    import tenacity

    class past_deadline(tenacity.stop.stop_base):
        """No wait that would end at or past the call's deadline (its attempt would too)."""

        def __call__(self, retry_state: RetryCallState) -> bool:
            return retry_state.upcoming_sleep >= deadline.remaining()

    return {
        "stop": tenacity.stop_after_attempt(policy.max_attempts)
        | tenacity.stop_before_delay(policy.max_time)
        | past_deadline(),
        "wait": _Wait(policy),
        "retry": tenacity.retry_if_result(lambda outcome: should_retry(request, outcome, policy)),
        # When attempts run out, the last outcome is the answer; it becomes the tool message.
        "retry_error_callback": lambda state: state.outcome.result() if state.outcome else None,
        "before_sleep": backoff,  # a WARNING and a span event per wait
        "reraise": True,
    }
