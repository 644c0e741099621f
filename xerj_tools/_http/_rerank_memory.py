"""What a cluster refused about rerank, per provider, and for how long it is remembered."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ._models import HttpRequest

__all__ = ["EVERY_PROVIDER", "RerankMemory", "rerank_provider"]


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
