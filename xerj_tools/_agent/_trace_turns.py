"""The agent loop's turns as spans: one per turn, current only where no ``yield`` intervenes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from .._dispatch._trace import NAME_LIMIT
from .._http._tracing import active_tracer, mark_failed, use_span
from ._streams import aclose_stream, close_stream

__all__ = ["NO_TURN", "TurnSpan", "turn"]

_T = TypeVar("_T")


class TurnSpan:
    """One turn of the agent loop as a span; made current only where no ``yield`` intervenes
    (around the model request and the turn's tool calls), so no context leaks to the caller."""

    def __init__(self, api: ModuleType | None = None, span: Any = None) -> None:
        self._api, self._span = api, span

    @contextmanager
    def use(self) -> Iterator[None]:
        if self._span is None or self._api is None:
            yield
            return
        with use_span(self._api, self._span):
            yield

    def call(self, create: Callable[..., Any], **request: Any) -> Any:
        """``create(**request)`` (the model request) run with the turn current; a failure ends
        the turn, whether the request itself fails or the answer it streams breaks off."""
        if self._span is None:
            return create(**request)
        try:
            with self.use():
                out = create(**request)
        except BaseException as exc:
            self.end(error=exc)
            raise
        if isinstance(out, Awaitable):
            return self._awaited(out)
        return self._chunks(out) if isinstance(out, Iterator) else out

    async def _awaited(self, pending: Awaitable[Any]) -> Any:
        try:
            with self.use():
                out = await pending
        except BaseException as exc:
            self.end(error=exc)
            raise
        return self._achunks(out) if isinstance(out, AsyncIterator) else out

    def _chunks(self, stream: Iterator[_T]) -> Iterator[_T]:
        """A streamed answer that breaks (or is abandoned) mid-way ends the turn too. Closing
        this closes `stream` (`yield from` closes only the generator `iter(stream)` returns)."""
        try:
            yield from stream
        except BaseException as exc:
            self.end(error=exc)
            raise
        finally:
            close_stream(stream)

    async def _achunks(self, stream: AsyncIterator[_T]) -> AsyncIterator[_T]:
        try:
            async for chunk in stream:
                yield chunk
        except BaseException as exc:
            self.end(error=exc)
            raise
        finally:
            await aclose_stream(stream)

    def end(
        self, finish_reason: str | None = None, calls: int = 0, error: BaseException | None = None
    ) -> None:
        span, self._span = self._span, None  # ends once
        if span is None or self._api is None:
            return
        if error is not None:
            mark_failed(self._api, span, type(error).__qualname__)
        else:
            span.set_attribute("xerj_tools.tool_calls", calls)
            if finish_reason is not None:
                span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        span.end()


NO_TURN = TurnSpan()


def turn(number: int, model: str, api_name: str) -> TurnSpan:
    """Start turn `number` of an agent run (under whatever span is current)."""
    traced = active_tracer()
    if traced is None:
        return NO_TURN
    api, tracer = traced
    span = tracer.start_span(
        "agent turn",
        kind=api.SpanKind.INTERNAL,
        attributes={
            "xerj_tools.turn": number,
            "xerj_tools.api": api_name,
            "gen_ai.request.model": model[:NAME_LIMIT],
        },
    )
    return TurnSpan(api, span)
