"""LangChain: the registry's tools as `BaseTool`s over a dispatcher, for `create_agent` and `ToolNode`.

    from langchain.agents import create_agent
    from xerj_tools import Dispatcher
    from xerj_tools.integrations.langchain import XerjMiddleware, xerj_tools

    with Dispatcher() as dispatcher:
        agent = create_agent(model, tools=xerj_tools(dispatcher),
                             middleware=[XerjMiddleware(dispatcher)])
        state = agent.invoke({"messages": [("user", "Why did checkout break?")]})

Each tool's ``args_schema`` is the registry's JSON Schema (a dict), which LangChain hands on
without validating it (langchain-core ``tools/base.py``, ``_parse_input``: a dict schema returns
the input as is), so the model's arguments reach the dispatcher whole: invalid arguments, audited
repairs and engine failures come back as the envelope, in a `ToolMessage` with
``status="error"`` where the envelope says ``ok: false``. A tool whose schema is a pydantic model
would answer the same call with pydantic's error text instead.

Arguments that are not JSON never reach a tool when the model is not streamed: LangChain puts
such a call in ``AIMessage.invalid_tool_calls``. `create_agent` then answers it only in the
request it sends next, with a fixed text ("Tool call NAME with id ID could not be executed -
arguments were malformed or truncated.", langchain ``agents/factory.py``,
``_invalid_tool_call_message``), and when a turn holds no valid call it ends the run there
(``model_to_tools``: no ``tool_calls``, to the end). A streamed model (``ChatOpenAI(streaming=True)``)
hides them instead: langchain-core completes partial JSON, so a call cut off by ``max_tokens``
or missing its last ``}`` lands in ``tool_calls`` as a guess (see `_lc_calls`).

`XerjMiddleware` reads each turn as the agent loop does, by the text the model sent, and answers
in the state, before the tools run, the calls that must not run (its docstring says which). For
a graph built by hand, `XerjToolNode` (``xerj_tools.integrations.langgraph``) does the same.

`policy` (of `xerj_tools` and of `XerjMiddleware`; give both the same) chooses a run's policy:
a `Policy`, or a function of the run's `RunnableConfig` (``config["configurable"]``; LangGraph's
``context=`` is ``langgraph.runtime.get_runtime().context`` inside it), failing closed: a
function that raises or returns no `Policy` gets the call refused ``policy_denied``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._dispatch._answers import checked_max_calls
from .._exceptions import ConfigurationError
from .._shapes import ToolCall
from ._flights import CallRunner
from ._lc_calls import TurnAnswers
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard, chosen_tools

try:
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain_core.messages import AIMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, ToolException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra("xerj_tools.integrations.langchain", "LangChain", "langchain") from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._core import ToolResult
    from .._dispatch._policy import Policy
    from .._dispatch._sync import Dispatcher

__all__ = ["XerjMiddleware", "XerjTool", "xerj_tools"]

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("xerj_call_id", default=None)


def _scope(config: RunnableConfig | None) -> Any:
    """One agent turn: a turn's calls run as tasks of one LangGraph step, which share the step's
    checkpoint (``checkpoint_map``) and thread; outside a graph, each call is its own scope."""
    config = config or {}
    configurable = config.get("configurable") or {}
    step = configurable.get("checkpoint_map")
    if not isinstance(step, dict) or not step:
        return object()
    metadata = config.get("metadata") or {}
    return (
        configurable.get("thread_id"),
        tuple(sorted(step.items())),
        metadata.get("langgraph_step"),
    )


def _envelope(error: ToolException) -> str:
    return str(error.args[0])  # the envelope, whole: no prefix, no rewording


class XerjTool(BaseTool):
    """One registry tool over a dispatcher; make them with `xerj_tools`."""

    handle_tool_error: Any = _envelope  # an envelope with ``ok: false``: status "error", as is
    runner: Any = None
    guard: Any = None  # the run's policy and the turn bound (`RunGuard`)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        token = _CALL_ID.set(_id_of(input))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _CALL_ID.reset(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        token = _CALL_ID.set(_id_of(input))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def _checked(
        self, args: Any, kwargs: Any, config: RunnableConfig
    ) -> tuple[ToolCall, Any, Policy | None, ToolResult | None]:
        """The call, its scope, and the run's policy for it or the answer that refuses it (past
        the turn bound, or no policy could be chosen)."""
        call = ToolCall(_CALL_ID.get() or self.name, self.name, args[0] if args else kwargs, "chat")
        scope = _scope(config)
        run = repr(scope) if isinstance(scope, tuple) else scope  # a LangGraph step, or a call
        guard: RunGuard = self.guard
        return (call, scope, *guard.check(call, run, 0, config))

    def _run(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> str:
        runner: CallRunner = self.runner
        if runner.native:
            raise ConfigurationError(
                "xerj_tools over an AsyncDispatcher run with ainvoke/astream; use a Dispatcher "
                "for invoke"
            )
        call, scope, policy, refused = self._checked(args, kwargs, config)
        return _content(refused or runner.run_sync(call, scope, policy))

    async def _arun(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> str:
        runner: CallRunner = self.runner
        call, scope, policy, refused = self._checked(args, kwargs, config)
        return _content(refused or await runner.run(call, scope, policy))


def _content(result: ToolResult) -> str:
    if not result.ok:
        raise ToolException(result.content)
    return result.content


def _id_of(input: Any) -> str | None:
    if isinstance(input, dict) and input.get("type") == "tool_call":
        call_id = input.get("id")
        return call_id if isinstance(call_id, str) else None
    return None


def xerj_tools(
    dispatcher: AsyncDispatcher | Dispatcher,
    *,
    names: Iterable[str] | None = None,
    policy: PolicyChoice = None,
    max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
) -> list[BaseTool]:
    """One `BaseTool` per tool of ``dispatcher.registry`` (or of `names`), for ``create_agent``,
    ``ToolNode`` or ``model.bind_tools``.

    A sync `Dispatcher` serves ``invoke`` and ``ainvoke`` (on a worker thread); an
    `AsyncDispatcher` serves ``ainvoke`` only. Identical calls of one turn in flight together
    (same tool, same arguments after repair) are sent to XERJ once; each call gets its answer.
    `policy`: see the module's docstring. `max_calls_per_turn` (16; None: no bound): the calls
    of one LangGraph step past it, counted as they start, are answered ``too_many_calls`` and
    not run (`XerjMiddleware` answers them by their place in the turn before they start).
    """
    registry = dispatcher.registry
    chosen = chosen_tools(registry, names)
    runner = CallRunner(dispatcher, per_turn=True)  # a scope is one LangGraph step
    guard = RunGuard(dispatcher, policy, max_calls_per_turn)
    return [
        XerjTool(
            name=name,
            description=registry[name].description,
            args_schema=dict(registry[name].parameters),
            runner=runner,
            guard=guard,
        )
        for name in chosen
    ]


def _run_config() -> RunnableConfig:
    """The config of the graph run the middleware's hook runs in (empty outside one)."""
    try:
        from langgraph.config import get_config

        return get_config()
    except RuntimeError:  # called outside a runnable
        return {}


