"""The dispatcher: run a model's tool calls against XERJ and return tool messages (sync).

`BaseDispatcher` (`_dispatch._base`) holds what both dispatchers share; `AsyncDispatcher` lives in
`_dispatch._async`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from dataclasses import replace
from typing import Any

import httpx2

from .._exceptions import ClosedError, ToolCallError
from .._http._deadline import Deadline
from .._http._gate import Gate
from .._http._models import Failure, HttpRequest, Outcome
from .._http._retry import retry_settings, should_retry
from .._http._transport import SyncTransport
from .._shapes import ToolMessage
from ._after import Flow
from ._answers import PendingAnswers
from ._base import BaseDispatcher, Begun
from ._core import ToolResult
from ._policy import Policy
from ._trace import ToolCallScope

__all__ = ["Dispatcher"]

logger = logging.getLogger("xerj_tools")


class _Call:
    """A running call's token in `Dispatcher._calls` (a weak set: see `Dispatcher._enter`)."""

    __slots__ = ("__weakref__",)


class Dispatcher(BaseDispatcher[httpx2.Client, Callable[[float], None]]):
    """Runs tool calls against XERJ with a pooled `httpx2.Client`; thread-safe.

    ``dispatch(call)`` takes a Chat Completions tool call, a Responses ``function_call`` item or
    an Anthropic ``tool_use`` block (SDK object or dict) and returns the answer in the same
    shape. Nothing the model or the engine does raises out of it; configuration mistakes raise
    `ConfigurationError` here, and an object that is no tool call `InvalidToolCallError`.

    Arguments, every one optional (all but `registry` keyword-only), by concern. What is served:
    - ``registry``: the `ToolRegistry` whose tools the model may call. Default: ``load_registry()``.
    - ``handlers``: ``{tool name: function}``, each building an `HttpRequest`. Default: None.
    - ``tools``: your own `Tool` objects (docs/tools.md). Default: none.

    Where XERJ is:
    - ``url``: XERJ's URL or a list of nodes. Default: ``$XERJ_URL``, else ``http://localhost:9200``.
    - ``api_key``: sent as ``Authorization: ApiKey <key>``, never shown. Default: ``$XERJ_API_KEY``.
    - ``authorization``: a whole ``Authorization`` value; it wins over `api_key`. Default: None.
    - ``client``: your own `httpx2.Client`, left open by `close()`. Default: None, an owned one.

    What the model may do and read:
    - ``policy``: the operator's guardrails (`Policy`, docs/policy.md). Default: None: ``Policy()``.
    - ``repair``: repair mistakes that have one reading, and say so (False: strict). Default: True.
    - ``budget``: the most a tool message holds: characters (int) or a `Budget`. Default: 12000.
    - ``budgets``: ``{tool name: budget}`` for tools that need another. Default: None.
    - ``max_buckets``: aggregation buckets kept per bucket list; the rest counted. Default: 25.
    - ``rerank_fallback``: a search XERJ refuses to rerank is repeated without it. Default: True.
    - ``rerank_memory_seconds``: how long a node's rerank refusal is remembered. Default: 300.0.

    How a request is sent:
    - ``retry``: how a request is retried (`RetryPolicy`). Default: ``RetryPolicy()``, 4 attempts.
    - ``timeout``: a `Timeout`: seconds for one ``call`` in all (attempts, waits, reads), to
      ``connect``, to ``read``; or a number, the whole call's bound (connect and read at most
      that). Default: ``Timeout(call=60.0, connect=5.0, read=30.0)``.
    - ``verify``: TLS: True, False, a CA bundle path or an `ssl.SSLContext`. Default: True.
    - ``limits``: a `Limits`: the owned client's ``pool_size``, requests ``max_in_flight`` at
      once (docs/configuration.md), ``max_response_bytes`` read, ``max_workers`` threads of
      `dispatch_many`. Default: ``Limits(pool_size=10, max_in_flight='pool',
      max_response_bytes=33554432, max_workers=8)``.
    - ``sleep``: waits between attempts, given seconds (for tests). Default: None: ``time.sleep``.
    - ``clock``: monotonic seconds for deadlines and elapsed times. Default: ``time.monotonic``.
    """

    def _connect(
        self,
        client: httpx2.Client | None,
        sleep: Callable[[float], None] | None,
        bound: int | None,
        pool: float | None,
    ) -> None:
        self._transport = SyncTransport(self._endpoint, self._settings, client, self._core.clock)
        self._gate = None if bound is None else Gate(bound, pool)
        self._sleep = time.sleep if sleep is None else sleep
        self._pool: ThreadPoolExecutor | None = None
        # Guards the lazily made thread pool, the closed flag and the set of running calls.
        self._lock = threading.Condition()
        self._calls: weakref.WeakSet[_Call] = weakref.WeakSet()

    @property
    def _running(self) -> int:
        """How many calls (or turns) are running."""
        return len(self._calls)

    def run(self, call: Any, *, policy: Policy | None = None) -> ToolResult:
        """Run one call and return its `ToolResult` (message, payload, attempts, time)."""
        token = self._enter()
        try:
            return self._complete(self.begin(call, policy=policy))
        finally:
            self._leave(token)

    def _enter(self) -> _Call:
        """Count a call as running, safely against an interrupt (a KeyboardInterrupt can land
        between any two lines): the count is a weak set of tokens, each held only by the frame
        of the call it counts. Wherever an interrupt lands, in here, before the caller's `try`
        or in `_leave` before the token is taken out, the token dies with the frames that the
        interrupt unwinds, and the call is no longer counted."""
        token = _Call()
        with self._lock:
            if self._closed:
                raise ClosedError("this Dispatcher was closed; make a new one")
            self._calls.add(token)
        return token

    def _leave(self, token: _Call) -> None:
        with self._lock:
            self._calls.discard(token)
            self._lock.notify_all()

    def _submit(
        self, begun: list[Begun], unique: list[int], cancel: threading.Event
    ) -> list[Future[ToolResult]]:
        with self._lock:  # one pool, however many threads start a turn at once
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.limits.max_workers, thread_name_prefix="xerj-tools"
                )
            # Each call runs in a copy of this context: its span's parent is the caller's.
            return [
                self._pool.submit(copy_context().run, self._complete, begun[i], cancel)
                for i in unique
            ]

    def complete(self, begun: Begun) -> ToolResult:
        """Send a call that `begin` prepared (retries, deadline, budget) and return its result;
        a refused call gets its error answer and sends nothing."""
        return self._complete(begun)

    def _complete(self, begun: Begun, cancel: threading.Event | None = None) -> ToolResult:
        tool_call, prepared, started = begun
        with ToolCallScope(tool_call):
            if isinstance(prepared, ToolCallError):
                return self._core.refusal(tool_call, prepared, started)
            flow = self._core.flow(prepared, self._endpoint.label)
            deadline = Deadline(self.timeout.call, self._core.clock)
            try:
                payload, attempts = self._drive(
                    flow, deadline, cancel, self._response_cap(prepared)
                )
                return self._core.result(tool_call, payload, attempts, started, prepared)
            except Exception as exc:  # see `_crashed`
                return self._crashed(tool_call, exc, started)

    def dispatch(self, call: Any, *, policy: Policy | None = None) -> ToolMessage:
        """Run one call; return the answer to it, in the call's own shape.

        `policy` replaces the dispatcher's `Policy` for this call alone (a tenant's, a run's):
        its checks, its caps and the reading of the answer (docs/policy.md). A value that is no
        `Policy` raises `ConfigurationError` before anything is looked at or sent."""
        return self.run(call, policy=policy).message

    def run_many(
        self,
        calls: Iterable[Any],
        *,
        transcript: list[Any] | None = None,
        assistant: Any = None,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> list[ToolResult]:
        """Run a turn's calls concurrently on a bounded thread pool; results in call order.

        Identical calls (same tool, same arguments after repair) are sent once; each call id
        still gets its answer. `policy`: as in `dispatch`, for every call of the turn.
        `max_calls`: the calls past the first `max_calls` are answered ``too_many_calls`` and
        not run (None, the default: no bound; `run_agent` bounds its turns by itself).
        """
        # The answers are in `transcript` before the turn is counted as running: an interrupt
        # landing in `_enter` finds every call answered ``cancelled``.
        answers, started = self._open_turn(calls, transcript, assistant, policy, max_calls)
        token = self._enter()
        try:
            return self._answer_all(answers, self._run_turn(answers, started, policy, max_calls))
        finally:
            self._leave(token)

    def _run_turn(
        self, answers: PendingAnswers, started: float, policy: Policy | None, max_calls: int | None
    ) -> list[ToolResult]:
        cancel = threading.Event()
        futures: list[Future[ToolResult]] = []
        begun: list[Begun] = []
        unique: list[int] = []
        copies: dict[int, int] = {}
        try:
            begun, unique, copies = self._plan(answers.calls, started, policy, max_calls)
            if len(unique) <= 1:
                done = [self._complete(begun[i], cancel) for i in unique]
            else:
                futures = self._submit(begun, unique, cancel)
                pending: set[Future[ToolResult]] = set(futures)
                while pending:
                    # Timed waits, so that a KeyboardInterrupt reaches this thread at once.
                    _, pending = wait(pending, timeout=0.05)
                done = [f.result() for f in futures]
        except BaseException:
            # Interrupted (KeyboardInterrupt, or an error of ours): start nothing new, let the
            # attempts on the wire end, answer what finished, then let the exception go on.
            cancel.set()
            for future in futures:
                future.cancel()
            try:
                wait(futures)
            finally:
                finished = {
                    i: f.result() for i, f in zip(unique, futures, strict=False)
                    if f.done() and not f.cancelled() and f.exception() is None
                }  # fmt: skip
                self._salvage(answers, started, copies, finished)
            raise
        return self._assemble(begun, unique, copies, done)

    def dispatch_many(
        self,
        calls: Iterable[Any],
        *,
        transcript: list[Any] | None = None,
        assistant: Any = None,
        policy: Policy | None = None,
        max_calls: int | None = None,
    ) -> list[ToolMessage]:
        """Run a turn's calls concurrently; one answer per call, in call order (Anthropic:
        ``tool_result`` blocks; `turn_messages` makes the one user message that carries them).

        With `transcript`, an answer to each call is added to it at once, as ``cancelled``,
        and replaced in place by the call's message when it is known: wherever the turn is
        interrupted, the calls that did not finish are answered ``cancelled`` and the
        conversation stays valid. `assistant` is the model's turn that holds the calls: given,
        it joins `transcript` in the same operation as those answers, so that an interrupt
        landing anywhere, even before the call does anything, leaves no turn unanswered
        (appended by hand beforehand, a turn interrupted that early would be). An item that is
        no tool call raises `InvalidToolCallError` before anything is sent or added; after
        `close()`: `ClosedError`. `policy` replaces the dispatcher's for this turn's calls (see
        `dispatch`); a value that is no `Policy` raises `ConfigurationError` the same way.
        `max_calls` bounds the turn (see `run_many`).
        """
        # One line: an interrupt before `run_many` places the answers is on this line alone.
        return [r.message for r in self.run_many(calls, transcript=transcript, assistant=assistant, policy=policy, max_calls=max_calls)]  # fmt: skip

    def _send(
        self, request: HttpRequest, deadline: Deadline, cancel: threading.Event | None
    ) -> tuple[Outcome, int]:
        attempts = 0

        def attempt() -> Outcome:
            nonlocal attempts
            if cancel is not None and cancel.is_set():
                return Failure("cancelled", "the turn was interrupted", self.url, sent=False)
            if self._closed:  # closed while this call ran on, past close()'s wait
                return Failure("cancelled", "the dispatcher was closed", self.url, sent=False)
            attempts += 1
            return self._transport.send(request, deadline)

        if self._gate is not None:  # the attempt runs once it holds a slot
            attempt = functools.partial(self._gate.send, deadline, self.url, attempt)

        def sleep(seconds: float) -> None:
            if cancel is None:
                self._sleep(seconds)
            elif self._sleep is time.sleep:
                cancel.wait(seconds)  # an interrupted turn does not sit out its backoff
            elif not cancel.is_set():
                self._sleep(seconds)

        # The first attempt runs bare; tenacity takes over only when there is something to retry,
        # and is handed that first outcome as its own first attempt.
        first: list[Outcome] = [attempt()]
        if not should_retry(request, first[0], self.retry) or self.retry.max_attempts < 2:
            return first[0], attempts

        def resume() -> Outcome:
            return first.pop() if first else attempt()

        import tenacity  # on the first retry: offline validation never imports it

        settings = retry_settings(request, self.retry, deadline)
        outcome: Outcome = tenacity.Retrying(sleep=sleep, **settings)(resume)
        return outcome, attempts

    def _drive(
        self, flow: Flow, deadline: Deadline, cancel: threading.Event | None, cap: int | None
    ) -> tuple[dict[str, Any], int]:
        total = 0
        try:
            request = next(flow)
            while True:
                if cap is not None:  # the call's own policy reads less of a response
                    request = replace(request, max_response_bytes=cap)
                outcome, attempts = self._send(request, deadline, cancel)
                if request.kind != "listing":  # a follow-up for the message, not the call
                    total += attempts
                request = flow.send((outcome, attempts))
        except StopIteration as stop:
            return stop.value, total

    def close(self, timeout: float | None = None) -> None:
        """Close the owned HTTP client and thread pool (a client you passed in stays open).

        Calls already running finish first, for at most `timeout` seconds (default: the
        dispatcher's ``timeout.call``, which no call outlasts); past it the dispatcher closes anyway,
        logs how many calls were still running, and their next attempts end ``cancelled``. Any
        call after this raises `ClosedError`. Closing twice is harmless.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            end = time.monotonic() + (self.timeout.call if timeout is None else timeout)
            # Timed waits: a call whose interrupt took its token away notifies no one.
            while self._calls and (left := end - time.monotonic()) > 0:
                self._lock.wait(min(left, 0.1))
            stuck = len(self._calls)
            if stuck:
                logger.warning(
                    "Dispatcher.close(): %d call(s) still running after %g s; closing anyway",
                    stuck, self.timeout.call if timeout is None else timeout,
                )  # fmt: skip
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=not stuck, cancel_futures=bool(stuck))
        self._transport.close()

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
