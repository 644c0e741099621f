"""openai-agents: the registry's tools as `FunctionTool`s that run through a xerj-tools dispatcher.

    from agents import Agent, Runner
    from xerj_tools import AsyncDispatcher
    from xerj_tools.integrations.openai_agents import function_tools

    async with AsyncDispatcher() as dispatcher:
        agent = Agent(name="search", tools=function_tools(dispatcher))
        result = await Runner.run(agent, "Why did checkout break?")

Each tool hands the model's raw argument string to the dispatcher, so malformed JSON, invalid
arguments, audited repairs and engine failures reach the model as the usual JSON envelope
instead of an exception or the framework's generic error text. The schemas are sent with
``strict_json_schema=False``: openai-agents' strict mode rewrites a schema on the way out
(``agents/strict_schema.py``, ``ensure_strict_json_schema``: every object gets
``additionalProperties: false`` and every property becomes required), which turns `query` into an
object that may hold nothing and makes all nine `xerj_search` properties required, so a strict
model could only send calls the dispatcher then refuses.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._shapes import ToolCall
from ._flights import CallRunner
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard, chosen_tools

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra(
        "xerj_tools.integrations.openai_agents", "openai-agents", "openai-agents"
    ) from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._sync import Dispatcher

__all__ = ["function_tools"]


def function_tools(
    dispatcher: AsyncDispatcher | Dispatcher,
    *,
    names: Iterable[str] | None = None,
    policy: PolicyChoice = None,
    max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
) -> list[FunctionTool]:
    """One `FunctionTool` per tool of ``dispatcher.registry`` (or of `names`), for ``Agent(tools=)``.

    An `AsyncDispatcher` runs on the agent's event loop, with no thread hop. A sync `Dispatcher`
    works too: each call runs on a worker thread (``asyncio.to_thread``), so the loop is never
    blocked; a cancelled call there stops waiting, but the attempt on the wire runs to its end.

    The runner starts a turn's calls together; identical calls of one run (same tool, same
    arguments after repair) that are in flight at the same time are sent to XERJ once, and each
    call id gets its answer, as with ``dispatch_many``. Calls made one after another (for example
    with ``max_function_tool_concurrency=1``) are each sent.

    `policy` is a `Policy` for every run, or a function of the call's `ToolContext` (a
    `RunContextWrapper`: ``ctx.context`` is what you passed as ``Runner.run(context=...)``) that
    returns the run's, as in ``lambda ctx: POLICIES[ctx.context.tenant]``; None uses the
    dispatcher's. A function that raises or returns no `Policy` gets the call refused
    ``policy_denied``, nothing sent. `max_calls_per_turn` (16; None: no bound): the calls of
    one model response past it are answered ``too_many_calls`` and not run.
    """
    registry = dispatcher.registry
    chosen = chosen_tools(registry, names)
    runner, guard = CallRunner(dispatcher), RunGuard(dispatcher, policy, max_calls_per_turn)
    return [
        FunctionTool(
            name=name,
            description=registry[name].description,
            params_json_schema=copy.deepcopy(dict(registry[name].parameters)),
            on_invoke_tool=_invoker(runner, guard, name),
            strict_json_schema=False,
        )
        for name in chosen
    ]


def _invoker(
    runner: CallRunner, guard: RunGuard, name: str
) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    """The tool's ``on_invoke_tool``: one call through `runner` (identical calls in flight share
    one request), under the run's policy and turn bound."""

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        call = ToolCall(str(context.tool_call_id or name), name, arguments, "chat")
        # The run's usage lives as long as the run; its request count is the model turn.
        usage = getattr(context, "usage", None)
        step = getattr(usage, "requests", 0)
        policy, refused = guard.check(call, usage, step, context)
        if refused is not None:
            return refused.content
        return (await runner.run(call, id(usage), policy)).content

    return invoke
