"""The agent loop's parameters: the run's inputs, and the options it hands to ``create()``."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    ConfigurationError,
    CreateOptions,
    Dispatcher,
    arun_agent,
    run_agent,
)
from xerj_tools.testing import ScriptedModel, Turn


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
