"""The agent loop's bound on calls per turn: the first `max_calls_per_turn` calls
of a turn are run, each call past them is answered `too_many_calls` without reaching XERJ, and
every call still gets exactly one answer, in call order; against the stand-in and a scripted
model, over real sockets."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    ConfigurationError,
    Dispatcher,
    arun_agent,
    run_agent,
)
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

from conftest import openai_client


def distinct_calls(count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("xerj_search", {"index": "docs", "query": {"match": {"body": f"word{i}"}}})
        for i in range(count)
    ]


def answers(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        json.loads(m.get("content") or m.get("output"))
        for m in messages
        if m.get("role") == "tool" or m.get("type") == "function_call_output"
    ]


def run(
    xerj: XerjStandIn, script: list[Turn], flavour: str, api: str = "chat", **options: Any
) -> tuple[Any, list[Any]]:
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with ScriptedModel(script) as model:
        if flavour == "sync":
            with openai_client(model.base_url) as client, Dispatcher(url=xerj.url) as dispatcher:
                result = run_agent(
                    client,
                    model="scripted",
                    messages=messages,
                    dispatcher=dispatcher,
                    options=AgentOptions(api=api, **options),
                )
        else:

            async def go() -> Any:
                async with (
                    openai_client(model.base_url, "async") as client,
                    AsyncDispatcher(url=xerj.url) as dispatcher,
                ):
                    return await arun_agent(
                        client,
                        model="scripted",
                        messages=messages,
                        dispatcher=dispatcher,
                        options=AgentOptions(api=api, **options),
                    )

            result = asyncio.run(go())
    return result, messages


def searches(xerj: XerjStandIn) -> list[Any]:
    # The calls' own requests; an empty answer may be followed by a read of the mapping (a field
    # hint, `_after`), which is not a call.
    return [r for r in xerj.requests if r.path.endswith("/_search")]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_calls_past_the_bound_are_answered_not_run(
    xerj: XerjStandIn, flavour: str, api: str
) -> None:
    script = [Turn(tool_calls=distinct_calls(20)), Turn(text="done")]
    result, messages = run(xerj, script, flavour, api)
    assert result.completed
    got = answers(messages)
    assert len(got) == 20  # one answer per call
    assert all(a["ok"] for a in got[:16])
    assert [a["error"]["code"] for a in got[16:]] == ["too_many_calls"] * 4
    assert got[16]["error"]["retryable"] is True and "first 16" in got[16]["error"]["reason"]
    assert len(searches(xerj)) == 16  # the four past the bound never reached XERJ


def test_the_bound_is_a_keyword(xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=distinct_calls(5)), Turn(text="done")]
    result, messages = run(xerj, script, "sync", max_calls_per_turn=2)
    assert [a.get("error", {}).get("code") for a in answers(messages)] == [
        None,
        None,
        *["too_many_calls"] * 3,
    ]
    assert len(searches(xerj)) == 2 and result.tool_stats["xerj_search"].calls == 5


def test_a_turn_within_the_bound_runs_every_call(xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=distinct_calls(16)), Turn(text="done")]
    _, messages = run(xerj, script, "sync")
    assert all(a["ok"] for a in answers(messages)) and len(searches(xerj)) == 16


def test_the_bound_must_be_positive(xerj: XerjStandIn) -> None:
    with pytest.raises(ConfigurationError), Dispatcher(url=xerj.url) as dispatcher:
        run_agent(object(), model="m", messages="q", dispatcher=dispatcher, options=AgentOptions(max_calls_per_turn=0))
