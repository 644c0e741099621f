"""The state of one agent run, shared by the sync and async loops (`_agent._loop`): its model
requests, transcript, figures and loop guard, and the options it passes through to ``create()``."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._bounds import loads
from .._dispatch._answers import PendingAnswers, too_many_calls
from .._dispatch._core import ToolResult
from .._exceptions import MaxTurnsExceeded
from .._shapes import Step, ToolCall, loop_shape
from . import _trace_turns
from ._agent_options import AgentOptions
from ._turns import (
    AgentEvent,
    AgentResult,
    RunFinished,
    ToolCallStarted,
    ToolStats,
    TurnFinished,
    call_key,
    deny_reason,
    final_outcome,
    incomplete_reason,
    record,
)

if TYPE_CHECKING:
    from .._dispatch._base import BaseDispatcher
from .._shapes._usage import TokenUsage

__all__ = ["CUT_OFF", "AgentRun", "fresh_ids", "whole_arguments"]

CUT_OFF = ("length", "content_filter")  # the output ended before its calls were whole


class AgentRun:
    """The state of one run, shared by every driver: transcript, figures, loop guard."""

    def __init__(
        self,
        dispatcher: BaseDispatcher[Any, Any],
        model: str,
        messages: Any,
        options: AgentOptions,
        stream: bool,
    ) -> None:
        self.turn = 0
        self.stream = stream if options.stream is None else options.stream  # the options win
        self.on_tool_call, self.on_tool_result = options.on_tool_call, options.on_tool_result
        self.shape = loop_shape(options.api)  # the wire shape: definitions, requests, replies
        self.max_calls = options.max_calls_per_turn
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        # A list is extended in place, so that the caller holds a valid transcript even when
        # the run is interrupted.
        self.transcript: list[Any] = messages if isinstance(messages, list) else list(messages)
        self.dispatcher, self.model = dispatcher, model
        self.max_turns, self.max_repeats = options.max_turns, options.max_repeats
        self.on_max_turns = options.on_max_turns
        self.create_options = dict(options.create_options or {})
        self.stats: dict[str, ToolStats] = {}
        self.usage = TokenUsage()
        self.seen: Counter[str] = Counter()
        self.last_text = ""
        self.answers = PendingAnswers(None, [])  # the current turn's
        self.ready: dict[str, ToolResult] = {}  # its calls answered without XERJ
        self.tools = self.shape.definitions(dispatcher.registry)
        self.trace = _trace_turns.NO_TURN

    def begin(self, turn: int) -> None:
        """A turn starts: its span, when something traces."""
        self.turn = turn
        self.trace = _trace_turns.turn(turn, self.model, self.shape.name)

    def ask(self, client: Any) -> Any:
        """The turn's model request, made with the turn's span current (awaitable from an async
        client; a stream of chunks when the run streams)."""
        request = {
            "model": self.model,
            str(self.shape.request_key): list(self.transcript),
            "tools": self.tools,
            **self.create_options,
        }
        if self.stream:
            request["stream"] = True
        return self.trace.call(self.shape.create(client), **request)

    def over_bound(self, position: int, call: ToolCall) -> ToolResult | None:
        """A call past `max_calls_per_turn` in its turn is answered without being run."""
        if position < self.max_calls:
            return None
        refusal = too_many_calls(self.max_calls)
        return self.answer(call, refusal.code, str(refusal))

    def screen(self, call: ToolCall) -> ToolResult | None:
        """The loop guard: a call repeated past `max_repeats` is answered without XERJ.

        Arguments over the policy's size cap are left to dispatch, which refuses them before
        reading them: the guard never decodes what the cap would refuse."""
        if self.dispatcher.policy.check_size(call.arguments) is not None:
            return None
        key = call_key(call)
        self.seen[key] += 1
        if self.seen[key] > self.max_repeats:
            times = self.seen[key] - 1
            reason = (
                f"this exact call was already made {times} times in this run; its result is above"
            )
            return self.answer(call, "repeated_call", reason)
        return None

    def answer(self, call: ToolCall, code: str, reason: str) -> ToolResult:
        with self.trace.use():  # its span, if any, belongs to the turn
            return self.dispatcher.answer(call, code, reason)

    def deny(self, call: ToolCall, verdict: Any) -> ToolResult | None:
        reason = deny_reason(verdict)
        return None if reason is None else self.answer(call, "denied", reason)

    def cut(self, step: Step, position: int, call: ToolCall) -> ToolResult | None:
        """The call the model's output was cut off inside, answered ``incomplete_call``.

        In a turn that ended ``length`` or ``content_filter``, only the last call can have been
        cut (a turn's calls come one after another), and only if its arguments are not a whole
        JSON object (no prefix of an object is one). The turn's other calls are whole and run."""
        if step.finish_reason not in CUT_OFF or position != len(step.calls) - 1:
            return None
        if whole_arguments(call.arguments, self.dispatcher.policy):
            return None
        return self.answer(call, "incomplete_call", incomplete_reason(step.finish_reason))

    def settle(self, position: int, answer: ToolResult | None, todo: list[ToolCall]) -> None:
        """A call the loop guard or `on_tool_call` stopped is answered now; others go to `todo`."""
        call = self.answers.calls[position]
        if answer is None:
            todo.append(call)
        else:
            self.ready[call.call_id] = answer
            self.answers.put(position, answer.message)

    def interrupted(self, sink: list[Any]) -> None:
        """After an interruption: the answers the dispatcher made, ``cancelled`` for the other
        calls (their spans under the turn), then the exception goes on."""
        self.answers.by_id(sink)
        with self.trace.use():
            for position in self.answers.unanswered():
                call = self.answers.calls[position]
                self.answers.put(position, self.dispatcher.cancelled(call).message)
        self.trace.end(error=sys.exc_info()[1])

    def results(self, step: Step, done: Sequence[ToolResult]) -> list[ToolResult]:
        """The turn's answers in call order, put into the transcript and counted in the figures."""
        by_id = {r.call.call_id: r for r in done}
        results = [self.ready.get(c.call_id) or by_id[c.call_id] for c in step.calls]
        for position, result in enumerate(results):
            self.answers.put(position, result.message)
            record(self.stats, result)
        return results

    def take(self, step: Step) -> list[AgentEvent]:
        """The model answered: its turn joins the transcript together with a ``cancelled``
        answer to each call, replaced as real answers come (see `_answers`), so that the
        transcript is valid wherever the run is interrupted."""
        self.last_text = step.text or self.last_text
        self.usage += step.usage or TokenUsage()
        unique_call_ids(step, self.turn)
        self.answers = PendingAnswers(self.transcript, step.calls, before=step.items)
        self.ready = {}
        return [ToolCallStarted(call) for call in step.calls]

    def close(self, turn: int, step: Step) -> list[AgentEvent]:
        """The turn is over; a turn without calls also ends the run (``length`` or
        ``content_filter`` when its text was cut off). A turn with calls goes on, cut off or
        not: the model reads their answers, the cut call's ``incomplete_call`` among them."""
        self.trace.end(step.finish_reason, len(step.calls))
        events: list[AgentEvent] = [TurnFinished(turn, step.finish_reason)]
        if not step.calls:
            events.append(self.end(final_outcome(step.finish_reason), turn))
        return events

    def end(self, outcome: Any, turns: int) -> RunFinished:
        result = AgentResult(
            outcome, self.last_text, self.transcript, turns, self.stats, self.usage
        )
        if outcome == "max_turns" and self.on_max_turns == "raise":
            raise MaxTurnsExceeded(result)
        return RunFinished(result)


def whole_arguments(arguments: Any, policy: Any) -> bool:
    """Whether a call's arguments are a whole JSON object (or an object already decoded).

    Arguments over the policy's size cap are not decoded here: dispatch refuses them unread."""
    if not isinstance(arguments, (str, bytes)):
        return True  # decoded by an SDK or a caller: whatever it is, nothing was cut
    if policy.check_size(arguments) is not None:
        return True
    try:
        text = arguments.decode("utf-8") if isinstance(arguments, bytes) else arguments
        return isinstance(loads(text), dict)
    except ValueError:  # not JSON (UnicodeDecodeError and TooDeep are ValueErrors too)
        return False


def fresh_ids(ids: Sequence[str | None], prefix: str = "xerj_") -> dict[int, str]:
    """New ids, by position, for the calls of a turn that have none or one an earlier call has:
    ``<prefix><position>`` for a missing or empty id, ``<id>_<position>`` for one already used,
    with ``_`` added until it is free. Ids that are already unique are kept (and not listed)."""
    taken = {i for i in ids if i}
    seen: set[str] = set()
    renamed: dict[int, str] = {}
    for position, call_id in enumerate(ids):
        new = call_id or ""
        if not new or new in seen:
            new = f"{new}_{position}" if new else f"{prefix}{position}"
            while new in taken or new in seen:
                new += "_"
            renamed[position] = new
        seen.add(new)
    return renamed


def unique_call_ids(step: Step, turn: int) -> None:
    """Give every call of a model turn an id of its own (`fresh_ids`, ``xerj_<turn>_<position>``
    for a missing one), in its calls and in the assistant turn the transcript keeps (in place):
    answers are matched to calls by id, and the API refuses a turn whose answers do not pair one
    to one with its calls."""
    renamed = fresh_ids([call.call_id for call in step.calls], f"xerj_{turn}_")
    if not renamed:
        return
    for position, new in renamed.items():
        step.calls[position] = dataclasses.replace(step.calls[position], call_id=new)
    wire: list[dict[str, Any]] = []  # the calls as the transcript keeps them, in order
    for item in step.items:
        if item.get("role") == "assistant":
            wire += item.get("tool_calls") or []
        elif item.get("type") == "function_call":
            wire.append(item)
    key = "call_id" if step.calls[0].api == "responses" else "id"
    for position, new in renamed.items():
        if position < len(wire):
            wire[position][key] = new
