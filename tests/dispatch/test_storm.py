"""Cancellation storms: hundreds of seeded cancellations of `dispatch_many`
turns and `arun_agent` runs, at every delay from 0 to 8 ms (12 in the slow version) and at 0 to 12 passes of the event
loop, some cancelled twice; against the stand-in and a plain `ThreadingHTTPServer` with
keep-alive; with the in-flight gate and without. After each storm nothing is left: no request
or busy connection in the pool, no slot held in the gate, no exchange running; and the next call
answers. `tests/storm.py` holds the storm; docs/configuration.md records its measurement."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from xerj_tools import AsyncDispatcher, Limits, Timeout
from xerj_tools.testing import XerjStandIn

from storm import Storm, after, threaded_server


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    with threaded_server() as url:
        yield url


def run_storm(
    url: str, kind: str, gate: bool, count: int, seed: int, width: int, max_ms: int
) -> None:
    storm = Storm(count, seed, max_ms=max_ms, width=width)
    options: dict[str, Any] = {
        "limits": Limits(pool_size=4, max_in_flight="pool" if gate else None),
        "timeout": Timeout(read=5),
    }

    async def go() -> tuple[list[str], bool]:
        async with AsyncDispatcher(url=url, **options) as dispatcher:
            await (storm.turns if kind == "turns" else storm.runs)(dispatcher)
            left, ok, _ = await after(dispatcher)
            return left, ok

    left, ok = asyncio.run(go())
    assert storm.problems == []
    assert left == [], f"seed {seed}: {left}"
    assert ok, f"seed {seed}: the call after the storm did not answer"
    assert storm.cancelled + storm.completed == count


SERVERS = ["stand-in", "threaded"]
KINDS = ["turns", "runs"]


def url_of(server: str, xerj: XerjStandIn, plain: str) -> str:
    return xerj.url if server == "stand-in" else plain


@pytest.mark.parametrize("gate", [True, False], ids=["gate", "no-gate"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("server", SERVERS)
def test_a_storm_of_cancellations_strands_nothing(
    server: str, kind: str, gate: bool, xerj: XerjStandIn, plain: str
) -> None:
    # 8 storms of 32: 256 cancellations at 0-8 ms, each of a turn of 4 calls on a pool of 4.
    seed = SERVERS.index(server) * 4 + KINDS.index(kind) * 2 + gate
    run_storm(url_of(server, xerj, plain), kind, gate, count=32, seed=seed, width=4, max_ms=8)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("gate", [True, False], ids=["gate", "no-gate"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("server", SERVERS)
def test_a_long_storm_strands_nothing(
    server: str, kind: str, gate: bool, seed: int, xerj: XerjStandIn, plain: str
) -> None:
    run_storm(
        url_of(server, xerj, plain), kind, gate, count=300, seed=100 + seed, width=8, max_ms=12
    )
