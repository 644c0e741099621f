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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._dispatch._answers import checked_max_calls
from .._exceptions import ConfigurationError
from ._lc_calls import TurnAnswers
from ._per_run import MAX_CALLS_PER_TURN, PolicyChoice, RunGuard

try:
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.runnables import Runnable, RunnableConfig
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra("xerj_tools.integrations.langgraph", "LangGraph", "langgraph") from exc

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

    def _read_turn(self, state: Any, config: RunnableConfig | None) -> TurnAnswers:
        messages = _messages(state, self.messages_key)
        at, message = _last_ai(messages)
        answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
        turn = TurnAnswers(self.dispatcher, self._guard, self._bound, config, message)
        if turn.message is not None and isinstance(state, list):
            raise ValueError(
                "a tool call without an id (or with an id another call of its turn has) can be "
                "answered only in a graph state, where the AI message is replaced with one whose "
                "calls carry ids; pass the state, not a list of messages"
            )
        for position, call_id, call in turn.calls:
            if call_id not in answered:
                turn.add(position, position, call_id, call)
        return turn

    def _output(self, state: Any, turn: TurnAnswers) -> Any:
        answers: list[Any] = turn.tool_messages()
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
        turn.run()
        return self._output(state, turn)

    async def _arun(self, state: Any, run_manager: Any, config: RunnableConfig) -> Any:
        turn = self._read_turn(state, config)
        await turn.arun()
        return self._output(state, turn)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._run, input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(self._arun, input, config)
