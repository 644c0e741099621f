"""Google ADK: the registry's tools as ADK tools whose calls go through a xerj-tools dispatcher.

    from google.adk.agents import Agent
    from xerj_tools import AsyncDispatcher
    from xerj_tools.integrations.adk import adk_tools

    dispatcher = AsyncDispatcher()
    agent = Agent(name="search", model="gemini-2.5-flash", tools=adk_tools(dispatcher))

Each tool's declaration is the registry's: name, description and the whole JSON Schema as
``parameters_json_schema`` (not a schema ADK builds from a Python signature). The model's
arguments go to the dispatcher as they came (validation, audited repairs, policy, budget,
retries), and the answer is the envelope as the ``functionResponse``'s ``response`` object:
``{"ok": true, ...}`` or ``{"ok": false, "error": {...}}``, never an exception that would end the
run. ADK runs a turn's calls concurrently; identical calls of one invocation in flight together
(same tool, same arguments after repair) are sent to XERJ once, and each call gets its answer.

An ADK ``FunctionTool`` over a hand-written function (XERJ's own ``adk_xerj_agent.py``) checks
only that the mandatory parameters are there and that values convert to the annotated types
(google-adk ``tools/function_tool.py``, ``run_async``); whatever the function then raises (an
HTTP error from XERJ, a KeyError on an unexpected answer) propagates out of the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._shapes import ToolCall
from ._flights import CallRunner
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard, chosen_tools

try:
    from google.adk.tools import BaseTool, ToolContext
    from google.genai import types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra("xerj_tools.integrations.adk", "Google ADK", "adk") from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._sync import Dispatcher

__all__ = ["XerjAdkTool", "adk_tools"]


class XerjAdkTool(BaseTool):  # type: ignore[misc]
    """One registry tool over a dispatcher; make them with `adk_tools`."""

    def __init__(
        self,
        name: str,
        description: str,
        schema: dict[str, Any],
        runner: CallRunner,
        guard: RunGuard | None = None,
    ):
        super().__init__(name=name, description=description)
        self._schema = schema
        self._runner = runner
        self._guard = guard if guard is not None else RunGuard(runner.dispatcher)

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=json.loads(json.dumps(self._schema)),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        call_id = getattr(tool_context, "function_call_id", None) or self.name
        call = ToolCall(str(call_id), self.name, args, "gemini")
        scope = getattr(tool_context, "invocation_id", None) or id(tool_context)
        policy, refused = self._guard.check(call, scope, _turn(tool_context, call_id), tool_context)
        result = refused if refused is not None else await self._runner.run(call, scope, policy)
        # The envelope as fitted to the budget (the text a model would get), as an object.
        answer = json.loads(result.content)
        return answer if isinstance(answer, dict) else {"output": answer}

    def _detect_error_in_response(self, response: Any) -> str | None:
        """ADK's telemetry hook (google-adk ``flows/llm_flows/tools/_error_handler.py``,
        ``detect_error_type_for_telemetry``): the envelope's error code, so that ADK's own
        ``execute_tool`` span says ERROR, with that code as ``error.type``, for a failed call."""
        if isinstance(response, dict) and response.get("ok") is False:
            error = response.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            return str(code) if code else "error"
        return None


def _turn(tool_context: Any, call_id: Any) -> Any:
    """The model turn a call belongs to: the id of the session event that holds the call
    (ADK appends the model's function-call event to the session before it runs the calls);
    without it, the invocation as a whole."""
    session = getattr(tool_context, "session", None)
    for event in reversed(getattr(session, "events", None) or ()):
        calls = event.get_function_calls() if hasattr(event, "get_function_calls") else ()
        if any(getattr(c, "id", None) == call_id for c in calls or ()):
            return getattr(event, "id", None)
    return None


def adk_tools(
    dispatcher: AsyncDispatcher | Dispatcher,
    *,
    names: Iterable[str] | None = None,
    policy: PolicyChoice = None,
    max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
) -> list[XerjAdkTool]:
    """One ADK tool per tool of ``dispatcher.registry`` (or of `names`), for ``Agent(tools=)``.

    An `AsyncDispatcher` runs on ADK's event loop; a sync `Dispatcher` runs each call on a
    worker thread.

    `policy` is a `Policy` for every run, or a function of the call's `ToolContext` that returns
    the run's (``lambda ctx: POLICIES[ctx.state["tenant"]]``, or by ``ctx.user_id``); None uses
    the dispatcher's. A function that raises or returns no `Policy` gets the call refused
    ``policy_denied``, nothing sent. `max_calls_per_turn` (16; None: no bound): the calls of
    one model response past it are answered ``too_many_calls`` and not run.
    """
    registry = dispatcher.registry
    chosen = chosen_tools(registry, names)
    runner = CallRunner(dispatcher)
    guard = RunGuard(dispatcher, policy, max_calls_per_turn)
    return [
        XerjAdkTool(
            name, registry[name].description, dict(registry[name].parameters), runner, guard
        )
        for name in chosen
    ]
