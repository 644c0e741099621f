"""The callers file of `xerj-tools mcp --http` read again while serving: a version is taken only
whole (settled, valid, widening no caller it still names), a caller's own policy file is watched,
and the dispatchers a reload retires are closed. The file logic runs without sockets (a clock
the test moves); what a caller gets runs over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx2
import pytest

from xerj_tools.testing import XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from mcp_team_support import HEADERS, INIT, Running, connect, tenants_node, text_of

from xerj_tools import AsyncDispatcher, Policy
from xerj_tools.integrations.mcp import list_tools
from xerj_tools.integrations.mcp._auth import CallerVerifier
from xerj_tools.integrations.mcp._callers import CallersFile, hash_token
from xerj_tools.integrations.mcp._tenants import Tenants

TOKEN_A, TOKEN_B = "xt_reload-tenant-a", "xt_reload-tenant-b"
ENTRY_A = f'[[caller]]\nname = "tenant-a"\ntoken_sha256 = "{hash_token(TOKEN_A)}"\n'
ENTRY_B = f'[[caller]]\nname = "tenant-b"\ntoken_sha256 = "{hash_token(TOKEN_B)}"\n'
FULL = f'{ENTRY_A}policy = "a.toml"\n\n{ENTRY_B}policy = "b.toml"\n'


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.toml").write_text('allow_indices = ["tenant-a-*"]\n')
    (tmp_path / "b.toml").write_text('allow_indices = ["tenant-b-*"]\n')
    path = tmp_path / "callers.toml"
    path.write_text(FULL)
    return path


def written(path: Path, text: str, age: float) -> None:
    """`text` written to `path` as it would be in place, its modification `age` seconds ago."""
    path.write_text(text)
    when = time.time() - age
    os.utime(path, (when, when))


class Clock:
    """Wall-clock seconds that the test moves, for the settling of file changes."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_file_being_rewritten_is_taken_only_once_it_has_stopped_changing(files: Path) -> None:
    clock = Clock()
    callers = CallersFile(files, clock=clock)
    a_policy = callers.for_token(TOKEN_A).policy  # type: ignore[union-attr]
    # The first instants of a rewrite in place: empty, then tenant A's entry alone.
    for text in ("", f'{ENTRY_A}policy = "a.toml"\n'):
        written(files, text, age=0)
        clock.now = files.stat().st_mtime  # the moment it was written
        assert callers.for_token(TOKEN_A) is not None and callers.for_token(TOKEN_B) is not None
    written(files, FULL + "\n", age=0)  # the rewrite completes
    clock.now = files.stat().st_mtime + callers.settle + 0.001
    assert callers.for_token(TOKEN_B) is not None
    assert callers.for_token(TOKEN_A).policy == a_policy  # type: ignore[union-attr]
    assert callers.generation == 2
    # An empty file that stays empty is taken: every caller is refused (fail closed).
    written(files, "", age=0)
    clock.now = files.stat().st_mtime + callers.settle + 0.001
    assert callers.for_token(TOKEN_A) is None and len(callers) == 0


def test_a_file_time_ahead_of_the_clock_settles_once_it_stays_unchanged(files: Path) -> None:
    clock = Clock()
    callers = CallersFile(files, clock=clock)
    written(files, ENTRY_B + 'policy = "b.toml"\n', age=-3600)  # a share's clock, an hour ahead
    clock.now = time.time()
    assert callers.for_token(TOKEN_A) is not None  # first seen now: not settled
    clock.now += callers.settle + 0.001
    assert callers.for_token(TOKEN_A) is None and callers.for_token(TOKEN_B) is not None


@pytest.mark.parametrize(
    "cut",
    [
        f'{ENTRY_A}\n{ENTRY_B}policy = "b.toml"\n',  # tenant A's policy line missing
        f'{ENTRY_A}policy = "a.toml"\n\n{ENTRY_B}',  # cut before tenant B's policy line
    ],
)
def test_a_version_that_drops_a_callers_policy_is_refused_and_logged(
    files: Path, cut: str, caplog: pytest.LogCaptureFixture
) -> None:
    callers = CallersFile(files, settle=0)
    before = {name: c.policy for name, c in callers.callers().items()}
    written(files, cut, age=1)
    callers.refresh()
    assert {name: c.policy for name, c in callers.callers().items()} == before
    assert "not reloaded, the last good one stays" in caplog.text
    assert "names no policy any more" in caplog.text
    written(files, FULL + "\n", age=0.5)  # the complete file is taken again
    callers.refresh()
    assert callers.generation == 2


