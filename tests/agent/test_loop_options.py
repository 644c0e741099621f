"""`AgentOptions`: the agent loop's options carried once, with the keyword forms kept."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import openai
import pytest

import xerj_tools
from xerj_tools import (
    AgentOptions,
    ConfigurationError,
    Dispatcher,
    MaxTurnsExceeded,
    arun_agent,
    astream_agent,
    run_agent,
    stream_agent,
)
from xerj_tools._agent._agent_options import AgentKeywords, CreateOptions
from xerj_tools._agent._loop import _start
from xerj_tools.testing import ScriptedModel, Turn


# `run_agent` and `stream_agent` as they were before `AgentOptions` (main at 803c3bd), copied
# verbatim; `arun_agent` and `astream_agent` had the same parameters and defaults.
def run_agent_before(
    client: Any,
    *,
    model: str,
    messages: Any,
    dispatcher: Any,
    api: Literal["chat", "responses"] = "chat",
    max_turns: int = 10,
    max_repeats: int = 2,
    max_calls_per_turn: int = 16,  # MAX_CALLS_PER_TURN
    on_tool_call: Any = None,
    on_tool_result: Any = None,
    on_max_turns: Literal["return", "raise"] = "return",
    stream: bool = False,
    create_options: Mapping[str, Any] | None = None,
    **create_kwargs: Any,
) -> Any: ...


def defaults(function: Any) -> dict[str, Any]:
    return {p.name: p.default for p in inspect.signature(function).parameters.values()}


@pytest.mark.parametrize(("function", "stream"), [(run_agent, False), (arun_agent, False),
                                                  (stream_agent, True), (astream_agent, True)])  # fmt: skip
def test_the_defaults_are_those_of_the_keywords_before(function: Any, stream: bool) -> None:
    before = {**defaults(run_agent_before), "stream": stream}
    fields = {f.name: f.default for f in dataclasses.fields(AgentOptions)}
    assert {**fields, "stream": stream} == {name: before[name] for name in fields}
    assert AgentOptions().stream is None  # None: the entry point's own default, as before
    assert defaults(function) == {**before, "options": None}


def test_the_keyword_types_mirror_the_fields() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(AgentOptions)}
    typed = {k: getattr(v, "__forward_arg__", v) for k, v in AgentKeywords.__annotations__.items()}
    assert set(typed) == {*CreateOptions.__annotations__, *fields}
    assert {k: typed[k] for k in fields} == fields


@pytest.fixture(scope="module")
def dispatcher() -> Iterator[Dispatcher]:
    with Dispatcher(url="http://127.0.0.1:9") as d:
        yield d


def deny(call: Any) -> str:
    return "no"


def seen(result: Any) -> None:
    return None


# field -> (a value other than its default, what of a started run shows it)
EFFECTS: dict[str, tuple[Any, Callable[[Any, AgentOptions, bool], Any]]] = {
    "api": ("responses", lambda run, o, s: run.shape.name),
    "max_turns": (3, lambda run, o, s: run.max_turns),
    "max_repeats": (5, lambda run, o, s: run.max_repeats),
    "max_calls_per_turn": (4, lambda run, o, s: run.max_calls),
    "on_tool_call": (deny, lambda run, o, s: o.on_tool_call),
    "on_tool_result": (seen, lambda run, o, s: o.on_tool_result),
    "on_max_turns": ("raise", lambda run, o, s: run.on_max_turns),
    "stream": (True, lambda run, o, s: s),
    "create_options": ({"temperature": 0}, lambda run, o, s: run.create_options),
}


def test_every_field_has_a_case() -> None:
    assert set(EFFECTS) == {f.name for f in dataclasses.fields(AgentOptions)}


@pytest.mark.parametrize("name", list(EFFECTS))
def test_a_keyword_and_the_same_option_start_the_same_run(
    dispatcher: Dispatcher, name: str
) -> None:
    value, effect = EFFECTS[name]

    def start(options: AgentOptions | None, **keywords: Any) -> Any:
        run, used, stream = _start("run_agent", dispatcher, "m", "hi", options, keywords, False)
        return effect(run, used, stream)

    by_keyword = start(None, **{name: value})
    by_options = start(AgentOptions(**{name: value}))
    assert by_keyword == by_options != start(None)
    assert start(AgentOptions(**{name: value}), **{name: EFFECTS[name][0]}) == by_options


def one_run(model: ScriptedModel, **options: Any) -> Any:
    with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
            Dispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
        return run_agent(client, model="m", messages="hi", dispatcher=dispatcher, **options)


def test_a_run_behaves_the_same_with_keywords_and_with_options() -> None:
    calls = [Turn(tool_calls=[("xerj_search", {"index": "docs", "query": {}})])] * 2
    outcomes = []
    for options in ({"max_turns": 1, "temperature": 0, "on_tool_call": deny},
                    {"options": AgentOptions(max_turns=1, on_tool_call=deny, create_options={"temperature": 0})}):  # fmt: skip
        with ScriptedModel(calls) as model:
            result = one_run(model, **options)
            outcomes.append((result.outcome, result.turns, model.requests[0]["temperature"],
                             result.transcript[-1]["content"]))  # fmt: skip
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:3] == ("max_turns", 1, 0) and "denied" in outcomes[0][3]
    with ScriptedModel(calls) as model, pytest.raises(MaxTurnsExceeded):
        one_run(model, options=AgentOptions(max_turns=1), on_max_turns="raise")


def test_a_keyword_beside_options_wins() -> None:
    base = AgentOptions(max_turns=4, create_options={"temperature": 1, "seed": 3})
    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        run, used, _ = _start(
            "run_agent", dispatcher, "m", "hi", base, {"max_turns": 2, "temperature": 0}, False
        )
        assert (run.max_turns, run.create_options) == (2, {"temperature": 0, "seed": 3})
        assert used == base.replace(max_turns=2, create_options={"temperature": 0, "seed": 3})
        with pytest.raises(
            ConfigurationError, match="temperature given both"
        ):  # in one call: a mistake
            _start("run_agent", dispatcher, "m", "hi", base, {"temperature": 0, "create_options": {"temperature": 1}},
                   False)  # fmt: skip
    assert base.max_turns == 4


@pytest.mark.parametrize("function", [run_agent, stream_agent])
def test_an_unknown_keyword_is_a_type_error_with_the_nearest_name(function: Any) -> None:
    with pytest.raises(
        TypeError, match=r"got an unexpected keyword argument 'max_turn'; did you mean 'max_turns'"
    ):
        list(function(None, model="m", messages="hi", dispatcher=None, max_turn=3) or [])
    with pytest.raises(
        TypeError, match=r"'frequency_penalty'"
    ):  # untyped create() options go in create_options
        list(function(None, model="m", messages="hi", dispatcher=None, frequency_penalty=0.5) or [])
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
