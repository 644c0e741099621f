"""XERJ's refusals to rerank: recognised in a reply, and remembered per cluster and provider.

A refused rerank is never retried as such: the dispatcher repeats the search once without
``rerank`` (`_dispatch._core`), and a refusal that comes from the node's configuration is
remembered for a while so that the next searches go without it at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._models import HttpRequest, Reply

__all__ = ["EVERY_PROVIDER", "RerankMemory", "RerankRefusal", "rerank_provider", "rerank_refusal"]


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


def rerank_provider(request: HttpRequest) -> str:
    """The provider a search's `rerank` block asks for: ``jev`` when it names none, and for its
    alias ``typesafe`` (XERJ's rerank stage, rerank_stage.rs `prepare` @ 11b0cd0)."""
    block = (request.body or {}).get("rerank")
    provider = block.get("provider") if isinstance(block, dict) else None
    if not isinstance(provider, str) or provider in ("", "typesafe"):
        return "jev"
    return provider


EVERY_PROVIDER = "*"  # a node that has no rerank stage at all refuses every provider


class RerankMemory:
    """Per cluster (its node list) and provider: when rerank was last refused, and why;
    forgotten after `ttl` seconds. The nodes of one cluster are taken to share their rerank
    configuration. A refusal is the provider's own (no local judge in this build, 501, says
    nothing about jev's key; rerank_stage.rs `status_for` @ 11b0cd0), except an older node's
    refusal of the `rerank` key itself, which holds for every provider."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._ttl, self._clock = ttl, clock
        self._refusals: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = threading.Lock()

    def remember(self, node: str, reason: str, provider: str = EVERY_PROVIDER) -> None:
        if self._ttl > 0:
            with self._lock:
                self._refusals[node, provider] = (self._clock(), reason)

    def recall(self, node: str, provider: str = EVERY_PROVIDER) -> str | None:
        with self._lock:
            for key in ((node, provider), (node, EVERY_PROVIDER)):
                entry = self._refusals.get(key)
                if entry is None:
                    continue
                age = self._clock() - entry[0]
                if age >= self._ttl:
                    del self._refusals[key]
                    continue
                return (
                    f"this node refused rerank ({provider}) {age:.0f}s ago, so it was not "
                    f"asked again: {entry[1]}"
                )
        return None
