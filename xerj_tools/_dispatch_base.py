"""What both dispatchers share: configuration, and the plan and answers of a turn (no I/O)."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._answers import PendingAnswers
from ._budget import Budget
from ._core import DispatchCore, Prepared, ToolResult
from ._deadline import DEFAULT_DEADLINE
from ._exceptions import ClosedError, ConfigurationError, ToolCallError
from ._policy import Policy
from ._registry import ToolRegistry, load_registry
from ._retry import RetryPolicy
from ._shapes import ToolCall, parse_tool_call, parse_turn
from ._transport import Endpoint, TransportSettings
from .tools import Handler, Tool

__all__ = ["BaseDispatcher", "Begun"]


Begun = tuple[ToolCall, "Prepared | ToolCallError", float]


class BaseDispatcher:
    """What `Dispatcher` and `AsyncDispatcher` share: their configuration, and a turn's plan
    (identical calls sent once) and its answers, whole or salvaged after an interruption."""

    def __init__(
        self,
        registry: ToolRegistry | None,
        *,
        url: str | Sequence[str] | None,
        api_key: str | None,
        authorization: str | None,
        handlers: Mapping[str, Handler] | None,
        tools: Sequence[Tool],
        retry: RetryPolicy | None,
        rerank_fallback: bool,
        rerank_memory_seconds: float,
        connect_timeout: float,
        read_timeout: float,
        verify: bool | str | ssl.SSLContext,
        pool_size: int,
        max_response_bytes: int,
        repair: bool,
        budget: int | Budget,
        budgets: Mapping[str, int | Budget] | None,
        max_buckets: int,
        policy: Policy | None,
        clock: Callable[[], float],
        deadline: float = DEFAULT_DEADLINE,
    ) -> None:
        if not (0 < deadline < float("inf")):
            raise ConfigurationError("deadline must be a positive number of seconds")
        self.deadline = deadline
        self._core = DispatchCore(
            registry if registry is not None else load_registry(),
            handlers,
            tools=tools,
            rerank_fallback=rerank_fallback,
            rerank_memory_seconds=rerank_memory_seconds,
            repair=repair,
            budget=budget,
            budgets=budgets,
            max_buckets=max_buckets,
            policy=policy,
            clock=clock,
        )
        self.registry, self.policy = self._core.registry, self._core.policy
        self._endpoint = Endpoint.create(url, api_key=api_key, authorization=authorization)
        self._settings = TransportSettings(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            verify=verify,
            pool_size=pool_size,
            max_response_bytes=min(
                max_response_bytes, self.policy.max_response_bytes or max_response_bytes
            ),
        )
        self.retry = retry if retry is not None else RetryPolicy()
        self._closed = False

    @property
    def url(self) -> str:
        """The (first) node's base URL."""
        return self._endpoint.base_url

    @property
    def urls(self) -> tuple[str, ...]:
        return self._endpoint.base_urls

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r}, tools={list(self.registry.names)!r})"

    def _begin(self, call: Any) -> Begun:
        started, tool_call = self._core.clock(), parse_tool_call(call)
        return tool_call, self._core.prepare(tool_call), started

    def _open_turn(
        self, calls: Iterable[Any], transcript: list[Any] | None
    ) -> tuple[PendingAnswers, float]:
        """Parse a turn's calls and put a ``cancelled`` answer to each into `transcript` at
        once, to be replaced by the real ones (see `_answers`)."""
        if self._closed:
            raise ClosedError(f"this {type(self).__name__} was closed; make a new one")
        started = self._core.clock()
        return PendingAnswers(transcript, parse_turn(calls)), started

    def _plan(
        self, calls: Sequence[ToolCall], started: float
    ) -> tuple[list[Begun], list[int], dict[int, int]]:
        """Prepare every call; pick the ones to send (identical valid calls are sent once)."""
        begun: list[Begun] = [(c, self._core.prepare(c), started) for c in calls]
        first_of: dict[str, int] = {}
        unique: list[int] = []
        copies: dict[int, int] = {}
        if len(begun) < 2:
            return begun, list(range(len(begun))), copies
        for i, (_, prepared, _) in enumerate(begun):
            if isinstance(prepared, Prepared) and prepared.key in first_of:
                copies[i] = first_of[prepared.key]
                continue
            if isinstance(prepared, Prepared):
                first_of[prepared.key] = i
            unique.append(i)
        return begun, unique, copies

    def _assemble(
        self, begun: list[Begun], unique: list[int], copies: dict[int, int], done: list[ToolResult]
    ) -> list[ToolResult]:
        by_index = dict(zip(unique, done, strict=True))
        for i, original in copies.items():
            tool_call, _, started = begun[i]
            by_index[i] = self._core.duplicate(tool_call, by_index[original], started)
        return [by_index[i] for i in range(len(begun))]

    def _salvage(
        self,
        answers: PendingAnswers,
        started: float,
        copies: dict[int, int],
        finished: dict[int, ToolResult],
    ) -> None:
        """An interrupted turn: what finished, and ``cancelled`` for the rest."""
        for i in answers.unanswered():
            call, source = answers.calls[i], copies.get(i, i)
            if source not in finished:
                result = self._core.cancelled(call, started)
            elif source != i:
                result = self._core.duplicate(call, finished[source], started)
            else:
                result = finished[source]
            answers.put(i, result.message)

    @staticmethod
    def _answer_all(answers: PendingAnswers, results: list[ToolResult]) -> list[ToolResult]:
        for i, result in enumerate(results):
            answers.put(i, result.message)
        return results
