"""Token usage: read from a model response's `usage` (either OpenAI API), summed over a run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenUsage", "read_usage"]


@dataclass(frozen=True)
class TokenUsage:
    """Tokens the model reported, summed over the responses that reported them.

    `responses` counts those responses: fewer than the run's turns means some answers came
    without `usage` (a streamed Chat Completion does unless it is asked for with
    ``stream_options={"include_usage": True}``), and the figures are a lower bound.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    responses: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.responses + other.responses,
        )


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _count(value: Any) -> int | None:
    # The server is not trusted: only a non-negative integer counts (a bool is not one).
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _first(usage: Any, *keys: str) -> int | None:
    for key in keys:
        if (value := _count(_get(usage, key))) is not None:
            return value
    return None


def read_usage(response: Any) -> TokenUsage | None:
    """The `usage` of a Chat Completion (or its last stream chunk) or of a Responses response;
    None when there is none or it holds no token count."""
    usage = _get(response, "usage")
    if usage is None or isinstance(usage, (str, bytes)):
        return None
    # Chat Completions names them prompt/completion tokens; the Responses API input/output.
    given = _first(usage, "input_tokens", "prompt_tokens")
    taken = _first(usage, "output_tokens", "completion_tokens")
    total = _first(usage, "total_tokens")
    if given is None and taken is None and total is None:
        return None
    inputs = _get(usage, "input_tokens_details") or _get(usage, "prompt_tokens_details")
    outputs = _get(usage, "output_tokens_details") or _get(usage, "completion_tokens_details")
    given, taken = given or 0, taken or 0
    return TokenUsage(
        input_tokens=given,
        output_tokens=taken,
        total_tokens=given + taken if total is None else total,
        cached_input_tokens=_first(inputs, "cached_tokens") or 0,
        reasoning_tokens=_first(outputs, "reasoning_tokens") or 0,
        responses=1,
    )
