"""The agent loop's parameters: its own keywords, and the options it hands to ``create()``."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import openai
import pytest

from xerj_tools import (
    AsyncDispatcher,
    ConfigurationError,
    CreateOptions,
    Dispatcher,
    arun_agent,
    astream_agent,
    run_agent,
    stream_agent,
)
from xerj_tools.testing import ScriptedModel, Turn

LOOP_PARAMETERS = {
    "model", "messages", "dispatcher", "api", "max_turns", "max_repeats", "on_tool_call",
    "on_tool_result", "on_max_turns", "stream", "create_options",
}  # fmt: skip


def run(mode: str, api: str, **options: Any) -> list[dict[str, Any]]:
    """One run against a model that answers in text at once (nothing reaches XERJ); returns the
    requests the model received."""
    with ScriptedModel([Turn(text="hello")]) as model:
        if mode == "sync":
            with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
                    Dispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
                result = run_agent(client, model="m", messages="hi", dispatcher=dispatcher, api=api,
                                   **options)  # fmt: skip
        else:

            async def go() -> Any:
                async with openai.AsyncOpenAI(base_url=model.base_url, api_key="k", max_retries=0) as client, \
                        AsyncDispatcher(url="http://127.0.0.1:9") as dispatcher:  # fmt: skip
                    return await arun_agent(client, model="m", messages="hi", dispatcher=dispatcher, api=api,
                                            **options)  # fmt: skip

            result = asyncio.run(go())
        assert result.completed
        return list(model.requests)


@pytest.mark.parametrize("function", [run_agent, arun_agent, stream_agent, astream_agent])
def test_the_loop_takes_typed_keywords_not_any_options(function: Any) -> None:
    parameters = inspect.signature(function).parameters
    assert {n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY} >= LOOP_PARAMETERS
    [rest] = [p for p in parameters.values() if p.kind is p.VAR_KEYWORD]
    assert rest.annotation == "Unpack[CreateOptions]"
    assert parameters["create_options"].default is None


def test_the_typed_options_name_what_create_takes() -> None:
    assert {"temperature", "tool_choice", "stream_options", "max_output_tokens"} <= set(
        CreateOptions.__annotations__
    )


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_options_reach_create_as_keywords_and_as_a_mapping(mode: str, api: str) -> None:
    [request] = run(mode, api, temperature=0, create_options={"top_p": 0.5, "user": "u1"})
    assert (request["temperature"], request["top_p"], request["user"]) == (0, 0.5, "u1")
    assert request["model"] == "m" and request["tools"]


@pytest.mark.parametrize("key", ["stream", "tools", "messages", "model", "input"])
def test_a_key_the_loop_owns_is_refused_before_anything_is_asked(mode: str, key: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{key}.*belong to the loop"):
        run(mode, "chat", create_options={key: "x"})
    if key in ("tools", "input"):  # the others are the loop's own parameters already
        with pytest.raises(ConfigurationError, match="belong to the loop"):
            run(mode, "responses", **{key: "x"})


def test_an_option_given_twice_is_refused(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="temperature given both"):
        run(mode, "chat", temperature=0, create_options={"temperature": 1})
