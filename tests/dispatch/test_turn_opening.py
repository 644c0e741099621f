"""`dispatch_many(calls, transcript=…)` by hand: an interrupt landing while the
turn's calls are parsed or their answers made, before anything is sent, never leaves the
assistant turn without its answers; with `assistant=` it never does wherever it lands."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import pytest

from xerj_tools import ConfigurationError, Dispatcher, Limits
from xerj_tools.testing import XerjStandIn

from conftest import chat_call, interrupted

CALLS = [chat_call("xerj_search", {"index": "docs", "query": {"match": {"body": "w"}}}, "c0"),
         chat_call("xerj_search", {"index": "nope", "query": {"match_all": {}}}, "c1")]  # fmt: skip
TURN = {"role": "assistant", "content": None, "tool_calls": CALLS}
OPENING = ("xerj_tools/_dispatch/_answers.py", "xerj_tools/_shapes/")  # parsing, and the placeholders
EVERY = ("xerj_tools/_dispatch/_sync.py", "xerj_tools/_dispatch/_base.py", *OPENING)


def valid(transcript: list[Any], turn_expected: bool) -> bool:
    """The user message, then (when `turn_expected`, or when it is there at all) the turn and one
    answer to each of its calls, in order."""
    if transcript[1:] == [] and not turn_expected:
        return True
    answers = [m.get("tool_call_id") for m in transcript[2:]]
    return transcript[1] is TURN and answers == ["c0", "c1"]


@pytest.mark.parametrize("by_hand", [True, False], ids=["turn-added-by-hand", "assistant="])
def test_an_interrupt_never_leaves_the_turn_unanswered(xerj: XerjStandIn, by_hand: bool) -> None:
    transcript: list[Any] = []

    def job() -> None:
        transcript[:] = [{"role": "user", "content": "q"}]
        if by_hand:  # the turn is in the transcript before dispatch_many starts
            transcript.append(TURN)
            dispatcher.dispatch_many(CALLS, transcript=transcript)
        else:
            dispatcher.dispatch_many(CALLS, transcript=transcript, assistant=TURN)

    # By hand, a turn interrupted before dispatch_many got to its calls (its first lines, the
    # count of running calls) is the caller's to answer: there the calls' parsing and their
    # placeholders are swept: unguarded, a quarter of the points there leave the turn unanswered.
    files = OPENING if by_hand else EVERY
    with Dispatcher(url=xerj.url, limits=Limits(max_workers=1)) as dispatcher:
        total = interrupted(job, files, None)
        assert valid(transcript, True)
        bad = []
        for k in range(1, total + 1):
            interrupted(job, files, k)
            if not valid(transcript, by_hand):
                bad.append((k, transcript[1:]))
    assert bad == []


def test_assistant_goes_with_a_transcript(xerj: XerjStandIn) -> None:
    with Dispatcher(url=xerj.url) as dispatcher, pytest.raises(ConfigurationError):
        dispatcher.dispatch_many(CALLS, assistant=TURN)


def test_by_hand_only_the_entry_lines_can_leave_the_turn_unanswered(xerj: XerjStandIn) -> None:
    """Every line of the dispatcher swept until the answers are placed, the turn added by hand:
    the only points that leave it unanswered are those no code can cover, the line each entry
    runs before its `try` (`dispatch_many`, `run_many`, `_open_turn`'s `size` and `try`).
    An interrupt in `_open_turn`'s argument checks is caught by its `try`, and the turn counts
    as running (`_enter`) only once the answers are placed: an interrupt in either leaves it
    answered."""
    transcript: list[Any] = []
    landed: list[tuple[str, int]] = []
    placed_at: list[int] = []

    def sweep(stop_at: int | None) -> None:
        seen, lines = 0, {}

        def trace(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal seen
            if not any(f in frame.f_code.co_filename for f in EVERY):
                return None
            if event == "line":
                seen += 1
                lines[frame] = lines.get(frame, 0) + 1
                if not placed_at and len(transcript) > 2:
                    placed_at.append(seen)
                if seen == stop_at:
                    landed.append((frame.f_code.co_name, lines[frame]))
                    raise KeyboardInterrupt
            return trace

        transcript[:] = [{"role": "user", "content": "q"}, TURN]
        sys.settrace(trace)
        try:
            dispatcher.dispatch_many(CALLS, transcript=transcript)
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)

    with Dispatcher(url=xerj.url, limits=Limits(max_workers=1)) as dispatcher:
        sweep(None)
        assert valid(transcript, True) and placed_at
        entries = {("dispatch_many", 1), ("run_many", 1), ("_open_turn", 1), ("_open_turn", 2)}
        bad = set()
        for k in range(1, placed_at[0] + 1):
            sweep(k)
            if not valid(transcript, True):
                bad.add(landed[-1])
    assert bad <= entries, sorted(bad - entries)
