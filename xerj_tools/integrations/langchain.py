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

Arguments that are not JSON never reach a tool: LangChain puts such a call in
``AIMessage.invalid_tool_calls``. `create_agent` then answers it only in the request it sends
next, with a fixed text ("Tool call NAME with id ID could not be executed - arguments were
malformed or truncated.", langchain ``agents/factory.py``, ``_invalid_tool_call_message``), and when
a turn holds no valid call it ends the run there (``model_to_tools``: no ``tool_calls``, to the
end). `XerjMiddleware` answers each such call of the registry's tools with the dispatcher's
``invalid_json`` envelope (where the JSON broke) in the state itself, and sends a turn that held
only those back to the model. For a graph built by hand, `XerjToolNode`
(``xerj_tools.integrations.langgraph``) answers both kinds.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigurationError
from .._shapes import ToolCall
from ._flights import CallRunner

try:
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, ToolException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "xerj_tools.integrations.langchain needs LangChain: pip install 'xerj-tools[langchain]'"
    ) from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
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

    def _call(self, arguments: Any) -> ToolCall:
        return ToolCall(_CALL_ID.get() or self.name, self.name, arguments, "chat")

    def _run(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> str:
        runner: CallRunner = self.runner
        if runner.native:
            raise ConfigurationError(
                "xerj_tools over an AsyncDispatcher run with ainvoke/astream; use a Dispatcher "
                "for invoke"
            )
        result = runner.run_sync(self._call(args[0] if args else kwargs), _scope(config))
        if not result.ok:
            raise ToolException(result.content)
        return result.content

    async def _arun(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> str:
        runner: CallRunner = self.runner
        result = await runner.run(self._call(args[0] if args else kwargs), _scope(config))
        if not result.ok:
            raise ToolException(result.content)
        return result.content


def _id_of(input: Any) -> str | None:
    if isinstance(input, dict) and input.get("type") == "tool_call":
        call_id = input.get("id")
        return call_id if isinstance(call_id, str) else None
    return None


def xerj_tools(
    dispatcher: AsyncDispatcher | Dispatcher, *, names: Iterable[str] | None = None
) -> list[BaseTool]:
    """One `BaseTool` per tool of ``dispatcher.registry`` (or of `names`), for ``create_agent``,
    ``ToolNode`` or ``model.bind_tools``.

    A sync `Dispatcher` serves ``invoke`` and ``ainvoke`` (on a worker thread); an
    `AsyncDispatcher` serves ``ainvoke`` only. Identical calls of one turn in flight together
    (same tool, same arguments after repair) are sent to XERJ once; each call gets its answer.
    """
    registry = dispatcher.registry
    chosen = list(registry.names if names is None else names)
    unknown = [n for n in chosen if n not in registry]
    if unknown:
        raise ConfigurationError(f"no such tool in the registry: {', '.join(unknown)}")
    runner = CallRunner(dispatcher, per_turn=True)  # a scope is one LangGraph step
    return [
        XerjTool(
            name=name,
            description=registry[name].description,
            args_schema=dict(registry[name].parameters),
            runner=runner,
        )
        for name in chosen
    ]


def _malformed(dispatcher: Any, message: AIMessage) -> list[dict[str, Any]]:
    """The message's calls that did not parse, of the registry's tools, as Chat tool calls with
    the text the model sent."""
    return [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c.get("args") or ""},
        }
        for c in message.invalid_tool_calls
        if c.get("id") and c.get("name") in dispatcher.registry
    ]


def _tool_messages(results: list[Any]) -> list[ToolMessage]:
    return [
        ToolMessage(
            content=r.content,
            tool_call_id=r.call.call_id,
            name=r.call.name,
            status="success" if r.ok else "error",
        )
        for r in results
    ]


class XerjMiddleware(AgentMiddleware):
    """For `create_agent`: answers the last AI message's malformed calls (``invalid_tool_calls``)
    of the registry's tools with the dispatcher's envelope, in the state, and sends a turn that
    held only those back to the model instead of ending the run. Parsed calls are the tools'."""

    def __init__(self, dispatcher: AsyncDispatcher | Dispatcher) -> None:
        super().__init__()
        self.dispatcher = dispatcher

    @staticmethod
    def _last(state: Any) -> AIMessage | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        return last if isinstance(last, AIMessage) else None

    @staticmethod
    def _update(message: AIMessage, answers: list[ToolMessage]) -> dict[str, Any] | None:
        if not answers:
            return None
        update: dict[str, Any] = {"messages": answers}
        if not message.tool_calls:
            update["jump_to"] = "model"  # else the run would end on the unanswered turn
        return update

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        from .._dispatch._async import AsyncDispatcher

        message = self._last(state)
        calls = _malformed(self.dispatcher, message) if message is not None else []
        if message is None or not calls:
            return None
        if isinstance(self.dispatcher, AsyncDispatcher):
            raise ConfigurationError(
                "XerjMiddleware over an AsyncDispatcher runs with ainvoke/astream; use a "
                "Dispatcher for invoke"
            )
        return self._update(message, _tool_messages(self.dispatcher.run_many(calls)))

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        from .._dispatch._async import AsyncDispatcher

        message = self._last(state)
        calls = _malformed(self.dispatcher, message) if message is not None else []
        if message is None or not calls:
            return None
        dispatcher: Any = self.dispatcher
        if isinstance(dispatcher, AsyncDispatcher):
            results = await dispatcher.run_many(calls)
        else:
            results = await asyncio.to_thread(dispatcher.run_many, calls)
        return self._update(message, _tool_messages(results))
