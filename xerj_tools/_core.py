"""The sans-I/O core of dispatch: call -> validated request -> (rerank fallback) -> tool message.

Nothing here sends, sleeps or awaits. The sync and async dispatchers drive `DispatchCore.flow`,
a generator that yields each request to send and receives what came back, so the two drivers
share every decision.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._calls import ToolCall, ToolMessage
from ._exceptions import (
    ArgumentsError,
    EngineError,
    MissingHandlerError,
    ToolCallError,
    UnknownToolError,
)
from ._format import dumps, engine_error, error_payload, success_payload
from ._handlers import HANDLERS, Handler, HttpRequest
from ._outcome import Outcome, Reply
from ._registry import ToolRegistry
from ._retry import rerank_refusal

__all__ = ["DispatchCore", "ToolResult"]

logger = logging.getLogger("xerj_tools")

FALLBACK = "search repeated without rerank: engine order and engine scores"


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one call: the tool message, the payload behind it and a few figures."""

    call: ToolCall
    payload: Mapping[str, Any] = field(repr=False)
    content: str = field(repr=False)
    attempts: int = 0
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.payload.get("ok"))

    @property
    def code(self) -> str | None:
        """The error code when the call failed, else None."""
        error = self.payload.get("error")
        return error.get("code") if isinstance(error, Mapping) else None

    @property
    def message(self) -> ToolMessage:
        """The tool message to append to the conversation, in the call's API shape."""
        return self.call.answer(self.content)


class _RerankMemory:
    """Per node: when rerank was last refused, and why; forgotten after `ttl` seconds."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._ttl, self._clock = ttl, clock
        self._refusals: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def remember(self, node: str, reason: str) -> None:
        if self._ttl > 0:
            with self._lock:
                self._refusals[node] = (self._clock(), reason)

    def recall(self, node: str) -> str | None:
        with self._lock:
            entry = self._refusals.get(node)
            if entry is None:
                return None
            age = self._clock() - entry[0]
            if age >= self._ttl:
                del self._refusals[node]
                return None
        return f"this node refused rerank {age:.0f}s ago, so it was not asked again: {entry[1]}"


Flow = Generator[HttpRequest, tuple[Outcome, int], dict[str, Any]]


class DispatchCore:
    """Every decision of dispatch, shared by `Dispatcher` and `AsyncDispatcher`."""

    def __init__(
        self,
        registry: ToolRegistry,
        handlers: Mapping[str, Handler] | None,
        *,
        rerank_fallback: bool,
        rerank_memory_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        table = {name: h for name, h in HANDLERS.items() if name in registry}
        table.update(handlers or {})
        missing = [name for name in registry.names if name not in table]
        if missing:
            raise MissingHandlerError(missing)
        self.registry = registry
        self.handlers = table
        self.rerank_fallback = rerank_fallback
        self.rerank_memory = _RerankMemory(rerank_memory_seconds, clock)
        self.clock = clock

    def prepare(self, call: ToolCall) -> HttpRequest | ToolCallError:
        """Validate the call and build its request, or say what the model must fix."""
        spec = self.registry.get(call.name)
        if spec is None or call.custom:
            return UnknownToolError(call.name, self.registry.names)
        result = self.registry.validate(call.name, call.arguments)
        if not result.ok or result.arguments is None:
            code = "invalid_json" if result.decode_error else "invalid_arguments"
            count = len(result.problems)
            reason = (
                result.problems[0].message if count == 1 else f"{count} problems in the arguments"
            )
            return ArgumentsError(reason, problems=result.problems, code=code)
        try:
            return self.handlers[call.name](result.arguments)
        except ToolCallError as exc:  # a custom handler may refuse a call in the model's terms
            return exc
        except Exception as exc:
            logger.exception("handler for %s failed", call.name)
            return ToolCallError(f"the handler raised {type(exc).__name__}", code="handler_error")

    def flow(self, tool: str, request: HttpRequest, node: str) -> Flow:
        """Yield each request to send; receive ``(outcome, attempts)``; return the payload."""
        note: dict[str, Any] | None = None
        if request.reranked and (remembered := self.rerank_memory.recall(node)) is not None:
            if not self.rerank_fallback:
                return error_payload(tool, EngineError(remembered, code="rerank_unavailable"))
            note = {"applied": False, "reason": remembered, "fallback": FALLBACK}
            request = request.without_rerank()
        outcome, attempts = yield request
        if isinstance(outcome, Reply) and (reason := rerank_refusal(request, outcome)) is not None:
            self.rerank_memory.remember(node, reason)
            if not self.rerank_fallback:
                return error_payload(tool, engine_error(outcome, request), attempts=attempts)
            note = {"applied": False, "reason": reason, "fallback": FALLBACK}
            request = request.without_rerank()
            outcome, attempts = yield request
        return self.finish(tool, request, outcome, attempts, note)

    def finish(
        self,
        tool: str,
        request: HttpRequest,
        outcome: Outcome,
        attempts: int,
        note: dict[str, Any] | None,
    ) -> dict[str, Any]:
        if isinstance(outcome, Reply) and 200 <= outcome.status < 300:
            try:
                return success_payload(tool, outcome, request, note)
            except EngineError as exc:
                return error_payload(tool, exc, attempts=attempts)
        return error_payload(tool, engine_error(outcome, request), attempts=attempts)

    def result(
        self, call: ToolCall, payload: dict[str, Any], attempts: int, started: float
    ) -> ToolResult:
        result = ToolResult(call, payload, dumps(payload), attempts, self.clock() - started)
        logger.debug(
            "%s %s: %s after %d attempt(s)",
            call.name,
            call.call_id,
            "ok" if result.ok else result.code,
            attempts,
        )
        return result

    def refusal(self, call: ToolCall, error: ToolCallError, started: float) -> ToolResult:
        return self.result(call, error_payload(call.name or "?", error), 0, started)
