"""Each caller of `xerj-tools mcp` with its own policy: who is calling, the dispatcher that
applies its policy, and the tools it is offered.

A dispatcher is made for each distinct policy the first time a caller with it calls, and
closed when the server stops; callers with the same policy share one (and its connections to
XERJ). Without a callers file there is one caller, ``local``, with the server's policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp import types

from .._dispatch._async import AsyncDispatcher
from .._dispatch._policy import Policy
from ..tools import Tool
from ._mcp_auth import CallerVerifier, caller_of
from ._mcp_callers import LOCAL, Caller

__all__ = ["Tenants"]

Lister = Callable[[Any, Policy | None, Mapping[str, Tool]], list[types.Tool]]


class Tenants:
    def __init__(
        self,
        default: AsyncDispatcher,
        lister: Lister,
        verifier: CallerVerifier | None = None,
        make: Callable[[Policy], AsyncDispatcher] | None = None,
    ) -> None:
        self.default, self.verifier = default, verifier
        self._lister, self._make = lister, make
        self._dispatchers: dict[Policy, AsyncDispatcher] = {}
        self._listings: dict[tuple[Policy | None, frozenset[str] | None], list[types.Tool]] = {}

    def caller(self, ctx: Any) -> Caller | None:
        """Who sent this request: `LOCAL` without authentication, else the caller its token
        names (None if the callers file no longer has it)."""
        if self.verifier is None:
            return LOCAL
        scope = getattr(getattr(ctx, "request", None), "scope", None) or {}
        user = scope.get("user")
        name = caller_of(getattr(user, "access_token", None))
        return self.verifier.caller(name) if name is not None else None

    def dispatcher(self, caller: Caller) -> AsyncDispatcher:
        policy = caller.policy
        if policy is None or policy == self.default.policy:
            return self.default
        if self._make is None:  # never fall back to another policy: that would widen access
            raise RuntimeError("a caller has its own policy, but no dispatcher can be made")
        if policy not in self._dispatchers:
            self._dispatchers[policy] = self._make(policy)
        return self._dispatchers[policy]

    def listing(self, caller: Caller) -> list[types.Tool]:
        key = (caller.policy, caller.tools)
        if key not in self._listings:
            dispatcher = self.dispatcher(caller)
            listed = self._lister(dispatcher.registry, dispatcher.policy, dispatcher.tools)
            self._listings[key] = [
                t for t in listed if caller.tools is None or t.name in caller.tools
            ]
        return self._listings[key]

    async def aclose(self) -> None:
        dispatchers, self._dispatchers = list(self._dispatchers.values()), {}
        for dispatcher in dispatchers:
            await dispatcher.aclose()
