"""`AgentOptions`: the agent loop's options, the one way to set how a run goes, and the options
it hands to ``create()``."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

import xerj_tools
from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    ConfigurationError,
    CreateOptions,
    Dispatcher,
    MaxTurnsExceeded,
    arun_agent,
    astream_agent,
    run_agent,
    stream_agent,
)
from xerj_tools._agent._loop import _start
from xerj_tools.testing import ScriptedModel, Turn

# How the loop ran before its options were gathered into `AgentOptions`: these defaults are kept.
BEFORE: dict[str, Any] = {
    "api": "chat", "max_turns": 10, "max_repeats": 2, "max_calls_per_turn": 16,
    "on_tool_call": None, "on_tool_result": None, "on_max_turns": "return",
    "create_options": None,
}  # fmt: skip


@pytest.mark.parametrize("function", [run_agent, arun_agent, stream_agent, astream_agent])
def test_the_entry_points_take_the_run_s_inputs_and_one_options_object(function: Any) -> None:
    fields = {f.name: f.default for f in dataclasses.fields(AgentOptions)}
    assert fields == {**BEFORE, "stream": None}  # None: the entry point's own default
    parameters = inspect.signature(function).parameters
    assert list(parameters) == ["client", "model", "messages", "dispatcher", "options"]
    assert parameters["options"].default is None
    assert "__signature__" not in vars(function)  # nothing rewritten at import


@pytest.fixture(scope="module")
def dispatcher() -> Iterator[Dispatcher]:
    with Dispatcher(url="http://127.0.0.1:9") as d:
        yield d


def deny(call: Any) -> str:
    return "no"


def seen(result: Any) -> None:
    return None


# field -> (a value other than its default, what of a started run shows it)
EFFECTS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "api": ("responses", lambda run: run.shape.name),
    "max_turns": (3, lambda run: run.max_turns),
    "max_repeats": (5, lambda run: run.max_repeats),
    "max_calls_per_turn": (4, lambda run: run.max_calls),
    "on_tool_call": (deny, lambda run: run.on_tool_call),
    "on_tool_result": (seen, lambda run: run.on_tool_result),
    "on_max_turns": ("raise", lambda run: run.on_max_turns),
    "stream": (True, lambda run: run.stream),
    "create_options": ({"temperature": 0}, lambda run: run.create_options),
}


def test_every_field_has_a_case() -> None:
    assert set(EFFECTS) == {f.name for f in dataclasses.fields(AgentOptions)}


@pytest.mark.parametrize("name", list(EFFECTS))
def test_each_option_changes_the_run(dispatcher: Dispatcher, name: str) -> None:
    value, effect = EFFECTS[name]

    def start(options: AgentOptions | None) -> Any:
        return effect(_start(dispatcher, "m", "hi", options, False))

    assert start(AgentOptions(**{name: value})) != start(None) == start(AgentOptions())


def one_run(model: ScriptedModel, **options: Any) -> Any:
    with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
            Dispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
        return run_agent(client, model="m", messages="hi", dispatcher=dispatcher, **options)


def test_a_run_follows_its_options() -> None:
    calls = [Turn(tool_calls=[("xerj_search", {"index": "docs", "query": {}})])] * 2
    options = AgentOptions(max_turns=1, on_tool_call=deny, create_options={"temperature": 0})
    with ScriptedModel(calls) as model:
        result = one_run(model, options=options)
        assert (result.outcome, result.turns, model.requests[0]["temperature"]) == (
            "max_turns", 1, 0,
        )  # fmt: skip
        assert "denied" in result.transcript[-1]["content"]
    with ScriptedModel(calls) as model, pytest.raises(MaxTurnsExceeded):
        one_run(model, options=options.replace(on_max_turns="raise"))


@pytest.mark.parametrize("function", [run_agent, stream_agent])
def test_a_loop_keyword_or_a_create_option_as_a_keyword_is_a_type_error(function: Any) -> None:
    for keyword in ("max_turns", "temperature", "create_options"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
            list(function(None, model="m", messages="hi", dispatcher=None, **{keyword: 3}) or [])
    with pytest.raises(TypeError, match="options= takes an AgentOptions, not dict"):
        list(
            function(None, model="m", messages="hi", dispatcher=None, options={"max_turns": 3})
            or []
        )
    with pytest.raises(
        TypeError, match=r"AgentOptions.replace\(\) got an unexpected keyword argument 'turns'"
    ):
        AgentOptions().replace(turns=3)


BAD: list[tuple[str, Any, str]] = [
    ("api", "completions", "api must be 'chat' or 'responses'"),
    ("max_turns", 0, "max_turns, max_repeats and max_calls_per_turn must be at least 1"),
    ("max_repeats", True, "max_turns, max_repeats and max_calls_per_turn must be at least 1"),
    ("max_calls_per_turn", 2.5, "max_turns, max_repeats and max_calls_per_turn must be at least 1"),
    ("max_calls_per_turn", 0, "max_turns, max_repeats and max_calls_per_turn must be at least 1"),
    ("on_tool_call", "deny", "on_tool_call must be a function or None"),
    ("on_tool_result", 3, "on_tool_result must be a function or None"),
    ("on_max_turns", "stop", "on_max_turns must be 'return' or 'raise'"),
    ("stream", "yes", "stream must be True, False or None"),
    ("create_options", [("temperature", 0)], "create_options must be a mapping"),
    ("create_options", {"tools": []}, "tools belong to the loop"),
]


@pytest.mark.parametrize(
    ("name", "value", "message"), BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)]
)
def test_a_bad_value_is_refused_when_the_options_are_made(
    name: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        AgentOptions(**{name: value})
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        AgentOptions().replace(**{name: value})


def test_the_repr_shows_what_differs_and_never_a_credential() -> None:
    options = AgentOptions(max_turns=3, create_options={
        "temperature": 0, "extra_headers": {"Authorization": "Bearer sk-live-123"}, "api_key": "sk-live-456"})  # fmt: skip
    text = repr(options)
    assert "sk-live" not in text and "Bearer" not in text
    assert text == ("AgentOptions(max_turns=3, create_options={'temperature': 0, 'extra_headers': '<redacted>', "
                    "'api_key': '<redacted>'})")  # fmt: skip
    assert repr(AgentOptions()) == "AgentOptions()"


def test_the_options_are_frozen_exported_and_hold_a_copy() -> None:
    create = {"temperature": 0}
    options = AgentOptions(create_options=create)
    create["temperature"] = 1
    assert dict(options.create_options or {}) == {"temperature": 0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_turns = 3  # type: ignore[misc]
    assert xerj_tools.AgentOptions is AgentOptions and "AgentOptions" in xerj_tools.__all__


def run(mode: str, api: str, **options: Any) -> list[dict[str, Any]]:
    """One run against a model that answers in text at once (nothing reaches XERJ); returns the
    requests the model received."""
    with ScriptedModel([Turn(text="hello")]) as model:
        if mode == "sync":
            with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
                    Dispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
                result = run_agent(client, model="m", messages="hi", dispatcher=dispatcher,
                                   options=AgentOptions(api=api, **options))  # fmt: skip
        else:

            async def go() -> Any:
                async with openai.AsyncOpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
                        AsyncDispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
                    return await arun_agent(client, model="m", messages="hi", dispatcher=dispatcher,
                                            options=AgentOptions(api=api, **options))  # fmt: skip

            result = asyncio.run(go())
        assert result.completed
        return list(model.requests)


def test_the_typed_options_name_what_create_takes() -> None:
    assert {"temperature", "tool_choice", "stream_options", "max_output_tokens"} <= set(
        CreateOptions.__annotations__
    )


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_options_reach_create_from_the_one_mapping(mode: str, api: str) -> None:
    typed = CreateOptions(temperature=0, top_p=0.5)
    [request] = run(mode, api, create_options={**typed, "user": "u1"})
    assert (request["temperature"], request["top_p"], request["user"]) == (0, 0.5, "u1")
    assert request["model"] == "m" and request["tools"]


@pytest.mark.parametrize("key", ["stream", "tools", "messages", "model", "input"])
def test_a_key_the_loop_owns_is_refused_before_anything_is_asked(mode: str, key: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{key}.*belong to the loop"):
        run(mode, "chat", create_options={key: "x"})
    with pytest.raises(ConfigurationError, match="belong to the loop"):
        run(mode, "responses", create_options={key: "x"})
