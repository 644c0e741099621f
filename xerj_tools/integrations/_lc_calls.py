"""What a LangChain chat model's turn said about its tool calls, read as the agent loop reads a
turn: the arguments as the model streamed them, whether the output was cut off, and which call
it was cut off inside; and the answers of a turn (`TurnAnswers`). Shared by `XerjMiddleware`
and `XerjToolNode`.

A streamed turn loses its argument text on the way to the `AIMessage`: langchain-core joins the
chunks and decodes each call with ``parse_partial_json`` (``messages/ai.py``,
``AIMessageChunk.init_tool_calls``), which completes partial JSON, so a call cut off by
``max_tokens`` inside ``"chec`` and a call missing its last ``}`` both land in ``tool_calls``
as whole objects; then ``message_chunk_to_message`` drops the chunks (``messages/utils.py``).
Unstreamed, the same calls land in ``invalid_tool_calls`` with their text.

So a callback handler (`RECORDER`), added to every LangChain run of the process through
langchain-core's configure hook (``tracers/context.py``, ``register_configure_hook``) once this
module is imported, keeps the argument text of each streamed chat-model turn that made tool
calls, as the chunks came (``on_llm_new_token``), under the turn's message id and call ids
(``on_llm_end``). It changes no message and sees nothing else; a turn's record lives for the
last `KEPT` turns. A message whose record is gone (another process, a hand-made message) is
read from what it holds, fail-closed: in a turn cut off, its last call is taken as cut.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from uuid import UUID

from .._agent._run import fresh_ids, whole_arguments
from .._agent._turns import incomplete_reason
from .._dispatch._answers import too_many_calls
from .._dispatch._core import ToolResult
from .._dispatch._policy import Policy
from .._shapes import ToolCall, parse_tool_call

try:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
    from langchain_core.tracers.context import register_configure_hook
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from .._install import missing_extra

    raise missing_extra("xerj_tools.integrations", "langchain-core", "langchain") from exc

if TYPE_CHECKING:
    from ._per_run import RunGuard

__all__ = ["RECORDER", "Call", "TurnAnswers", "turn_calls"]

# Finish reasons of a turn that ended before its output was whole, as the providers spell them
# (OpenAI Chat ``length`` / ``content_filter``, Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``).
_CUT = {"length", "content_filter", "max_tokens", "MAX_TOKENS"}
_SIZE_ONLY = Policy()  # whole_arguments decodes nothing over the default argument cap


def cut_off(message: AIMessage) -> str | None:
    """The finish reason of a turn cut off before its output was whole, else None."""
    meta = message.response_metadata or {}
    for key in ("finish_reason", "stop_reason"):
        reason = meta.get(key)
        if isinstance(reason, str) and reason in _CUT:
            return "length" if reason.lower() == "max_tokens" else reason
    if meta.get("status") == "incomplete":  # the Responses API
        details = meta.get("incomplete_details") or {}
        return "content_filter" if details.get("reason") == "content_filter" else "length"
    return None


@dataclass(frozen=True)
class Call:
    """One tool call of a turn, in the model's order: `arguments` is the text the model sent
    when it is known (streamed, or unparsed), else the decoded object; `cut`, the turn's finish
    reason, marks the call the output was cut off inside."""

    id: str | None
    name: str
    arguments: Any
    cut: str | None = None
    parsed: bool = True  # in ``tool_calls`` (else in ``invalid_tool_calls``)


@dataclass(frozen=True)
class _Turn:
    """The record of a turn: its calls' ``(id, name, text)`` in the order they streamed, or
    None for a turn that was not streamed (its parsed calls are whole)."""

    calls: tuple[tuple[str | None, str, str], ...] | None


def _key(message_id: Any, ids: Sequence[Any]) -> Hashable:
    return (message_id, tuple(sorted(str(i) for i in ids)))


def _ids(message: AIMessage) -> list[Any]:
    return [c.get("id") for c in message.tool_calls] + [
        c.get("id") for c in message.invalid_tool_calls
    ]


class _Recorder(BaseCallbackHandler):
    """Keeps the argument text of streamed chat-model turns (see the module's docstring)."""

    run_inline = True  # called in the run's own thread or task, in order
    ignore_chain = ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True
    KEPT = 512

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[UUID, dict[Any, list[str]]] = OrderedDict()
        self._kept: OrderedDict[Hashable, _Turn | None] = OrderedDict()

    def on_llm_new_token(
        self, token: Any, *, chunk: Any = None, run_id: UUID, **kwargs: Any
    ) -> None:
        pieces = getattr(getattr(chunk, "message", None), "tool_call_chunks", None)
        if not pieces:
            return
        with self._lock:
            calls = self._open.get(run_id)
            if calls is None:
                calls = self._open[run_id] = {}
                while len(self._open) > self.KEPT:  # runs that never ended
                    self._open.popitem(last=False)
            _join(calls, pieces)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            streamed = self._open.pop(run_id, None)
        generations = getattr(response, "generations", None) or [[]]
        first = generations[0][0] if generations and generations[0] else None
        message = getattr(first, "message", None)
        if not isinstance(message, AIMessage) or message.id is None:
            return
        ids = _ids(message)
        if not ids:
            return
        record = _Turn(None if streamed is None else _as_texts(streamed))
        key = _key(message.id, ids)
        with self._lock:
            # Two turns under one key (a server that repeats its ids) are told apart by
            # neither: the key is spoilt, and both are read fail-closed.
            self._kept[key] = None if key in self._kept else record
            self._kept.move_to_end(key)
            while len(self._kept) > self.KEPT:
                self._kept.popitem(last=False)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._open.pop(run_id, None)

    def turn(self, message: AIMessage) -> _Turn | None:
        """The record of `message`'s turn, if one is kept."""
        if message.id is None:
            return None
        with self._lock:
            return self._kept.get(_key(message.id, _ids(message)))


RECORDER = _Recorder()
_ACTIVE: ContextVar[_Recorder | None] = ContextVar("xerj_tools_streamed_calls", default=RECORDER)
register_configure_hook(_ACTIVE, False)  # a local handler of each run, never inherited twice


def _parsed(message: AIMessage) -> list[Call]:
    calls = [Call(c.get("id"), c.get("name") or "", c.get("args")) for c in message.tool_calls]
    calls += [
        Call(c.get("id"), c.get("name") or "", c.get("args") or "", parsed=False)
        for c in message.invalid_tool_calls
    ]
    return calls


def _join(calls: dict[Any, list[str]], pieces: Sequence[Any]) -> None:
    """Add streamed call chunks to `calls` as langchain-core merges them (``merge_lists``): by
    index, strings joined."""
    for piece in pieces:
        index = piece.get("index")
        entry = calls.setdefault(len(calls) if index is None else ("i", index), ["", "", ""])
        for at, field in enumerate(("id", "name", "args")):
            value = piece.get(field)
            if isinstance(value, str):
                entry[at] += value


def _as_texts(calls: dict[Any, list[str]]) -> tuple[tuple[str | None, str, str], ...]:
    return tuple((e[0] or None, e[1], e[2]) for e in calls.values())


def _texts(message: AIMessage) -> tuple[tuple[tuple[str | None, str, str], ...] | None, bool]:
    """The streamed calls' ``(id, name, text)`` in the model's order (None: not streamed), and
    whether that is known at all."""
    if isinstance(message, AIMessageChunk) and message.tool_call_chunks:
        joined: dict[Any, list[str]] = {}
        _join(joined, message.tool_call_chunks)
        return _as_texts(joined), True
    record = RECORDER.turn(message)
    return (None, False) if record is None else (record.calls, True)


def _whole(text: str) -> bool:
    # no text at all is ``{}`` to LangChain and to the dispatcher alike
    return text == "" or whole_arguments(text, _SIZE_ONLY)


def turn_calls(message: AIMessage) -> list[Call]:
    """The message's tool calls as the model sent them, the cut one marked.

    Streamed (a record kept, or the chunks of an `AIMessageChunk`): every call carries its
    text, in the model's order, and in a turn cut off the last one is cut when its text is no
    whole JSON object. Not streamed: parsed calls (whole) then unparsed ones with their text,
    and the last unparsed one is the cut one. Unknown: as not streamed, but when every call
    parsed, the last one is taken as cut (it may be LangChain's completion of a cut call)."""
    reason = cut_off(message)
    texts, known = _texts(message)
    if texts is not None:
        calls = [Call(i, name, text, parsed=_whole(text)) for i, name, text in texts]
        if reason is not None and calls and not whole_arguments(calls[-1].arguments, _SIZE_ONLY):
            calls[-1] = replace(calls[-1], cut=reason)
        return calls
    calls = _parsed(message)
    if reason is None or not calls:
        return calls
    unparsed = [at for at, c in enumerate(calls) if not c.parsed]
    if unparsed:
        calls[unparsed[-1]] = replace(calls[unparsed[-1]], cut=reason)
    elif not known:
        calls[-1] = replace(calls[-1], cut=reason)
    return calls


def with_ids(message: AIMessage, renamed: dict[int, str]) -> AIMessage:
    """A copy of `message` whose calls carry the ids `fresh_ids` gave them (positions counted
    over ``tool_calls`` then ``invalid_tool_calls``, as `turn_calls` lists an unstreamed turn;
    for a streamed one, the model's order, which LangChain keeps within each list)."""
    order = _order(message)
    parsed = [dict(c) for c in message.tool_calls]
    invalid = [dict(c) for c in message.invalid_tool_calls]
    for position, new in renamed.items():
        if position < len(order):
            kind, at = order[position]
            (parsed if kind == "parsed" else invalid)[at]["id"] = new
    return message.model_copy(update={"tool_calls": parsed, "invalid_tool_calls": invalid})


def _order(message: AIMessage) -> list[tuple[str, int]]:
    """Where each call of `turn_calls(message)` sits in the message: (list, index)."""
    texts, _ = _texts(message)
    if texts is None:
        return [("parsed", i) for i in range(len(message.tool_calls))] + [
            ("invalid", i) for i in range(len(message.invalid_tool_calls))
        ]
    # streamed: each list keeps the model's order; a call is in `tool_calls` when it parsed
    out: list[tuple[str, int]] = []
    counts = {"parsed": 0, "invalid": 0}
    for _, _, text in texts:
        kind = "parsed" if _partial_object(text) else "invalid"
        out.append((kind, counts[kind]))
        counts[kind] += 1
    return out


def _partial_object(text: str) -> bool:
    """Whether LangChain's ``parse_partial_json`` makes an object of `text` (so that the call
    lands in ``tool_calls``)."""
    from langchain_core.utils.json import parse_partial_json

    if not text:
        return True  # no arguments: LangChain takes ``{}``
    try:
        return isinstance(parse_partial_json(text), dict)
    except Exception:
        return False


def _as_chat_call(call_id: str, call: Call) -> dict[str, Any]:
    """`call` as a Chat Completions tool call, for the dispatcher."""
    arguments = call.arguments
    if arguments is None:
        arguments = ""  # anything else is the dispatcher's to judge (a list: invalid_json)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


class TurnAnswers:
    """The answers of `message`'s turn by position: made already (`ready`), or to run through
    the dispatcher (`todo`, by policy). `calls` are the turn's (`turn_calls`) by position, each
    with its id; `message` is the AI message with the ids `fresh_ids` gave, if it gave any."""

    def __init__(
        self, dispatcher: Any, guard: RunGuard, bound: int | None, config: Any, message: AIMessage
    ) -> None:
        self.dispatcher, self._guard, self._bound, self._config = dispatcher, guard, bound, config
        calls = turn_calls(message)
        renamed = fresh_ids([c.id for c in calls])
        self.message = with_ids(message, renamed) if renamed else None
        self.calls = [
            (position, renamed.get(position) or call.id or "", call)
            for position, call in enumerate(calls)
        ]
        self.ready: dict[int, ToolResult] = {}
        self.todo: dict[int, tuple[Policy | None, list[tuple[int, ToolCall]]]] = {}

    def add(self, position: int, counted: int, call_id: str, call: Call) -> None:
        """Answer `call` now when it is past the turn bound (`counted` calls came before it) or
        the one a cut-off turn ended inside; else queue it under the run's policy, or answer the
        refusal when no policy could be chosen."""
        tool_call = parse_tool_call(_as_chat_call(call_id, call))
        if self._bound is not None and counted >= self._bound:
            refusal = too_many_calls(self._bound)
            self.ready[position] = self.dispatcher.answer(tool_call, refusal.code, str(refusal))
        elif call.cut is not None:
            reason = incomplete_reason(call.cut)
            self.ready[position] = self.dispatcher.answer(tool_call, "incomplete_call", reason)
        else:
            policy, refused = self._guard.check(tool_call, None, None, self._config)
            if refused is not None:
                self.ready[position] = refused
            else:
                self.todo.setdefault(id(policy), (policy, []))[1].append((position, tool_call))

    def run(self) -> None:
        """Run the queued calls through a sync `Dispatcher`, one ``run_many`` per policy."""
        for policy, calls in self.todo.values():
            self._take(calls, self.dispatcher.run_many([c for _, c in calls], policy=policy))

    async def arun(self) -> None:
        """Run the queued calls natively or, for a sync `Dispatcher`, on a worker thread."""
        from .._dispatch._async import AsyncDispatcher

        for policy, calls in self.todo.values():
            todo = [c for _, c in calls]
            if isinstance(self.dispatcher, AsyncDispatcher):
                results = await self.dispatcher.run_many(todo, policy=policy)
            else:
                results = await asyncio.to_thread(self.dispatcher.run_many, todo, policy=policy)
            self._take(calls, results)

    def _take(self, calls: list[tuple[int, ToolCall]], results: Sequence[ToolResult]) -> None:
        for (position, _), result in zip(calls, results, strict=True):
            self.ready[position] = result

    def tool_messages(self) -> list[ToolMessage]:
        """The answers made, in the turn's order, as tool messages."""
        return [
            ToolMessage(
                content=result.content,
                tool_call_id=result.call.call_id,
                name=result.call.name or None,
                status="success" if result.ok else "error",
            )
            for result in (self.ready[p] for p in sorted(self.ready))
        ]
