"""What both dispatchers share: configuration, and the plan and answers of a turn (no I/O)."""

from __future__ import annotations

import inspect
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from ._answers import PendingAnswers
from ._budget import Budget
from ._core import DispatchCore, Prepared, ToolResult, _raised
from ._deadline import DEFAULT_DEADLINE
from ._exceptions import ClosedError, ConfigurationError, InvalidToolCallError, ToolCallError
from ._policy import Policy
from ._registry import ToolRegistry, load_registry
from ._retry import RetryPolicy
from ._shapes import ToolCall, parse_tool_call, parse_turn
from ._transport import Endpoint, TransportSettings
from .tools import Handler, Tool

__all__ = ["PARAMETERS", "BaseDispatcher", "Begun", "documented"]

_T = TypeVar("_T", bound=type)

# The constructor keywords of both dispatchers, in words: `documented` renders them into each
# class's docstring, in signature order, so `help(Dispatcher)` lists every one of them and the
# two dispatchers cannot drift apart (a test checks that every keyword is there).
PARAMETERS: Mapping[str, str] = MappingProxyType(
    {
        "registry": "the `ToolRegistry` whose tools the model may call. Default: the bundled "
        "``tools.json`` (`load_registry()`).",
        "url": "XERJ's base URL, or a list of node URLs served round-robin with failover. Default: "
        "``$XERJ_URL`` (comma-separated for several nodes), else ``http://localhost:9200``.",
        "api_key": "sent as ``Authorization: ApiKey <key>``; never logged or shown. Default: "
        "``$XERJ_API_KEY``, else no credentials.",
        "authorization": 'a whole ``Authorization`` header value (``"Bearer <token>"``); it '
        "wins over `api_key`. Default: None.",
        "client": "your own {client}, left open by `{close}`; its pool, timeouts and TLS are "
        "yours. Default: None, an owned client built from the keywords below.",
        "handlers": "``{{tool name: handler}}``: a plain function from validated arguments to an "
        "`HttpRequest`, for a tool of your own or to replace one of the library's. Default: None.",
        "tools": "your own `Tool` objects (docs/tools.md), each defined in `registry`. "
        "Default: none.",
        "retry": "how a XERJ request is retried (`RetryPolicy`). Default: ``RetryPolicy()``, 4 "
        "attempts within 30 seconds.",
        "rerank_fallback": "when XERJ refuses ``rerank``, repeat the search once without it and "
        "say so (False: answer ``rerank_unavailable``). Default: True.",
        "rerank_memory_seconds": "seconds a node's refusal of rerank is remembered, so later calls "
        "skip the doomed attempt; 0 remembers nothing. Default: 300.0.",
        "connect_timeout": "seconds to open a connection to a node. Default: 5.0.",
        "read_timeout": "seconds for each read or write on a connection, and to get a pooled "
        "connection. Default: 30.0.",
        "verify": "TLS verification: True, False, a CA bundle path or an `ssl.SSLContext`. "
        "Default: True.",
        "pool_size": "connections kept per owned client (and at most open at once). Default: 10.",
        "max_response_bytes": "largest decoded response body read, in bytes; a larger one answers "
        "``response_too_large``. Default: 33554432 (32 MiB), or the policy's lower cap.",
        "repair": "repair argument mistakes that have exactly one reading, and say so (False: "
        "strict). Default: True.",
        "budget": "the most a tool message may hold: characters (an int) or a `Budget` in tokens; "
        "a larger result is fitted with a note on what was cut. Default: 12000 characters.",
        "budgets": "``{{tool name: budget}}`` for tools that need another. Default: None.",
        "max_buckets": "aggregation buckets kept per bucket list; the rest are counted. "
        "Default: 25.",
        "policy": "the operator's guardrails (`Policy`). Default: None, which means "
        "``Policy()``: no dot-indices, no oversized arguments (docs/policy.md).",
        "max_workers": "threads that run a turn's calls at once in `dispatch_many`. Default: 8.",
        "max_in_flight": "requests on the wire at once, across threads or tasks; calls over it "
        "wait their turn, first come first served, within `deadline` and the pool timeout. "
        "``'pool'``: the pool's connection limit (a client of your own: its ``max_connections`` "
        "when readable, else no bound); an int sets it; None removes it (docs/configuration.md). "
        "Default: ``'pool'``.",
        "deadline": "seconds one call may take in all: attempts, backoff waits and reads together. "
        "Default: 60.0.",
        "sleep": "{sleep}, called with seconds; injectable so tests do not wait. "
        "Default: {sleep_default}.",
        "clock": "monotonic seconds for deadlines, backoff and elapsed times. Default: "
        "``time.monotonic``.",
    }
)


