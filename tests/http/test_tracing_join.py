"""One `execute_tool` span per call: a call joins the `execute_tool` span already current for
it (a framework's, or the application's), and makes its own under any other span."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="tracing tests need the `otel` and `test` extras")

from opentelemetry.trace import StatusCode

from xerj_tools import Dispatcher
from xerj_tools.testing import XerjStandIn

from conftest import chat_call
from otel_support import children, tool_spans, traced

SEARCH = {"index": "docs", "query": {"match_all": {}}, "size": 1}


def run_inside(span_name: str, attributes: dict[str, Any], call: Any, xerj: XerjStandIn) -> tuple[Any, list[Any]]:
    with traced() as (provider, exporter):
        tracer = provider.get_tracer("a-framework")
        with Dispatcher(url=xerj.url) as dispatcher, tracer.start_as_current_span(span_name, attributes=attributes):
            dispatcher.dispatch(call)
        return exporter, tool_spans(exporter)


@pytest.mark.parametrize("attributes", [
    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "xerj_search", "gen_ai.tool.call.id": "c1"},
    {},  # ADK sets its attributes when the span ends: the name tells
])
def test_a_call_joins_the_execute_tool_span_made_for_it(attributes: dict[str, Any], xerj: XerjStandIn) -> None:
    exporter, spans = run_inside("execute_tool xerj_search", attributes, chat_call("xerj_search", SEARCH, "c1"), xerj)
    assert [s.instrumentation_scope.name for s in spans] == ["a-framework"]
    assert spans[0].attributes["xerj_tools.attempts"] == 1
    assert [c.name for c in children(exporter, spans[0])] == ["GET /_resolve/index/*", "POST /{index}/_search"]  # the listing read first (names are resolved)


def test_a_refused_call_marks_the_joined_span_failed(xerj: XerjStandIn) -> None:
    _, spans = run_inside("execute_tool xerj_search", {}, chat_call("xerj_search", '{"index": ', "c1"), xerj)
    assert len(spans) == 1 and spans[0].status.status_code == StatusCode.ERROR
    assert spans[0].attributes["error.type"] == "invalid_json"


@pytest.mark.parametrize(("name", "attributes"), [
    ("execute_tool other_tool", {}),
    ("execute_tool xerj_search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "another"}),
    ("invoke_agent search", {"gen_ai.operation.name": "invoke_agent"}),
])
def test_under_any_other_span_the_call_has_its_own(name: str, attributes: dict[str, Any], xerj: XerjStandIn) -> None:
    _, spans = run_inside(name, attributes, chat_call("xerj_search", SEARCH, "c1"), xerj)
    ours = [s for s in spans if s.instrumentation_scope.name == "xerj_tools"]
    assert [s.name for s in ours] == ["execute_tool xerj_search"]
    assert ours[0].attributes["gen_ai.tool.call.id"] == "c1"


def test_over_mcp_a_call_joins_the_sdks_tools_call_span(xerj: XerjStandIn) -> None:
    """The MCP SDK's server makes a `tools/call {tool}` span with `gen_ai.operation.name =
    execute_tool` around each call (mcp `server/_otel.py`); the call joins it."""
    pytest.importorskip("mcp")
    import asyncio

    from mcp import Client

    from xerj_tools import AsyncDispatcher
    from xerj_tools.integrations.mcp import build_server

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher, Client(build_server(dispatcher)) as client:
            await client.call_tool("xerj_search", SEARCH)
            await client.call_tool("xerj_search", {"index": "docs"})

    with traced() as (_, exporter):
        asyncio.run(go())
        spans = tool_spans(exporter)
    assert [s.name for s in spans] == ["tools/call xerj_search", "tools/call xerj_search"]
    assert [s.attributes.get("xerj_tools.attempts") for s in spans] == [1, 0]
    assert [c.name for c in children(exporter, spans[0])] == ["GET /_resolve/index/*", "POST /{index}/_search"]  # the listing read first (names are resolved)
