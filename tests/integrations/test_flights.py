"""The call runner the framework adapters share: identical calls of one scope sent once."""

from __future__ import annotations

import asyncio
import json

import pytest

from xerj_tools import AsyncDispatcher, Dispatcher, ToolCall
from xerj_tools.integrations._flights import CallRunner
from xerj_tools.testing import XerjStandIn

SEARCH = json.dumps({"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2})


def searches(xerj: XerjStandIn) -> int:
    return sum(r.path == "/docs/_search" for r in xerj.requests)


@pytest.mark.parametrize("per_turn", [True, False])
def test_an_identical_call_of_the_same_turn_after_the_first_finished(xerj: XerjStandIn, per_turn: bool) -> None:
    # A framework may start a turn's second call only after the first one ended (LangChain's
    # threads on a busy machine): per turn, it still gets the first one's answer, XERJ asked once.
    with Dispatcher(url=xerj.url) as dispatcher:
        runner = CallRunner(dispatcher, per_turn=per_turn)
        first = runner.run_sync(ToolCall("a", "xerj_search", SEARCH), "turn-1")
        second = runner.run_sync(ToolCall("b", "xerj_search", SEARCH), "turn-1")
        later = runner.run_sync(ToolCall("c", "xerj_search", SEARCH), "turn-2")
    assert first.ok and second.ok and later.ok and second.call.call_id == "b"
    assert ("identical to call a" in second.content) is per_turn
    assert "identical" not in later.content  # another turn asks XERJ again
    assert searches(xerj) == (2 if per_turn else 3)


def test_the_async_runner_keeps_a_turns_answers_too(xerj: XerjStandIn) -> None:
    async def run() -> list[str]:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            runner = CallRunner(dispatcher, per_turn=True)
            first = await runner.run(ToolCall("a", "xerj_search", SEARCH), "turn-1")
            second = await runner.run(ToolCall("b", "xerj_search", SEARCH), "turn-1")
            return [first.content, second.content]

    first, second = asyncio.run(run())
    assert "identical" not in first and "identical to call a" in second
    assert searches(xerj) == 1


def test_only_the_last_turns_are_kept(xerj: XerjStandIn) -> None:
    with Dispatcher(url=xerj.url) as dispatcher:
        runner = CallRunner(dispatcher, per_turn=True)
        for turn in range(CallRunner.KEPT_TURNS + 1):
            runner.run_sync(ToolCall(f"c{turn}", "xerj_search", SEARCH), turn)
        assert len(runner._finished) == CallRunner.KEPT_TURNS and 0 not in runner._finished
