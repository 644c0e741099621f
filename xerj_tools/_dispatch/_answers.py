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

from .._exceptions import ConfigurationError, EngineError, ToolCallError
from .._message._format import dumps, error_payload
from .._shapes import ToolCall, answers_by_id, grouped, turn_messages

__all__ = ["PendingAnswers", "cancelled_answer", "checked_max_calls", "too_many_calls"]

CANCELLED = "the turn was interrupted before this call finished"  # as DispatchCore.cancelled


def cancelled_answer(call: ToolCall) -> Any:
    """The answer a call holds until its own is known. Not an outcome yet: no span, no log."""
    return call.answer(
        dumps(error_payload(EngineError(CANCELLED, code="cancelled"))),
        ok=False,
    )


class PendingAnswers:
    """One answer slot per call, in call order, kept in `transcript` (when there is one).

    The slots join the transcript as the calls' shape groups them (`turn_messages`): one entry
    each for the OpenAI APIs, one user message (content) holding them all for Anthropic (Gemini). Each slot is
    replaced where it stands: in the transcript, or in that user message's content list.
    """

    def __init__(
        self,
        transcript: list[Any] | None,
        calls: Sequence[ToolCall],
        *,
        before: Sequence[Any] = (),
    ) -> None:
        self.calls = list(calls)
        self._transcript = transcript
        self._answered = [False] * len(self.calls)
        self._slots: list[Any] = [None] * len(self.calls)
        # Where each slot stands: the list that holds it and its index there (a first guess).
        self._homes: list[tuple[list[Any], int]] = []
        if transcript is not None:
            self._slots = [cancelled_answer(call) for call in self.calls]
            entries = turn_messages(self._slots)
            start = len(transcript) + len(before)
            where = {id(slot): i for i, slot in enumerate(self._slots)}
            homes: dict[int, tuple[list[Any], int]] = {}
            for offset, entry in enumerate(entries):
                if id(entry) in where:
                    homes[where[id(entry)]] = (transcript, start + offset)
                    continue
                content = grouped(entry)
                if content is None:
                    continue
                for j, block in enumerate(content):
                    if id(block) in where:
                        homes[where[id(block)]] = (content, j)
            self._homes = [homes[i] for i in range(len(self._slots))]
            transcript.extend([*before, *entries])  # one operation: never half done

    def put(self, position: int, message: Any) -> None:
        """The answer to the call at `position`, in place of what stood there."""
        old, self._slots[position] = self._slots[position], message
        self._answered[position] = True
        if self._transcript is None:
            return
        home, guess = self._homes[position]
        if guess < len(home) and home[guess] is old:
            home[guess] = message
            return
        for holder in (home, self._transcript):  # the caller moved things meanwhile
            for i, item in enumerate(holder):
                if item is old:
                    holder[i] = message
                    return

    def unanswered(self) -> list[int]:
        """The positions of the calls that still hold their placeholder."""
        return [i for i, answered in enumerate(self._answered) if not answered]

    def by_id(self, messages: Sequence[Any]) -> None:
        """Take answers from transcript entries (any shape's, grouped ones too), by call id."""
        found = dict(answers_by_id(messages))
        for position, call in enumerate(self.calls):
            if call.call_id in found:
                self.put(position, found[call.call_id])


def too_many_calls(limit: int) -> ToolCallError:
    """The answer to a call past the first `limit` of its turn (``too_many_calls``): not run."""
    return ToolCallError(
        f"this turn made more than {limit} calls; only the first {limit} were run. Use their "
        "results, and make this call in a later turn if it is still needed",
        code="too_many_calls",
    )


def checked_max_calls(limit: object) -> int | None:
    """A bound on a turn's calls: None (no bound) or a whole number of at least 1."""
    if limit is None or (type(limit) is int and limit >= 1):
        return limit
    raise ConfigurationError(
        f"max_calls must be a whole number of at least 1, or None; got {limit!r:.40}"
    )
