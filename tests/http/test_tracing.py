"""OpenTelemetry spans over a real socket, read back from the SDK's in-memory exporter: the call
-> attempt -> backoff structure, failover, rerank fallback, error.type, context across the thread
pool and tasks, the agent loop's turns; nothing secret in any span; nothing at all untraced."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

pytest.importorskip("opentelemetry.sdk", reason="tracing tests need the `otel` and `test` extras "
                    "(opentelemetry-api and opentelemetry-sdk)")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once
from support import closed_port

from xerj_tools import (
    AsyncDispatcher,
    Dispatcher,
    TextDelta,
    astream_agent,
    stream_agent,
)
from xerj_tools._http import _tracing
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn
from xerj_tools.tools._mappings import mapping_request

from conftest import Runner, SleepRecorder, chat_call, openai_client, run_scripted

# a pattern XERJ globs itself: the dispatcher reads no index listing before it (docs/policy.md)
SEARCH = {"index": "doc*", "query": {"match": {"body": "checkout"}}, "size": 2}
RECALL = {"namespace": "agent", "query": "tea"}


def _reset_global_provider() -> None:
    # The API lets a process set its global provider once; tests need a fresh one each time.
    # (opentelemetry-python's own tests reset the same two globals.)
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _reset_global_provider()
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    _reset_global_provider()


def named(spans: Any, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def calls(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return named(exporter.get_finished_spans(), "execute_tool ")


def attempts_of(exporter: InMemorySpanExporter, call: ReadableSpan) -> list[ReadableSpan]:
    spans = [s for s in exporter.get_finished_spans()
             if s.parent is not None and s.parent.span_id == call.context.span_id and s.kind == SpanKind.CLIENT]
    return sorted(spans, key=lambda s: s.start_time or 0)


def test_a_retried_call_shows_call_attempt_and_backoff(exporter: InMemorySpanExporter, runner: Runner,
                                                      xerj: XerjStandIn, sleeps: SleepRecorder) -> None:
    xerj.fail_next(503)
    result = runner.run(chat_call("xerj_search", SEARCH, "call_7"))
    assert result.ok and result.attempts == 2
    [call] = calls(exporter)
    assert call.name == "execute_tool xerj_search" and call.kind == SpanKind.INTERNAL
    assert dict(call.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "xerj_search",
        "gen_ai.tool.call.id": "call_7", "gen_ai.tool.type": "function", "xerj_tools.attempts": 2}
    assert call.status.status_code == StatusCode.UNSET
    first, second = attempts_of(exporter, call)
    port = int(xerj.url.rsplit(":", 1)[1])
    for span in (first, second):
        assert span.name == "POST /{index}/_search" and span.context.trace_id == call.context.trace_id
        assert span.attributes is not None and span.attributes["url.template"] == "/{index}/_search"
        assert span.attributes["http.request.method"] == "POST"
        assert span.attributes["server.address"] == "127.0.0.1" and span.attributes["server.port"] == port
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["http.response.status_code"] == 503 and first.attributes["error.type"] == "503"
    assert first.status.status_code == StatusCode.ERROR and "http.request.resend_count" not in first.attributes
    assert second.attributes["http.response.status_code"] == 200 and "error.type" not in second.attributes
    assert second.attributes["http.request.resend_count"] == 1 and second.attributes["xerj_tools.attempt"] == 2
    [wait] = [e for e in call.events if e.name == "xerj_tools.backoff"]
    assert wait.attributes is not None
    assert wait.attributes["xerj_tools.wait_seconds"] == sleeps.waits[0]
    assert wait.attributes["xerj_tools.attempt"] == 1 and wait.attributes["xerj_tools.reason"] == "HTTP 503"
    # The wait sits between the two attempts.
    assert (first.end_time or 0) <= wait.timestamp <= (second.start_time or 0)


def test_a_failed_call_carries_its_error_code(exporter: InMemorySpanExporter, runner: Runner,
                                              xerj: XerjStandIn) -> None:
    xerj.fail_next(*[429] * 4)
    assert runner.run(chat_call("xerj_search", SEARCH)).code == "rate_limited"
    assert runner.run(chat_call("xerj_search", '{"index": ')).code == "invalid_json"
    limited, broken = calls(exporter)
    assert limited.attributes is not None and limited.attributes["error.type"] == "rate_limited"
    assert limited.status.status_code == StatusCode.ERROR and not limited.status.description
    assert len(attempts_of(exporter, limited)) == 4
    assert len([e for e in limited.events if e.name == "xerj_tools.backoff"]) == 3
    assert broken.attributes is not None and broken.attributes["error.type"] == "invalid_json"
    assert attempts_of(exporter, broken) == []  # refused before anything was sent


def test_failover_puts_the_dead_node_to_rest(exporter: InMemorySpanExporter, make_runner: Any,
                                             xerj: XerjStandIn) -> None:
    dead = closed_port()
    runner = make_runner(url=[dead, xerj.url])
    assert runner.run(chat_call("xerj_search", SEARCH)).ok
    [call] = calls(exporter)
    first, second = attempts_of(exporter, call)
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["error.type"] == "unreachable" and "http.response.status_code" not in first.attributes
    assert first.attributes["server.port"] == int(dead.rsplit(":", 1)[1])
    assert second.attributes["server.port"] == int(xerj.url.rsplit(":", 1)[1])
    events = {e.name: e for e in call.events}
    assert list(events) == ["xerj_tools.node_rest", "xerj_tools.backoff", "xerj_tools.failover"]
    rest, failover = events["xerj_tools.node_rest"].attributes, events["xerj_tools.failover"].attributes
    assert rest is not None and failover is not None
    assert rest["server.port"] == int(dead.rsplit(":", 1)[1]) and rest["xerj_tools.rest_seconds"] == 5.0
    assert failover["xerj_tools.from"] == dead and failover["xerj_tools.to"] == xerj.url


def test_rerank_fallback_is_an_event(exporter: InMemorySpanExporter, make_runner: Any) -> None:
    with XerjStandIn(rerank="unconfigured") as xerj:
        runner = make_runner(url=xerj.url)
        first = runner.run(chat_call("xerj_search", {**SEARCH, "rerank": {}}))
        again = runner.run(chat_call("xerj_search", {**SEARCH, "rerank": {}}))
    assert first.ok and again.ok and first.payload["rerank"]["applied"] is False
    refused, remembered = calls(exporter)
    [event] = [e for e in refused.events if e.name == "xerj_tools.rerank_fallback"]
    assert dict(event.attributes or {}) == {"xerj_tools.reason": "refused", "http.response.status_code": 503}
    first_try, repeat = attempts_of(exporter, refused)
    assert first_try.attributes is not None and first_try.attributes["http.response.status_code"] == 503
    assert repeat.attributes is not None and "http.request.resend_count" not in repeat.attributes  # another request
    [event] = [e for e in remembered.events if e.name == "xerj_tools.rerank_fallback"]
    assert dict(event.attributes or {}) == {"xerj_tools.reason": "remembered"}
    assert len(attempts_of(exporter, remembered)) == 1


def test_dispatch_many_spans_have_the_callers_parent(exporter: InMemorySpanExporter, runner: Runner) -> None:
    tracer = trace.get_tracer("test")
    batch = [chat_call("xerj_search", SEARCH, "a"), chat_call("xerj_memory_recall", RECALL, "b"),
             chat_call("xerj_search", {**SEARCH, "size": 1}, "c")]
    with tracer.start_as_current_span("caller") as parent:
        results = runner.run_many(batch)
    assert all(r.ok for r in results)
    spans = calls(exporter)
    assert sorted((s.attributes or {})["gen_ai.tool.call.id"] for s in spans) == ["a", "b", "c"]
    for span in spans:
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
        assert len(attempts_of(exporter, span)) == 1


def test_a_single_dispatch_nests_under_the_current_span(exporter: InMemorySpanExporter, runner: Runner) -> None:
    with trace.get_tracer("test").start_as_current_span("caller") as parent:
        runner.run(chat_call("xerj_memory_recall", RECALL))
    [call] = calls(exporter)
    assert call.parent is not None and call.parent.span_id == parent.get_span_context().span_id


@pytest.mark.parametrize(("api", "stream"), [("chat", False), ("chat", True), ("responses", True)])
def test_agent_loop_adds_a_span_per_turn(exporter: InMemorySpanExporter, mode: str, api: str, stream: bool,
                                         xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_memory_recall", RECALL)]), Turn(text="Done.")]
    result = run_scripted(mode, script, xerj, stream=stream, api=api)
    assert result.completed
    turns = sorted(named(exporter.get_finished_spans(), "agent turn"),
                   key=lambda s: (s.attributes or {})["xerj_tools.turn"])
    assert [dict(t.attributes or {}) for t in turns] == [
        {"xerj_tools.turn": 1, "xerj_tools.api": api, "gen_ai.request.model": "m",
         "gen_ai.response.finish_reasons": ("tool_calls",), "xerj_tools.tool_calls": 2},
        {"xerj_tools.turn": 2, "xerj_tools.api": api, "gen_ai.request.model": "m",
         "gen_ai.response.finish_reasons": ("stop",), "xerj_tools.tool_calls": 0},
    ]
    tool_spans = calls(exporter)
    assert len(tool_spans) == 2
    for span in tool_spans:
        assert span.parent is not None and span.parent.span_id == turns[0].context.span_id
    assert turns[0].parent is None  # nothing current leaked from turn 1 into turn 2
    assert turns[1].parent is None and turns[0].context.trace_id != turns[1].context.trace_id


def test_a_failed_model_request_ends_its_turn_with_the_error(exporter: InMemorySpanExporter, mode: str,
                                                             xerj: XerjStandIn) -> None:
    with pytest.raises(openai.APIStatusError):
        run_scripted(mode, [Turn(tool_calls=[("xerj_search", SEARCH)])], xerj)  # no second turn scripted
    turns = named(exporter.get_finished_spans(), "agent turn")
    assert len(turns) == 2
    failed = next(t for t in turns if (t.attributes or {})["xerj_tools.turn"] == 2)
    assert failed.status.status_code == StatusCode.ERROR and not failed.status.description
    assert (failed.attributes or {})["error.type"].endswith("Error")


def test_no_argument_result_url_or_key_in_any_span(exporter: InMemorySpanExporter, make_runner: Any) -> None:
    key, text = "sekret-key-0451", "zebra-quartz-7781"
    with XerjStandIn(api_key=key) as xerj:
        runner = make_runner(url=xerj.url, api_key=key)
        xerj.fail_next(503)
        stored = runner.run(chat_call("xerj_memory_store", {"namespace": "agent", "text": text}))
        recalled = runner.run(chat_call("xerj_memory_recall", {"namespace": "agent", "query": text}))
        found = runner.run(chat_call("xerj_search", {"index": "docs", "query": {"match": {"body": "VPN"}}}))
    assert stored.ok and recalled.ok and text in recalled.content
    assert "Berlin" in found.content  # a title of the result: it must not show up either
    spans = exporter.get_finished_spans()
    assert len(spans) >= 7
    forbidden = [key, text, "Berlin", "VPN", "agent", "docs", "?"]
    for span in spans:
        blob = json.dumps([span.name, span.status.description, dict(span.attributes or {}),
                           [(e.name, dict(e.attributes or {})) for e in span.events]], default=str)
        for word in forbidden:
            assert word not in blob, (word, blob)
        assert not any(name.startswith("url.") and name not in ("url.scheme", "url.template")
                       for name in span.attributes or {})


def test_without_a_tracer_provider_nothing_is_traced(xerj: XerjStandIn) -> None:
    _reset_global_provider()  # OpenTelemetry imported, but no provider: the API's proxy
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert _tracing.active_tracer() is None
    with Dispatcher(url=xerj.url) as dispatcher:
        assert dispatcher.run(chat_call("xerj_search", SEARCH)).ok


def test_without_opentelemetry_nothing_is_traced(monkeypatch: pytest.MonkeyPatch, exporter: InMemorySpanExporter,
                                                 xerj: XerjStandIn) -> None:
    monkeypatch.delitem(sys.modules, "opentelemetry.trace")  # as if the application never loaded it
    assert _tracing.active_tracer() is None
    with Dispatcher(url=xerj.url) as dispatcher:
        assert dispatcher.run(chat_call("xerj_search", SEARCH)).ok
    assert exporter.get_finished_spans() == ()


def test_opentelemetry_is_never_imported_by_dispatch(xerj: XerjStandIn) -> None:
    code = (
        "import sys, xerj_tools\n"
        f"with xerj_tools.Dispatcher(url={xerj.url!r}) as d:\n"
        "    assert d.run({'id': 'c', 'type': 'function', 'function': {'name': 'xerj_search',"
        " 'arguments': '{\"index\": \"docs\", \"query\": {}}'}}).ok\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_run_abandoned_mid_stream_ends_its_turn(exporter: InMemorySpanExporter, mode: str,
                                                  xerj: XerjStandIn) -> None:
    script = [Turn(text="A long answer, streamed in pieces.")]
    responses: list[Any] = []  # the model's HTTP response, closed with the run (traced or not)

    async def arecord(response: Any) -> None:
        responses.append(response)

    with ScriptedModel(script) as model:
        if mode == "sync":
            with openai_client(model.base_url, api_key="s", event_hooks={"response": [responses.append]}) as client, \
                    Dispatcher(url=xerj.url) as dispatcher:
                events = stream_agent(client, model="m", messages="hi", dispatcher=dispatcher)
                assert isinstance(next(events), TextDelta)
                events.close()  # the caller stops reading after the first piece
                assert [r.is_closed for r in responses] == [True]
        else:
            async def go() -> None:
                async with openai_client(model.base_url, "async", api_key="s", event_hooks={"response": [arecord]}) \
                        as client, AsyncDispatcher(url=xerj.url) as dispatcher:
                    events = astream_agent(client, model="m", messages="hi", dispatcher=dispatcher)
                    assert isinstance(await events.__anext__(), TextDelta)
                    await events.aclose()
                    assert [r.is_closed for r in responses] == [True]

            asyncio.run(go())
    [turn] = named(exporter.get_finished_spans(), "agent turn")
    assert (turn.attributes or {})["error.type"] == "GeneratorExit"


def test_calls_answered_without_running_have_spans_too(exporter: InMemorySpanExporter, mode: str,
                                                       runner: Runner, xerj: XerjStandIn) -> None:
    results = runner.run_many([chat_call("xerj_search", SEARCH, "first"), chat_call("xerj_search", SEARCH, "copy")])
    assert [r.ok for r in results] == [True, True]
    first, copy = sorted(calls(exporter), key=lambda s: (s.attributes or {})["gen_ai.tool.call.id"])[::-1]
    assert (copy.attributes or {})["xerj_tools.copy_of"] == "first" and (copy.attributes or {})["xerj_tools.attempts"] == 0
    assert attempts_of(exporter, copy) == [] and len(attempts_of(exporter, first)) == 1
    exporter.clear()
    script = [Turn(tool_calls=[("xerj_search", SEARCH), ("xerj_memory_recall", RECALL)]), Turn(text="Done.")]
    run_scripted(mode, script, xerj, on_tool_call=lambda call: call.name != "xerj_memory_recall")
    [turn, _] = sorted(named(exporter.get_finished_spans(), "agent turn"), key=lambda s: s.start_time or 0)
    denied = next(s for s in calls(exporter) if s.name == "execute_tool xerj_memory_recall")
    assert (denied.attributes or {})["error.type"] == "denied" and denied.status.status_code == StatusCode.ERROR
    assert denied.parent is not None and denied.parent.span_id == turn.context.span_id


def test_url_templates_take_the_models_names_out() -> None:
    from xerj_tools import Dispatcher, HttpRequest
    from xerj_tools._dispatch._core import Prepared
    from xerj_tools._shapes import ToolCall
    from xerj_tools.tools._listing import CAT_INDICES, RESOLVE_ALL

    def template(name: str, arguments: dict[str, Any]) -> str | None:
        with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
            call = ToolCall("c", name, json.dumps(arguments), api="chat")
            prepared = dispatcher._core.prepare(call)
        assert isinstance(prepared, Prepared)  # the dispatcher sets the tool's template
        return _tracing.url_template(prepared.request)

    assert template("xerj_search", {"index": "logs-*", "query": {"match_all": {}}}) == "/{index}/_search"
    assert template("xerj_memory_recall", {"namespace": "agent.a", "query": "q"}) == "/_memory/{namespace}/_recall"
    assert template("xerj_memory_store", {"namespace": "agent", "text": "c"}) == "/_memory/{namespace}"
    assert template("xerj_get_document", {"index": "docs", "id": "1"}) == "/{index}/_doc/{id}"
    assert _tracing.url_template(RESOLVE_ALL) == "/_resolve/index/*"
    assert _tracing.url_template(CAT_INDICES) == "/_cat/indices"
    # the mapping a field hint reads after an empty search: its index taken out too
    assert _tracing.url_template(mapping_request("tickets")) == "/{index}/_mapping"
    # A request of another shape has no template: the span is named by the method.
    assert _tracing.url_template(HttpRequest("POST", "/docs/_count", {}, kind="search")) is None
    assert _tracing.url_template(HttpRequest("GET", "/docs/_stats", None)) is None
    # A path that does not fit the template it claims gets none either.
    assert _tracing.url_template(HttpRequest("POST", "/a/b/_search", {}, template="/{index}/_search")) is None


def test_a_cancelled_call_ends_its_spans_with_the_cancellation(exporter: InMemorySpanExporter,
                                                               xerj: XerjStandIn) -> None:
    from xerj_tools.testing import Fault

    xerj.fail_next(Fault(delay=30, match="_search"))  # answered only when the stand-in stops

    async def go() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            task = asyncio.ensure_future(dispatcher.run(chat_call("xerj_search", SEARCH)))
            while not xerj.requests:  # the attempt is on the wire
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())
    [call] = calls(exporter)
    [attempt] = attempts_of(exporter, call)
    assert (call.attributes or {})["error.type"] == "CancelledError" == (attempt.attributes or {})["error.type"]
    assert call.status.status_code == StatusCode.ERROR and not call.status.description


def _names_in(text: str) -> set[str]:
    return set(re.findall(r"`((?:gen_ai|xerj_tools|http|server|url|error)\.[a-z_.]+)`", text))


def test_every_span_event_and_attribute_name_the_code_writes_is_in_observability_md() -> None:
    # The call's span lives in the dispatcher, the attempts' in the HTTP layer, the turns' in
    # the agent loop; docs/observability.md names them all, and nothing it names is missing.
    root = Path(__file__).resolve().parents[2]
    written: set[str] = set()
    for module in ("_http/_tracing.py", "_dispatch/_trace.py", "_agent/_trace_turns.py"):
        for node in ast.walk(ast.parse((root / "xerj_tools" / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                written |= _names_in(f"`{node.value}`")
    doc = (root / "docs" / "observability.md").read_text(encoding="utf-8")
    assert len(written) > 25
    assert written - _names_in(doc) == set()
    assert _names_in(doc) - written == {"url.full", "url.path"}  # named as never set
    assert "### `execute_tool {tool}`" in doc and "agent turn" in doc


def test_the_http_layer_knows_no_tool_call() -> None:
    # Attempt spans stay in `_http`; the tool call's span, outcome and rerank events are the
    # dispatcher's (`_dispatch/_trace.py`), so the HTTP layer imports nothing of the model side.
    root = Path(__file__).resolve().parents[2] / "xerj_tools" / "_http"
    for path in root.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "_shapes" not in text and "ToolCall" not in text, path.name
    assert not hasattr(_tracing, "record") and not hasattr(_tracing, "tool_call")