def test_a_version_that_drops_a_callers_tools_list_is_refused(
    files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    callers = CallersFile(files, settle=0)
    narrowed = FULL.replace('policy = "a.toml"\n', 'policy = "a.toml"\ntools = ["xerj_search"]\n')
    written(files, narrowed, age=1)  # narrowing is taken
    assert callers.for_token(TOKEN_A).tools == frozenset({"xerj_search"})  # type: ignore[union-attr]
    written(files, FULL, age=0.5)  # widening it back to every tool is not
    assert callers.for_token(TOKEN_A).tools == frozenset({"xerj_search"})  # type: ignore[union-attr]
    assert "lists no tools any more" in caplog.text


def test_a_callers_policy_file_changing_is_a_reload(files: Path) -> None:
    callers = CallersFile(files, settle=0)
    written(files.parent / "b.toml", 'allow_indices = ["nothing-*"]\n', age=1)
    caller = callers.for_token(TOKEN_B)
    assert caller is not None and caller.policy == Policy(allow_indices=("nothing-*",))
    written(files.parent / "b.toml", "allow_indices = [", age=0.5)  # a bad edit: the last good
    assert callers.for_token(TOKEN_B).policy == caller.policy  # type: ignore[union-attr]


class Recorded(AsyncDispatcher):
    closed: ClassVar[list[Policy]] = []

    async def aclose(self) -> None:
        Recorded.closed.append(self.policy)
        await super().aclose()


def test_reloads_close_the_dispatchers_of_policies_no_caller_has_any_more(files: Path) -> None:
    async def scenario() -> None:
        Recorded.closed = []
        callers = CallersFile(files, settle=0)
        url = "http://127.0.0.1:9"  # never called: nothing is sent
        tenants = Tenants(
            AsyncDispatcher(url=url),
            list_tools,
            CallerVerifier(callers),
            lambda p: Recorded(url=url, policy=p),
        )
        first = callers.for_token(TOKEN_A)
        assert first is not None
        async with tenants.use(first) as held:  # a call runs on tenant A's first policy
            for n in range(1, 6):  # five reloads, each with a new policy for tenant A
                written(files.parent / "a.toml", f"max_size = {n}\n", age=1 - n / 10)
                caller = callers.for_token(TOKEN_A)
                assert caller is not None and caller.policy == Policy(max_size=n)
                async with tenants.use(caller):
                    pass
            assert held.policy not in Recorded.closed  # still in use: kept open
        assert Recorded.closed == [Policy(max_size=n) for n in range(1, 5)] + [held.policy]
        assert len(tenants._dispatchers) == 1  # tenant A's policy now; tenant B has made none
        await tenants.aclose()

    asyncio.run(scenario())


# -- Over HTTP -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with tenants_node() as stand_in:
        yield stand_in


B_DOCS = {"index": "tenant-b-docs", "query": {"match_all": {}}}


async def search(url: str, token: str, args: dict[str, Any]) -> dict[str, Any]:
    async with connect(url, token) as session:
        return text_of(await session.call_tool("xerj_search", args))


def test_a_callers_file_cut_before_a_policy_line_never_widens_that_caller(
    xerj: XerjStandIn, files: Path
) -> None:
    with Running(url=xerj.url, callers_path=str(files)) as server:
        assert asyncio.run(search(server.url, TOKEN_A, B_DOCS))["error"]["code"] == "policy_denied"
        # Read between tenant A's token line and its policy line: valid TOML, no policy.
        written(files, FULL[: FULL.index('policy = "a.toml"')], age=1)
        answer = asyncio.run(search(server.url, TOKEN_A, B_DOCS))
        assert answer["error"]["code"] == "policy_denied" and "bravo" not in str(answer)


def test_a_narrowed_policy_file_applies_to_the_next_call(xerj: XerjStandIn, files: Path) -> None:
    with Running(url=xerj.url, callers_path=str(files)) as server:
        assert asyncio.run(search(server.url, TOKEN_B, B_DOCS))["ok"] is True
        written(files.parent / "b.toml", 'allow_indices = ["tenant-b-public-*"]\n', age=1)
        assert asyncio.run(search(server.url, TOKEN_B, B_DOCS))["error"]["code"] == "policy_denied"


def test_a_request_during_a_rewrite_waits_for_it_to_settle(xerj: XerjStandIn, files: Path) -> None:
    with Running(url=xerj.url, callers_path=str(files)) as server:
        # Tenant B removed by a change just written: the request waits for it to settle, and
        # the change is in force for that very request.
        written(files, f'{ENTRY_A}policy = "a.toml"\n', age=0)
        for token, status in ((TOKEN_B, 401), (TOKEN_A, 200)):
            reply = httpx2.post(
                server.url, json=INIT, headers={**HEADERS, "Authorization": f"Bearer {token}"}
            )
            assert reply.status_code == status
