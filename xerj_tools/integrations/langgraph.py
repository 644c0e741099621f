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

The turn is read as the agent loop reads it (`_lc_calls`): a streamed model's calls by the text
it streamed, not by LangChain's completion of partial JSON, so broken JSON is ``invalid_json``;
in a turn cut off (``finish_reason`` ``length``), the call it was cut inside is answered
``incomplete_call`` and not run; the calls past `max_calls_per_turn` are answered
``too_many_calls``; a call without an id (or with an id another call of the turn has) gets one,
written into the AI message, which the node returns with its answers (a state whose messages
are merged by id, as ``add_messages`` does, replaces it).

`policy` chooses the policy of a run: a `Policy`, or a function of the run's `RunnableConfig`
(``lambda config: POLICIES[config["configurable"]["tenant"]]``; LangGraph's ``context=`` is
``langgraph.runtime.get_runtime().context`` inside it). A function that raises or returns no
`Policy` gets every call refused ``policy_denied``, nothing sent (``_per_run``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._agent._turns import incomplete_reason
from .._dispatch._answers import checked_max_calls, too_many_calls
from .._dispatch._core import ToolResult
from .._dispatch._policy import Policy
from .._exceptions import ConfigurationError
from .._shapes import parse_tool_call
from ._lc_calls import as_chat_call, cut_off, fresh_ids, turn_calls, with_ids
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard

try:
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.runnables import Runnable, RunnableConfig
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import install_hint

    raise ImportError(
        "xerj_tools.integrations.langgraph needs LangGraph, the `langgraph` extra: "
        f"{install_hint('langgraph')}"
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


def _last_ai(messages: Sequence[AnyMessage]) -> tuple[int, AIMessage]:
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, AIMessage):
            return at, message
    raise ValueError("no AIMessage found in the input")


def _answer(result: ToolResult) -> ToolMessage:
    return ToolMessage(
        content=result.content,
        tool_call_id=result.call.call_id,
        name=result.call.name or None,
        status="success" if result.ok else "error",
    )


class XerjToolNode(Runnable[Any, Any]):
    """A LangGraph node that answers the last AI message's tool calls with `ToolMessage`s.

    Every call id gets one answer, in the model's order where the turn was streamed (else the
    parsed calls, then the malformed ones): each with ``status="error"`` where the envelope
    says ``ok: false``. Calls already answered by a `ToolMessage` after that AI message are
    skipped. The input is the graph state (a mapping or an object with `messages_key`) or a
    list of messages; the output is ``{messages_key: [...]}`` or the list of tool messages,
    like the prebuilt `ToolNode` (see the module's docstring for cut-off turns, the turn bound,
    calls without ids and `policy`).

    With a sync `Dispatcher` both ``invoke`` and ``ainvoke`` work (``ainvoke`` runs the turn on
    a worker thread); an `AsyncDispatcher` runs natively under ``ainvoke`` / ``astream``, and
    ``invoke`` raises `ConfigurationError`.
    """

    name = "tools"

    def __init__(
        self,
        dispatcher: AsyncDispatcher | Dispatcher,
        *,
        messages_key: str = "messages",
        policy: PolicyChoice = None,
        max_calls_per_turn: int | None = MAX_CALLS_PER_TURN,
    ) -> None:
        from .._dispatch._async import AsyncDispatcher

        self.dispatcher = dispatcher
        self.messages_key = messages_key
        self._native = isinstance(dispatcher, AsyncDispatcher)
        self._guard = RunGuard(dispatcher, policy, None)  # the policy; the bound is counted here
        self._bound = checked_max_calls(max_calls_per_turn)

    def _read_turn(self, state: Any, config: RunnableConfig | None) -> _Turn:
        messages = _messages(state, self.messages_key)
        at, message = _last_ai(messages)
        answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
        calls = turn_calls(message)
        renamed = fresh_ids([c.id for c in calls])
        if renamed and isinstance(state, list):
            raise ValueError(
                "a tool call without an id (or with an id another call of its turn has) can be "
                "answered only in a graph state, where the AI message is replaced with one whose "
                "calls carry ids; pass the state, not a list of messages"
            )
        turn = _Turn(with_ids(message, renamed) if renamed else None)
        for position, call in enumerate(calls):
            call_id = renamed.get(position) or call.id or ""
            if call_id in answered:
                continue
            tool_call = parse_tool_call(as_chat_call(call_id, call))
            if self._bound is not None and position >= self._bound:
                refusal = too_many_calls(self._bound)
                turn.ready[position] = self.dispatcher.answer(tool_call, refusal.code, str(refusal))
            elif call.cut:
                reason = incomplete_reason(cut_off(message) or "length")
                turn.ready[position] = self.dispatcher.answer(tool_call, "incomplete_call", reason)
            else:
                policy, refused = self._guard.check(tool_call, None, None, config)
                if refused is not None:
                    turn.ready[position] = refused
                else:
                    turn.todo.setdefault(id(policy), (policy, []))[1].append((position, tool_call))
        return turn

    def _output(self, state: Any, turn: _Turn) -> Any:
        answers: list[Any] = [_answer(turn.ready[p]) for p in sorted(turn.ready)]
        if isinstance(state, list):
            return answers
        if turn.message is not None:
            answers.insert(0, turn.message)  # merged by id: replaces the AI message
        return {self.messages_key: answers}

    def _run(self, state: Any, run_manager: Any, config: RunnableConfig) -> Any:
        if self._native:
            raise ConfigurationError(
                "XerjToolNode over an AsyncDispatcher runs with ainvoke/astream (an async graph); "
                "use a Dispatcher for invoke"
            )
        turn = self._read_turn(state, config)
        for policy, calls in turn.todo.values():
            results = self.dispatcher.run_many([c for _, c in calls], policy=policy)
            assert isinstance(results, list)
            turn.take(calls, results)
        return self._output(state, turn)

    async def _arun(self, state: Any, run_manager: Any, config: RunnableConfig) -> Any:
        turn = self._read_turn(state, config)
        dispatcher: Any = self.dispatcher
        for policy, calls in turn.todo.values():
            todo = [c for _, c in calls]
            if self._native:
                results = await dispatcher.run_many(todo, policy=policy)
            else:
                results = await asyncio.to_thread(dispatcher.run_many, todo, policy=policy)
            turn.take(calls, results)
        return self._output(state, turn)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._run, input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(self._arun, input, config)


class _Turn:
    """A turn's answers by position: made already (`ready`), or to run, grouped by policy."""

    def __init__(self, message: AIMessage | None) -> None:
        self.message = message  # the AI message with the ids it was given, if any
        self.ready: dict[int, ToolResult] = {}
        self.todo: dict[int, tuple[Policy | None, list[tuple[int, Any]]]] = {}

    def take(self, calls: list[tuple[int, Any]], results: Sequence[ToolResult]) -> None:
        for (position, _), result in zip(calls, results, strict=True):
            self.ready[position] = result
