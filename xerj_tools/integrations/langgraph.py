"""LangGraph: a tool node that answers every call of a turn through a xerj-tools dispatcher.

    from langgraph.graph import START, MessagesState, StateGraph
    from xerj_tools.integrations.langgraph import XerjToolNode, tools_condition

    model = chat_model.bind_tools(dispatcher.registry.chat_tools())
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", XerjToolNode(dispatcher))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")

It takes the place of the prebuilt `ToolNode` and `tools_condition`, which look at
``AIMessage.tool_calls`` only (langgraph-prebuilt 1.1 ``tool_node.py``, ``_parse_input`` and
``tools_condition``): a call whose arguments did not parse lands in ``invalid_tool_calls``, is
never answered, and the next request to the model carries an unanswered call id, which OpenAI
refuses. Here every call id of the last AI message is answered, malformed ones included, through
one ``run_many``: the turn's calls run concurrently and identical calls are sent once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._dispatch._core import ToolResult
from .._exceptions import ConfigurationError

try:
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.runnables import Runnable, RunnableConfig
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "xerj_tools.integrations.langgraph needs LangGraph: pip install 'xerj-tools[langgraph]'"
    ) from exc

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._sync import Dispatcher

__all__ = ["XerjToolNode", "tools_condition"]


def _messages(state: Any, key: str) -> Sequence[AnyMessage]:
    if isinstance(state, list):
        return state
    messages = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if not messages:
        raise ValueError(f"no messages found in the input (looked for {key!r})")
    return list(messages)


def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """Route to ``"tools"`` when the last message is an AI message with calls to answer, valid
    or malformed; else to the end. The drop-in for the prebuilt `tools_condition`."""
    last = _messages(state, messages_key)[-1]
    if isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls):
        return "tools"
    return "__end__"


def _pending(messages: Sequence[AnyMessage]) -> list[dict[str, Any]]:
    """The last AI message's calls still without an answer, as Chat Completions tool calls."""
    for at in range(len(messages) - 1, -1, -1):
        if isinstance(messages[at], AIMessage):
            break
    else:
        raise ValueError("no AIMessage found in the input")
    message = messages[at]
    assert isinstance(message, AIMessage)
    answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
    calls: list[dict[str, Any]] = []
    # Parsed calls carry their arguments decoded; malformed ones the raw text, as the model sent it.
    given: list[tuple[Any, Any, Any]] = [
        (c["id"], c["name"], c["args"]) for c in message.tool_calls
    ]
    given += [(c["id"], c["name"], c["args"]) for c in message.invalid_tool_calls]
    for call_id, name, arguments in given:
        if not call_id or call_id in answered:
            continue  # a call without an id cannot be answered; OpenAI always sends one
        if arguments is None:
            arguments = ""  # anything else is the dispatcher's to judge (a list: invalid_json)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name or "", "arguments": arguments},
            }
        )
    return calls


def _answer(result: ToolResult) -> ToolMessage:
    return ToolMessage(
        content=result.content,
        tool_call_id=result.call.call_id,
        name=result.call.name or None,
        status="success" if result.ok else "error",
    )


class XerjToolNode(Runnable[Any, Any]):
    """A LangGraph node that answers the last AI message's tool calls with `ToolMessage`s.

    Every call id gets one answer: parsed calls (``tool_calls``) and malformed ones
    (``invalid_tool_calls``: broken JSON, a missing name), in that order, each with
    ``status="error"`` where the envelope says ``ok: false``. Calls already answered by a
    `ToolMessage` after that AI message are skipped. The input is the graph state (a mapping or
    an object with `messages_key`) or a list of messages; the output is ``{messages_key:
    [...]}`` or the list of tool messages, like the prebuilt `ToolNode`.

    With a sync `Dispatcher` both ``invoke`` and ``ainvoke`` work (``ainvoke`` runs the turn on
    a worker thread); an `AsyncDispatcher` runs natively under ``ainvoke`` / ``astream``, and
    ``invoke`` raises `ConfigurationError`.
    """

    name = "tools"

    def __init__(
        self, dispatcher: AsyncDispatcher | Dispatcher, *, messages_key: str = "messages"
    ) -> None:
        from .._dispatch._async import AsyncDispatcher

        self.dispatcher = dispatcher
        self.messages_key = messages_key
        self._native = isinstance(dispatcher, AsyncDispatcher)

    def _wrap(self, state: Any, answers: list[ToolMessage]) -> Any:
        return answers if isinstance(state, list) else {self.messages_key: answers}

    def _run(self, state: Any) -> Any:
        if self._native:
            raise ConfigurationError(
                "XerjToolNode over an AsyncDispatcher runs with ainvoke/astream (an async graph); "
                "use a Dispatcher for invoke"
            )
        calls = _pending(_messages(state, self.messages_key))
        results = self.dispatcher.run_many(calls) if calls else []
        assert isinstance(results, list)
        return self._wrap(state, [_answer(r) for r in results])

    async def _arun(self, state: Any) -> Any:
        calls = _pending(_messages(state, self.messages_key))
        dispatcher: Any = self.dispatcher
        if not calls:
            results: list[ToolResult] = []
        elif self._native:
            results = await dispatcher.run_many(calls)
        else:
            results = await asyncio.to_thread(dispatcher.run_many, calls)
        return self._wrap(state, [_answer(r) for r in results])

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._run, input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(self._arun, input, config)
