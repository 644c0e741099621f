"""pydantic-ai: a toolset whose tools are the registry's and whose calls go through a dispatcher.

    from pydantic_ai import Agent
    from xerj_tools import AsyncDispatcher
    from xerj_tools.integrations.pydantic_ai import XerjToolset

    async with AsyncDispatcher() as dispatcher:
        agent = Agent("openai:gpt-4.1-mini", toolsets=[XerjToolset(dispatcher)])
        result = await agent.run("Why did checkout break?")

Each tool's ``ToolDefinition`` carries the registry's JSON Schema with ``strict=False``. pydantic-ai
passes every tool schema through its model profile's transformer on the way out
(``Model.customize_request_parameters``); with ``strict`` unset, its OpenAI transformer
(``pydantic_ai/profiles/openai.py``, ``OpenAIJsonSchemaTransformer._transform_object``) closes every
object (``additionalProperties: false``), which turns `query`, `aggs`, `rerank`, `filter` and
`metadata` into objects that may hold nothing, and sends a schema it then finds strict-compatible
with ``strict: true``. With ``strict=False`` the only change it makes is ``"properties": {}`` on
an object that has none (its ``additionalProperties`` stays open), and no tool is sent strict.

What the model sent reaches the dispatcher raw: the toolset's
argument validator accepts anything and hands the text (or the object) on. pydantic-ai itself
validates a function tool's arguments with pydantic and answers a failure with a retry prompt,
ending the run with ``UnexpectedModelBehavior`` once the tool's ``max_retries`` (1 by default)
are spent (pydantic-ai ``tool_manager.py``, ``_validate_tool_args``); here broken JSON, invalid
arguments, audited repairs and engine failures reach the model as the dispatcher's envelope, as
an ordinary tool return, and no retry is spent.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._shapes import ToolCall
from ._flights import CallRunner
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard, chosen_tools

try:
    from pydantic_ai import RunContext
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra(
        "xerj_tools.integrations.pydantic_ai", "pydantic-ai", "pydantic-ai"
    ) from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._sync import Dispatcher

__all__ = ["XerjToolset"]

_RAW = "raw arguments"  # the one key of what the validator hands on: no tool has such a parameter


class _PassThrough:
    """An argument validator that validates nothing: the model's text (or object) goes on whole,
    for the dispatcher to parse, repair or refuse."""

    def validate_json(self, input: str | bytes | bytearray, **_: Any) -> dict[str, Any]:
        text = input.decode("utf-8", "replace") if isinstance(input, (bytes, bytearray)) else input
        return {_RAW: text}

    def validate_python(self, input: Any, **_: Any) -> dict[str, Any]:
        return {_RAW: input}


class XerjToolset(AbstractToolset[Any]):
    """The registry's tools (or those in `names`) as a pydantic-ai toolset over `dispatcher`.

    An `AsyncDispatcher` runs on the agent's event loop; a sync `Dispatcher` runs each call on a
    worker thread. pydantic-ai runs a turn's calls concurrently: identical calls of one run (same
    tool, same arguments after repair) in flight together are sent to XERJ once, and each call
    gets its answer (the later ones with a note). The answer is the envelope's JSON text.

    `policy` is a `Policy` for every run, or a function of the call's `RunContext` that returns
    the run's (``lambda ctx: ctx.deps.policy``: a tenant's policy through the run's ``deps``);
    None uses the dispatcher's. A function that raises or returns no `Policy` gets the call
    refused ``policy_denied``, nothing sent. `max_calls_per_turn` (16; None: no bound): the
    calls of one model response past it are answered ``too_many_calls`` and not run.
    """

    def __init__(
        self,
        dispatcher: AsyncDispatcher | Dispatcher,
        *,
        names: Iterable[str] | None = None,
        id: str | None = "xerj",
        policy: PolicyChoice = None,
        max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
    ) -> None:
        registry = dispatcher.registry
        chosen = chosen_tools(registry, names)
        self.dispatcher = dispatcher
        self._id = id
        self._runner = CallRunner(dispatcher)
        self._guard = RunGuard(dispatcher, policy, max_calls_per_turn)
        self._definitions = [
            ToolDefinition(
                name=name,
                description=registry[name].description,
                parameters_json_schema=copy.deepcopy(dict(registry[name].parameters)),
                strict=False,  # sent as written, not closed by a strict-mode transformer
            )
            for name in chosen
        ]

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            definition.name: ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=0,  # the dispatcher answers; pydantic-ai never has to ask again
                args_validator=_PassThrough(),
            )
            for definition in self._definitions
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> str:
        arguments = tool_args.get(_RAW, tool_args)
        call = ToolCall(str(ctx.tool_call_id or name), name, arguments, "chat")
        run = ctx.run_id or ctx.usage  # one agent run
        policy, refused = self._guard.check(call, run, ctx.run_step, ctx)
        if refused is not None:
            return refused.content
        scope = run if isinstance(run, str) else id(run)
        return (await self._runner.run(call, scope, policy)).content
