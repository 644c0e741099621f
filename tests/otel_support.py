"""A fresh global OpenTelemetry tracer provider with an in-memory exporter, for the tests that
trace a framework's run (each framework's own tracing on, and xerj-tools' spans beside it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def reset_global_provider() -> None:
    # The API lets a process set its global provider once; tests need a fresh one each time.
    # (opentelemetry-python's own tests reset the same two globals.)
    from opentelemetry import trace
    from opentelemetry.util._once import Once

    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]


@contextmanager
def traced() -> Iterator[tuple[Any, Any]]:
    """(provider, exporter): the provider is the global one while the block runs."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_global_provider()
    trace.set_tracer_provider(provider)
    try:
        yield provider, exporter
    finally:
        provider.shutdown()
        reset_global_provider()


def tool_spans(exporter: Any) -> list[Any]:
    """The finished spans that say they run a tool (GenAI ``execute_tool``), by name or by
    ``gen_ai.operation.name``: what a GenAI-aware backend counts as tool executions."""
    return [
        s for s in exporter.get_finished_spans()
        if (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"
        or s.name.startswith("execute_tool ")
    ]


def children(exporter: Any, span: Any) -> list[Any]:
    return [s for s in exporter.get_finished_spans()
            if s.parent is not None and s.parent.span_id == span.context.span_id]
