"""Each caller of `xerj-tools mcp` with its own policy: who is calling, the dispatcher that
applies its policy, and the tools it is offered.

A dispatcher is made for each distinct policy the first time a caller with it calls; callers
with the same policy share one (and its connections to XERJ). When a reload of the callers file
leaves a policy to no caller, its dispatcher is closed as soon as no call runs on it (at once if
none does), and its cached listings are dropped: reloads do not pile up connection pools. The
rest close when the server stops. Without a callers file there is one caller, ``local``, with
the server's policy.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp import types

from ..._dispatch._async import AsyncDispatcher
from ..._dispatch._policy import Policy
from ...tools import Tool
from ._auth import CallerVerifier, caller_of
from ._callers import LOCAL, Caller

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
        self._in_use: Counter[AsyncDispatcher] = Counter()
        self._generation = -1
        self._live_policies: set[Policy] = set()

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

    @asynccontextmanager
    async def use(self, caller: Caller) -> AsyncIterator[AsyncDispatcher]:
        """The caller's dispatcher for one call, kept open until the call ends."""
        await self._retire()
        dispatcher = self.dispatcher(caller)
        self._in_use[dispatcher] += 1
        try:
            yield dispatcher
        finally:
            self._in_use[dispatcher] -= 1
            if not self._in_use[dispatcher]:
                del self._in_use[dispatcher]
                await self._retire()

    def _live(self) -> set[Policy] | None:
        """The policies of the callers file's version in force (None: no callers file)."""
        if self.verifier is None:
            return None
        callers = self.verifier.callers
        if callers.generation != self._generation:
            self._generation = callers.generation
            now = callers.callers().values()
            self._live_policies = {c.policy for c in now if c.policy is not None}
            kept = {(c.policy, c.tools) for c in now} | {(None, None)}
            self._listings = {k: v for k, v in self._listings.items() if k in kept}
        return self._live_policies

    async def _retire(self) -> None:
        """Close each dispatcher whose policy no caller has any more and that no call uses."""
        live = self._live()
        if live is None:
            return
        retired = [
            policy
            for policy, dispatcher in self._dispatchers.items()
            if policy not in live and dispatcher not in self._in_use
        ]
        for policy in retired:
            if (dispatcher := self._dispatchers.pop(policy, None)) is not None:
                # Shielded: run from a call's end, which a client's cancel may interrupt.
                await asyncio.shield(dispatcher.aclose())

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
