"""A turn's answers, held in the transcript from the moment its calls join it.

The model APIs reject a transcript in which a tool call is not answered exactly once, after the
call and in call order. An interruption can land anywhere: a `KeyboardInterrupt`, a cancelled
task (even one cancelled before it ever ran), an exception from a hook, a consumer that stops
iterating a stream and never resumes it. So each call's answer enters the transcript together
with the call, in one list operation, as a ``cancelled`` answer; the real answer replaces it in
place once it is known. Whatever stops a turn, and wherever, the transcript is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._calls import ToolCall
from ._exceptions import EngineError
from ._format import dumps, error_payload

__all__ = ["PendingAnswers", "cancelled_answer"]

CANCELLED = "the turn was interrupted before this call finished"  # as DispatchCore.cancelled


def cancelled_answer(call: ToolCall) -> Any:
    """The answer a call holds until its own is known. Not an outcome yet: no span, no log."""
    return call.answer(
        dumps(error_payload(call.name or "?", EngineError(CANCELLED, code="cancelled")))
    )


class PendingAnswers:
    """One answer slot per call, in call order, kept in `transcript` (when there is one)."""

    def __init__(
        self,
        transcript: list[Any] | None,
        calls: Sequence[ToolCall],
        *,
        before: Sequence[Any] = (),
    ) -> None:
        self.calls = list(calls)
        self._transcript = transcript
        self._start = 0
        self._answered = [False] * len(self.calls)
        self._slots: list[Any] = [None] * len(self.calls)
        if transcript is not None:
            self._slots = [cancelled_answer(call) for call in self.calls]
            self._start = len(transcript) + len(before)
            transcript.extend([*before, *self._slots])  # one operation: never half done

    def put(self, position: int, message: Any) -> None:
        """The answer to the call at `position`, in place of what stood there."""
        old, self._slots[position] = self._slots[position], message
        self._answered[position] = True
        transcript = self._transcript
        if transcript is None:
            return
        guess = self._start + position
        if guess < len(transcript) and transcript[guess] is old:
            transcript[guess] = message
            return
        for i, item in enumerate(transcript):  # the caller moved things meanwhile
            if item is old:
                transcript[i] = message
                return

    def unanswered(self) -> list[int]:
        """The positions of the calls that still hold their placeholder."""
        return [i for i, answered in enumerate(self._answered) if not answered]

    def by_id(self, messages: Sequence[Any]) -> None:
        """Take answers from tool messages (either API's shape), matched by call id."""
        found = {str(m.get("tool_call_id") or m.get("call_id")): m for m in messages}
        for position, call in enumerate(self.calls):
            if call.call_id in found:
                self.put(position, found[call.call_id])