class XerjMiddleware(AgentMiddleware):
    """For `create_agent`: reads each model turn by the text the model sent and answers, in the
    state, the registry's calls that must not run: malformed (``invalid_json`` and the like),
    cut off (``incomplete_call``), past `max_calls_per_turn` (``too_many_calls``); gives a
    call without an id one; and sends a turn left with no call to run back to the model
    instead of ending the run. The other calls are the tools' (`xerj_tools`)."""

    def __init__(
        self,
        dispatcher: AsyncDispatcher | Dispatcher,
        *,
        policy: PolicyChoice = None,
        max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
    ) -> None:
        super().__init__()
        self.dispatcher = dispatcher
        self._guard = RunGuard(dispatcher, policy, None)
        self._bound = checked_max_calls(max_calls_per_turn)

    @staticmethod
    def _last(state: Any) -> AIMessage | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        return last if isinstance(last, AIMessage) else None

    def _read(self, message: AIMessage) -> TurnAnswers:
        answers = TurnAnswers(self.dispatcher, self._guard, self._bound, _run_config(), message)
        ours = 0  # the registry's calls so far: the turn bound counts those
        for position, call_id, call in answers.calls:
            if call.name not in self.dispatcher.registry:
                continue
            # a call that parsed is the tools' to run, unless it is past the bound or cut off
            if not call.parsed or call.cut or (self._bound is not None and ours >= self._bound):
                answers.add(position, ours, call_id, call)
            ours += 1
        return answers

    @staticmethod
    def _update(message: AIMessage, answers: TurnAnswers) -> dict[str, Any] | None:
        if not answers.ready and answers.message is None:
            return None
        update: dict[str, Any] = {"messages": answers.tool_messages()}
        if answers.message is not None:
            update["messages"].insert(0, answers.message)  # merged by id: replaces the turn
        turn = answers.message or message
        answered = {r.call.call_id for r in answers.ready.values()}
        if not [c for c in turn.tool_calls if c.get("id") not in answered]:
            update["jump_to"] = "model"  # else the run would end on a turn with nothing to run
        return update

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        from .._dispatch._async import AsyncDispatcher

        message = self._last(state)
        if message is None:
            return None
        answers = self._read(message)
        if answers.todo and isinstance(self.dispatcher, AsyncDispatcher):
            raise ConfigurationError(
                "XerjMiddleware over an AsyncDispatcher runs with ainvoke/astream; use a "
                "Dispatcher for invoke"
            )
        answers.run()
        return self._update(message, answers)

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        message = self._last(state)
        if message is None:
            return None
        answers = self._read(message)
        await answers.arun()
        return self._update(message, answers)
