"""What both dispatchers share: their keywords, checked once, and a turn's plan and answers
(no I/O)."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from .._exceptions import ClosedError, ConfigurationError, InvalidToolCallError, ToolCallError
from .._http._gate import resolve_bound
from .._http._retry import RetryPolicy
from .._http._transport import Endpoint, TransportSettings
from .._message._budget import DEFAULT_BUDGET, Budget, checked_budget
from .._schema._registry import ToolRegistry, load_registry
from .._shapes import ToolCall, parse_tool_call, parse_turn
from ..tools import Handler, Tool
from ._answers import PendingAnswers, checked_max_calls, too_many_calls
from ._core import DispatchCore, Prepared, ToolResult, _raised
from ._options import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    Limits,
    Timeout,
    check_budgets,
    check_credential,
    check_handlers,
    check_url_option,
    check_verify,
    checked_limits,
    checked_timeout,
    checked_tools,
    count,
    flag,
    of_type,
    seconds,
)
from ._policy import Policy, call_policy

if TYPE_CHECKING:
    import httpx2

__all__ = ["BaseDispatcher", "Begun"]

ClientT = TypeVar("ClientT", bound="httpx2.Client | httpx2.AsyncClient")
SleepT = TypeVar("SleepT", bound=Callable[[float], Any])


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


class BaseDispatcher(Generic[ClientT, SleepT]):
    """What `Dispatcher` and `AsyncDispatcher` share: their keywords (one signature, checked
    once: `Dispatcher`'s docstring lists them), and a turn's plan (identical calls sent once)
    and its answers, whole or salvaged after an interruption. Each dispatcher adds how it sends
    (`_connect`), for its kind of client and ``sleep``."""

    def __init__(
        self,
        registry: ToolRegistry | None = None,
        *,
        handlers: Mapping[str, Handler] | None = None,
        tools: Sequence[Tool] = (),
        url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        authorization: str | None = None,
        client: ClientT | None = None,
        policy: Policy | None = None,
        repair: bool = True,
        budget: int | Budget = DEFAULT_BUDGET,
        budgets: Mapping[str, int | Budget] | None = None,
        max_buckets: int = 25,
        rerank_fallback: bool = True,
        rerank_memory_seconds: float = 300.0,
        retry: RetryPolicy | None = None,
        timeout: Timeout | float = DEFAULT_TIMEOUT,
        verify: bool | str | ssl.SSLContext = True,
        limits: Limits = DEFAULT_LIMITS,
        sleep: SleepT | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_url_option(url)
        check_credential("api_key", api_key)
        check_credential("authorization", authorization)
        check_handlers(handlers)
        tools = checked_tools(tools)
        of_type("retry", retry, RetryPolicy, "a RetryPolicy")
        of_type("policy", policy, Policy, "a Policy")
        flag("rerank_fallback", rerank_fallback)
        flag("repair", repair)
        seconds("rerank_memory_seconds", rerank_memory_seconds, zero=True)
        self.timeout, self.limits = checked_timeout(timeout), checked_limits(limits)
        check_verify(verify)
        count("max_buckets", max_buckets)
        checked_budget(budget)
        check_budgets(budgets)
        if not callable(clock):
            raise ConfigurationError("clock must be a function returning monotonic seconds")
        self._core = DispatchCore(
            registry if registry is not None else load_registry(), handlers, tools=tools,
            rerank_fallback=rerank_fallback, rerank_memory_seconds=rerank_memory_seconds,
            repair=repair, budget=budget, budgets=budgets, max_buckets=max_buckets,
            policy=policy, clock=clock,
        )  # fmt: skip
        self.registry, self.policy = self._core.registry, self._core.policy
        self._endpoint = Endpoint.create(url, api_key=api_key, authorization=authorization)
        most = self.limits.max_response_bytes
        self._settings = TransportSettings(
            connect_timeout=self.timeout.connect,
            read_timeout=self.timeout.read,
            verify=verify,
            pool_size=self.limits.pool_size,
            max_response_bytes=min(most, self.policy.max_response_bytes or most),
        )
        self.retry = retry if retry is not None else RetryPolicy()
        self._closed = False
        # The in-flight bound is read before a client is made; waiting for a slot is bounded
        # by the pool timeout of the client the requests wait for.
        bound = resolve_bound(self.limits.max_in_flight, client, self.limits.pool_size)
        pool_timeout = self.timeout.read if client is None else client.timeout.pool
        self._connect(client, sleep, bound, pool_timeout)

    def _connect(
        self, client: ClientT | None, sleep: SleepT | None, bound: int | None, pool: float | None
    ) -> None:
        """Make the transport (on `client`, or an owned one), the in-flight gate of `bound`
        slots (None: no gate) whose wait ends with the `pool` timeout, and keep `sleep`."""
        raise NotImplementedError

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
        assistant: Any,
        policy: Policy | None,
        max_calls: int | None,
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
        policy: Policy | None,
        max_calls: int | None,
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
