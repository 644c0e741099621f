"""Retry rules for XERJ requests: what is retried, how long to wait, and the tenacity wiring."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._models import Failure, HttpRequest, Outcome, Reply
from ._tracing import backoff

if TYPE_CHECKING:  # tenacity is imported when a dispatcher first retries, not by offline validation
    import tenacity
    from tenacity import RetryCallState

    from ._deadline import Deadline

__all__ = ["RerankRefusal", "RetryPolicy", "rerank_refusal", "retry_after_seconds", "should_retry"]


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


@dataclass(frozen=True)
class RerankRefusal:
    """Why XERJ would not rerank. `lasting` refusals come from the node's configuration and are
    remembered per cluster and provider (every provider when `provider_specific` is False: the
    node has no rerank stage at all); the others are faults of this one call."""

    reason: str
    lasting: bool
    provider_specific: bool = True


# The newer rerank stage (engine/crates/xerj-api/src/rerank_stage.rs @ 11b0cd0, `status_for`
# and `error_type_for`) answers every fault but a bad request (400 illegal_argument_exception)
# with type `rerank_exception`:
#   403  DisabledByOperator, LocalDisabledByOperator     the operator switched it off
#   501  LocalUnavailable                                no local judge compiled into this build
#   503  MissingKey, LocalModel                          no key, or the local model cannot load
#   502  Transport, Status, Malformed, Deadline          the provider failed this call
#   500  LocalInference                                  the local model failed on this call
# The first three are how the node is set up: repeating the call cannot help, and the cluster
# is not asked again for a while. 502 and 500 are faults of one call: this search falls back,
# later ones try rerank again.
_CONFIGURATION = frozenset({403, 501, 503})
_TRANSIENT = frozenset({500, 502})


def rerank_refusal(request: HttpRequest, reply: Reply) -> RerankRefusal | None:
    """Why XERJ refused to rerank `request`, or None. A refusal is never retried as such: the
    search is repeated once without `rerank` instead.

    Besides the statuses above, a node older than the rerank stage (1.0.0-rc.4) answers the
    unknown key with 400 ``Unknown key for a START_OBJECT in [rerank].``
    (es_compat.rs:2499-2513, 2797-2806 at e6e8e6a): a lasting refusal too.
    """
    if not request.reranked:
        return None
    status = reply.status
    if status in _CONFIGURATION | _TRANSIENT and reply.error_type == "rerank_exception":
        reason = reply.error_reason or f"rerank refused with HTTP {status}"
        return RerankRefusal(reason, lasting=status in _CONFIGURATION)
    if status == 400 and "[rerank]" in (reply.error_reason or ""):
        return RerankRefusal(
            "this XERJ node does not support rerank (an older version refused the key)",
            lasting=True,
            provider_specific=False,
        )
    return None


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


def _settings(request: HttpRequest, policy: RetryPolicy, deadline: Deadline) -> dict[str, Any]:
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


def retrying(
    request: HttpRequest,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    deadline: Deadline,
) -> tenacity.Retrying:
    import tenacity

    return tenacity.Retrying(sleep=sleep, **_settings(request, policy, deadline))


def async_retrying(
    request: HttpRequest,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]],
    deadline: Deadline,
) -> tenacity.AsyncRetrying:
    import tenacity

    return tenacity.AsyncRetrying(sleep=sleep, **_settings(request, policy, deadline))
