"""Keeping the async dispatcher's HTTP client usable after any number of cancelled requests.

httpcore's connection pool loses a slot for good when a request is cancelled after the pool has
handed it a new connection but before that connection is opened (encode/httpcore#1093, open at
httpcore 1.0.9; plain httpx leaks the same way): the connection stays ``CONNECTING``, belongs to
no request, and is never reaped. Once `pool_size` slots are lost, every request waits out the
pool timeout against a healthy node.

xerj-tools does not patch httpcore. Before each attempt it looks for such orphans in the pools of
the client it owns; when it finds one, it retires that client (closed as soon as the requests
still on it end) and carries on with a fresh one. A client you passed in is yours: an orphan in
it is logged as a warning, once, and the client is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["AsyncClientKeeper", "Lease", "orphaned_connections"]

logger = logging.getLogger("xerj_tools")


def _pools(client: httpx.AsyncClient) -> list[Any] | None:
    """The httpcore pools behind a client, or None when they cannot be read (a custom
    transport, or an httpx whose layout differs)."""
    transports: Iterable[Any] = [
        getattr(client, "_transport", None),
        *getattr(client, "_mounts", {}).values(),
    ]
    pools = []
    for transport in transports:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        if not hasattr(pool, "connections"):
            return None
        pools.append(pool)
    return pools


def _busy(connection: Any) -> bool:
    return not connection.is_idle() and not connection.is_closed()


def orphaned_connections(client: httpx.AsyncClient, in_flight: int) -> int | None:
    """How many connections of the client's pools hold a slot for no request; None when the
    pools cannot be read.

    Exact where httpcore's request list is readable: a busy connection that no pending request
    holds is an orphan. Otherwise by count: every request of ours holds at most one connection,
    so busy connections beyond the requests in flight are orphans.
    """
    pools = _pools(client)
    if pools is None:
        return None
    busy = orphans = 0
    for pool in pools:
        connections = [c for c in pool.connections if _busy(c)]
        requests = getattr(pool, "_requests", None)
        if requests is None:
            busy += len(connections)
            continue
        held = {id(getattr(r, "connection", None)) for r in list(requests)}
        orphans += sum(id(c) not in held for c in connections)
    return orphans + max(0, busy - in_flight)


@dataclass
class Lease:
    """One client and the number of our requests on it right now."""

    client: httpx.AsyncClient
    in_flight: int = 0


class AsyncClientKeeper:
    """Hands out the client to send with, replacing an owned one whose pool leaks."""

    def __init__(
        self,
        client: httpx.AsyncClient | None,
        factory: Callable[[], httpx.AsyncClient],
        pool_size: int,
    ) -> None:
        self.owned = client is None
        self._pool_size = pool_size
        self._factory = factory
        self._current = Lease(client if client is not None else factory())
        self._retired: list[Lease] = []
        self._warned = False
        self.rebuilds = 0

    @property
    def client(self) -> httpx.AsyncClient:
        return self._current.client

    def lease(self) -> Lease:
        """The client for the next request (checked first), counted as in flight on it; the
        caller gives it back with `release`. Nothing here awaits, so the check and the count
        see one state of the pool."""
        current = self._current
        orphans = orphaned_connections(current.client, current.in_flight)
        if orphans:
            self._replace(current, f"{orphans} connection(s) lost to cancelled requests")
        lease = self._current
        lease.in_flight += 1
        return lease

    def release(self, lease: Lease, *, pool_timeout: bool = False) -> None:
        lease.in_flight -= 1
        # Where the pools cannot be read: a pool timeout while fewer of our requests than the
        # pool's size were on the client means slots are held by nobody.
        if (
            pool_timeout
            and lease is self._current
            and lease.in_flight < self._pool_size
            and orphaned_connections(lease.client, lease.in_flight) is None
        ):
            self._replace(lease, "the pool timed out with free slots unaccounted for")

    def _replace(self, lease: Lease, why: str) -> None:
        if not self.owned:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "the httpx client passed to AsyncDispatcher has %s (encode/httpcore#1093); "
                    "xerj-tools does not replace a client it does not own",
                    why,
                )
            return
        logger.info("replacing the HTTP client: %s", why)
        self.rebuilds += 1
        self._retired.append(lease)
        self._current = Lease(self._factory())

    async def tidy(self) -> None:
        """Close retired clients that no request uses any more."""
        idle = [lease for lease in self._retired if lease.in_flight == 0]
        for lease in idle:
            self._retired.remove(lease)
        for lease in idle:
            await lease.client.aclose()  # httpcore shields the closing of its connections

    async def aclose(self) -> None:
        retired, self._retired = self._retired, []
        for lease in retired:
            await lease.client.aclose()
        if self.owned:
            await self._current.client.aclose()
