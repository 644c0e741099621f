"""The bookkeeping of an agent run, shared by the sync and async loops: its results and events,
figures per tool, the loop guard and the hooks' verdicts. Reading a model turn is the wire
shape's business (`xerj_tools._shapes`: `step` and `assembler`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .._bounds import loads, value_problem
from .._shapes import ToolCall
from .._shapes._usage import TokenUsage

__all__ = [
    "AgentEvent",
    "AgentResult",
    "RunFinished",
    "RunOutcome",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultEvent",
    "ToolStats",
    "TurnFinished",
]

RunOutcome = Literal["completed", "max_turns", "length", "content_filter"]
"""Why a run ended (`AgentResult.outcome`)."""


@dataclass
class ToolStats:
    """Figures for one tool over a run."""

    calls: int = 0
    errors: int = 0
    retries: int = 0
    repairs: int = 0
    denied: int = 0
    latency: float = 0.0  # seconds, summed over calls
    max_latency: float = 0.0


@dataclass
class AgentResult:
    """The end of a run: why it ended, the final text, the whole transcript and the figures:
    per tool (`tool_stats`) and the model's tokens summed over the run (`usage`)."""

    outcome: RunOutcome
    output_text: str
    transcript: list[Any]
    turns: int
    tool_stats: dict[str, ToolStats]
    usage: TokenUsage = field(default_factory=TokenUsage)

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    call: ToolCall


@dataclass(frozen=True)
class ToolResultEvent:
    result: Any  # ToolResult


@dataclass(frozen=True)
class TurnFinished:
    turn: int
    finish_reason: str


@dataclass(frozen=True)
class RunFinished:
    result: AgentResult


AgentEvent = TextDelta | ToolCallStarted | ToolResultEvent | TurnFinished | RunFinished


def call_key(call: ToolCall) -> str:
    """Tool and canonical arguments: the identity the loop guard counts."""
    arguments: Any = call.arguments
    if isinstance(arguments, bytes):
        arguments = arguments.decode("utf-8", "replace")
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments)
        except ValueError:  # not JSON, or too deep: the text itself is the identity
            return f"{call.name}\x00{arguments}"
    elif value_problem({"_": arguments}) is not None:
        return f"{call.name}\x00<unbounded {type(arguments).__name__} {id(arguments)}>"
    return f"{call.name}\x00{json.dumps(arguments, sort_keys=True, default=str)}"


def record(stats: dict[str, ToolStats], result: Any) -> None:
    entry = stats.setdefault(result.call.name or "?", ToolStats())
    entry.calls += 1
    if not result.ok:
        entry.errors += 1
    if result.code == "denied":
        entry.denied += 1
    entry.retries += max(0, result.attempts - 1)
    if result.payload.get("repairs"):
        entry.repairs += 1
    entry.latency += result.elapsed
    entry.max_latency = max(entry.max_latency, result.elapsed)


def incomplete_reason(finish_reason: str) -> str:
    """The reason of ``incomplete_call``: the one call the output was cut off inside."""
    return (
        f"your output was cut off (finish_reason {finish_reason}) inside this call, before its "
        "arguments were complete, so it was not run; the turn's other calls were whole and ran"
    )


def final_outcome(finish_reason: str) -> RunOutcome:
    if finish_reason == "length":
        return "length"
    if finish_reason == "content_filter":
        return "content_filter"
    return "completed"


def deny_reason(verdict: Any) -> str | None:
    """`on_tool_call` returns None/True to allow, False or a reason string to deny."""
    if verdict is None or verdict is True:
        return None
    if isinstance(verdict, str):
        return verdict
    return "the user did not approve this call"
