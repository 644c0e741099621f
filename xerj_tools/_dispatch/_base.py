"""What both dispatchers share: configuration, and the plan and answers of a turn (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from .._exceptions import ClosedError, ConfigurationError, InvalidToolCallError, ToolCallError
from .._http._retry import RetryPolicy
from .._http._transport import Endpoint, TransportSettings
from .._schema._registry import ToolRegistry, load_registry
from .._shapes import ToolCall, parse_tool_call, parse_turn
from ..tools import Tool
from ._answers import PendingAnswers, checked_max_calls, too_many_calls
from ._core import DispatchCore, Prepared, ToolResult, _raised
from ._options import Settings
from ._policy import Policy, call_policy

__all__ = ["BaseDispatcher", "Begun"]


class Begun(NamedTuple):
    """A call parsed and prepared (validated, repaired, policy-checked, its request built) and
    not yet sent: what `BaseDispatcher.begin` returns and `complete` takes."""

    call: ToolCall
    prepared: Prepared | ToolCallError  # the request to send, or why nothing is sent
    started: float  # the dispatcher's clock when the call was begun

    @property
    def key(self) -> str | None:
        """Identical calls share it (same tool, same arguments after repair); None when the
        call is refused, since a refusal is never sent."""
        return self.prepared.key if isinstance(self.prepared, Prepared) else None


class BaseDispatcher:
    """What `Dispatcher` and `AsyncDispatcher` share: their configuration, and a turn's plan
    (identical calls sent once) and its answers, whole or salvaged after an interruption."""

    def __init__(self, registry: ToolRegistry | None, options: Settings) -> None:
        self.deadline = options.deadline
        self._core = DispatchCore(
            registry if registry is not None else load_registry(),
            options.handlers,
            tools=options.tools,
            rerank_fallback=options.rerank_fallback,
            rerank_memory_seconds=options.rerank_memory_seconds,
            repair=options.repair,
            budget=options.budget,
            budgets=options.budgets,
            max_buckets=options.max_buckets,
            policy=options.policy,
            clock=options.clock,
        )
        self.registry, self.policy = self._core.registry, self._core.policy
        self._endpoint = Endpoint.create(
            options.url, api_key=options.api_key, authorization=options.authorization
        )
        cap = self.policy.max_response_bytes or options.max_response_bytes
        self._settings = TransportSettings(
            connect_timeout=options.connect_timeout,
            read_timeout=options.read_timeout,
            verify=options.verify,
            pool_size=options.pool_size,
            max_response_bytes=min(options.max_response_bytes, cap),
        )
        self.retry = options.retry if options.retry is not None else RetryPolicy()
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

    # --- the seam for agent loops and integrations: a call in two steps, answers without XERJ

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The tools this dispatcher serves, by name: the library's own, plain handlers and
        custom tools (read-only)."""
        return MappingProxyType(self._core.tools)

    def begin(self, call: Any, *, policy: Policy | None = None) -> Begun:
        """Parse `call` (any wire shape) and prepare it; nothing is sent. `complete` sends it,
        or answers the refusal; `Begun.key` tells identical calls apart for de-duplication.
        `policy` replaces the dispatcher's for this call (see `dispatch`)."""
        policy = call_policy(policy)
        started, tool_call = self._core.clock(), parse_tool_call(call)
        return Begun(tool_call, self._prepare(tool_call, policy), started)

    def answer(self, call: ToolCall, code: str, reason: str) -> ToolResult:
        """An error answer to `call` made without XERJ (a loop refusing or denying it), with
        `code` from `ERROR_CODES`."""
        return self._core.answer(call, code, reason)

    def cancelled(self, call: ToolCall, started: float | None = None) -> ToolResult:
        """The ``cancelled`` answer to a call that did not finish."""
        return self._core.cancelled(call, self._core.clock() if started is None else started)

    def copy_of(self, call: ToolCall, first: ToolResult, started: float) -> ToolResult:
        """The answer to `call`, identical to the call `first` answers, which was sent once."""
        return self._core.duplicate(call, first, started)

    def _prepare(self, call: ToolCall, policy: Policy | None = None) -> Prepared | ToolCallError:
        """The call's request, or what is wrong with it. Whatever raises while the request is
        validated or built is answered (``handler_error``, logged with where it was raised):
        nothing a model sends makes `dispatch` raise."""
        try:
            return self._core.prepare(call, policy)
        except Exception as exc:
            return _raised(call.name, "dispatcher", exc)

    def _crashed(self, call: ToolCall, exc: Exception, started: float) -> ToolResult:
        """The answer to a call whose request raised while it was sent or read (an `httpx` error
        that is no `HTTPError`, a bug): ``handler_error``, logged, never raised out of `dispatch`."""
        return self._core.refusal(call, _raised(call.name, "dispatcher", exc), started)

    def _response_cap(self, prepared: Prepared) -> int | None:
        """A call's own policy's response cap, when it is lower than the dispatcher's."""
        own = prepared.policy.max_response_bytes
        return own if own is not None and own < self._settings.max_response_bytes else None

    def _open_turn(
        self,
        calls: Iterable[Any],
        transcript: list[Any] | None,
        assistant: Any = None,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> tuple[PendingAnswers, float]:
        """Parse a turn's calls and put a ``cancelled`` answer to each into `transcript` at
        once, to be replaced by the real ones (see `_answers`).

        An interrupt (KeyboardInterrupt, or anything but `InvalidToolCallError`) that lands
        while the calls are parsed or their answers made, before they join `transcript`, still
        leaves each call answered ``cancelled`` there: the caller's assistant turn, already in
        `transcript`, is never left without its answers. `assistant` (the model's turn) joins
        `transcript` with the answers, in one operation."""
        size = -1 if transcript is None else len(transcript)
        try:  # an interrupt can land outside it on `size` or on `try` only
            if assistant is not None and transcript is None:
                raise ConfigurationError(
                    "assistant= goes with transcript=: it joins the transcript"
                )
            call_policy(policy)
            checked_max_calls(max_calls)
            before = () if assistant is None else (assistant,)
            if transcript is not None:
                calls = list(calls)  # read once: parsed again below if interrupted
            if self._closed:
                raise ClosedError(f"this {type(self).__name__} was closed; make a new one")
            started = self._core.clock()
            return PendingAnswers(transcript, parse_turn(calls), before=before), started
        except (InvalidToolCallError, ClosedError, ConfigurationError):
            raise  # the caller's mistake: nothing sent, nothing added (documented)
        except BaseException:
            # the answers' `extend` is one operation: if the transcript grew, it is done
            if transcript is not None and len(transcript) == size and isinstance(calls, list):
                before = () if assistant is None else (assistant,)
                PendingAnswers(transcript, parse_turn(calls), before=before)
            raise

    def _plan(
        self,
        calls: Sequence[ToolCall],
        started: float,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> tuple[list[Begun], list[int], dict[int, int]]:
        """Prepare every call; pick the ones to send (identical valid calls are sent once).
        The calls past the first `max_calls` are answered ``too_many_calls``, not prepared."""
        limit = len(calls) if max_calls is None else max_calls
        begun = [
            Begun(c, self._prepare(c, policy) if i < limit else too_many_calls(limit), started)
            for i, c in enumerate(calls)
        ]
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