def documented(client: str, close: str, sleep: str, sleep_default: str) -> Callable[[_T], _T]:
    """Append the constructor's keywords, in signature order, to the class docstring."""

    def decorate(cls: _T) -> _T:
        words = {"client": client, "close": close, "sleep": sleep, "sleep_default": sleep_default}
        lines = ["", "Arguments, every one optional (all but `registry` are keyword-only):", ""]
        for name in inspect.signature(cls.__init__).parameters:  # type: ignore[misc]
            if name in PARAMETERS:
                lines.append(f"- ``{name}``: {PARAMETERS[name].format(**words)}")
        cls.__doc__ = inspect.cleandoc(cls.__doc__ or "") + "\n" + "\n".join(lines) + "\n"
        return cls

    return decorate


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

    # --- the seam for agent loops and integrations: a call in two steps, answers without XERJ

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The tools this dispatcher serves, by name: the library's own, plain handlers and
        custom tools (read-only)."""
        return MappingProxyType(self._core.tools)

    def begin(self, call: Any) -> Begun:
        """Parse `call` (any wire shape) and prepare it; nothing is sent. `complete` sends it,
        or answers the refusal; `Begun.key` tells identical calls apart for de-duplication."""
        started, tool_call = self._core.clock(), parse_tool_call(call)
        return Begun(tool_call, self._prepare(tool_call), started)

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

    def _prepare(self, call: ToolCall) -> Prepared | ToolCallError:
        """The call's request, or what is wrong with it. Whatever raises while the request is
        validated or built is answered (``handler_error``, logged with where it was raised):
        nothing a model sends makes `dispatch` raise."""
        try:
            return self._core.prepare(call)
        except Exception as exc:
            return _raised(call.name, "dispatcher", exc)

    def _crashed(self, call: ToolCall, exc: Exception, started: float) -> ToolResult:
        """The answer to a call whose request raised while it was sent or read (an `httpx` error
        that is no `HTTPError`, a bug): ``handler_error``, logged, never raised out of `dispatch`."""
        return self._core.refusal(call, _raised(call.name, "dispatcher", exc), started)

    def _open_turn(
        self, calls: Iterable[Any], transcript: list[Any] | None, assistant: Any = None
    ) -> tuple[PendingAnswers, float]:
        """Parse a turn's calls and put a ``cancelled`` answer to each into `transcript` at
        once, to be replaced by the real ones (see `_answers`).

        An interrupt (KeyboardInterrupt, or anything but `InvalidToolCallError`) that lands
        while the calls are parsed or their answers made, before they join `transcript`, still
        leaves each call answered ``cancelled`` there: the caller's assistant turn, already in
        `transcript`, is never left without its answers. `assistant` (the model's turn) joins
        `transcript` with the answers, in one operation."""
        size = -1 if transcript is None else len(transcript)
        try:  # an interrupt can land outside it on `size` or on `try` only (N17)
            if assistant is not None and transcript is None:
                raise ConfigurationError(
                    "assistant= goes with transcript=: it joins the transcript"
                )
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
        self, calls: Sequence[ToolCall], started: float
    ) -> tuple[list[Begun], list[int], dict[int, int]]:
        """Prepare every call; pick the ones to send (identical valid calls are sent once)."""
        begun = [Begun(c, self._prepare(c), started) for c in calls]
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
