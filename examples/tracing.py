"""Tracing and logs: the spans and log lines of a loop run where one of two XERJ nodes is down.

Needs OpenTelemetry: pip install -e '.[otel]' (in a clone: docs/usage.md#install) opentelemetry-sdk. A real application would
export with OTLP; this example keeps the spans in memory and prints them as a tree.
"""

from __future__ import annotations

import logging
import socket
import sys
from collections import defaultdict

from _services import services
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from xerj_tools import Dispatcher, run_agent
from xerj_tools.testing import Turn

# The operator's log lines: WARNING for retries, nodes put to rest and failovers, INFO for a
# rerank fallback, DEBUG for each call. Other libraries stay at WARNING.
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("xerj_tools").setLevel(logging.INFO)

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

SCRIPT = [
    Turn(tool_calls=[("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2})]),
    Turn(text="A bad index template broke checkout search."),
]


def down_node() -> str:
    """A node that refuses connections: a closed port on this machine."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def print_tree(spans: tuple[ReadableSpan, ...]) -> None:
    children: dict[int | None, list[ReadableSpan]] = defaultdict(list)
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        children[span.parent.span_id if span.parent else None].append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        keep = ("gen_ai.tool.call.id", "xerj_tools.turn", "server.port", "http.response.status_code",
                "http.request.resend_count", "error.type", "xerj_tools.attempts")
        attributes = {k: v for k, v in (span.attributes or {}).items() if k in keep}
        print("  " * depth + f"{span.name} {attributes}")
        for event in span.events:
            print("  " * (depth + 1) + f"· {event.name} {dict(event.attributes or {})}")
        for child in children[span.context.span_id]:
            show(child, depth + 1)

    for root in children[None]:
        show(root, 0)


with services(SCRIPT) as (client, model, xerj_url):
    with trace.get_tracer("example").start_as_current_span("answer a question"), \
            Dispatcher(url=[down_node(), xerj_url]) as dispatcher:
        result = run_agent(client, model=model, messages="Why did checkout search fail?", dispatcher=dispatcher)
    print(f"[{result.outcome} after {result.turns} turns] {result.output_text}")

print_tree(exporter.get_finished_spans())
