"""What the `xerj_tools` logger tells an operator, over a real socket: a WARNING per retry, per node
put to rest and per failover, an INFO per rerank fallback, a DEBUG per call; and never an
argument, a result or a key in any record of any logger."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support import closed_port

from xerj_tools.testing import XerjStandIn

from conftest import Runner, SleepRecorder, chat_call

# a pattern XERJ globs itself: the dispatcher reads no index listing before it (docs/policy.md)
SEARCH = {"index": "doc*", "query": {"match": {"body": "checkout"}}, "size": 2}


def ours(caplog: pytest.LogCaptureFixture, level: int | None = None) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "xerj_tools" and (level is None or r.levelno == level)]


def test_each_retry_is_a_warning_with_tool_reason_and_wait(caplog: pytest.LogCaptureFixture, runner: Runner,
                                                           xerj: XerjStandIn, sleeps: SleepRecorder) -> None:
    caplog.set_level(logging.DEBUG, logger="xerj_tools")
    xerj.fail_next(503, 429)
    assert runner.run(chat_call("xerj_search", SEARCH, "call_9")).ok
    warnings = ours(caplog, logging.WARNING)
    assert [r.getMessage() for r in warnings] == [
        f"xerj_search call_9: attempt 1 failed (HTTP 503); retrying in {sleeps.waits[0]:.2f}s",
        f"xerj_search call_9: attempt 2 failed (HTTP 429); retrying in {sleeps.waits[1]:.2f}s",
    ]
    [debug] = ours(caplog, logging.DEBUG)
    assert debug.getMessage() == "xerj_search call_9: ok after 3 attempt(s)"


def test_a_transport_failure_is_named_in_the_warning(caplog: pytest.LogCaptureFixture, make_runner: Any) -> None:
    caplog.set_level(logging.WARNING, logger="xerj_tools")
    runner = make_runner(url=closed_port())
    assert runner.run(chat_call("xerj_search", SEARCH)).code == "unreachable"
    messages = [r.getMessage() for r in ours(caplog, logging.WARNING)]
    assert len(messages) == 3  # 4 attempts, 3 waits; one node: never put to rest
    assert all("failed (unreachable: connection failed (ConnectError))" in m for m in messages)


def test_node_rest_and_failover_are_warnings(caplog: pytest.LogCaptureFixture, make_runner: Any,
                                            xerj: XerjStandIn) -> None:
    caplog.set_level(logging.WARNING, logger="xerj_tools")
    dead = closed_port()
    runner = make_runner(url=[dead, xerj.url])
    assert runner.run(chat_call("xerj_search", SEARCH, "call_3")).ok
    rest, retry, failover = (r.getMessage() for r in ours(caplog, logging.WARNING))
    assert rest == (f"xerj_search call_3: XERJ node {dead} put to rest for 5s "
                    "(unreachable: connection failed (ConnectError); 1 failure(s) in a row)")
    assert retry.startswith("xerj_search call_3: attempt 1 failed (unreachable")
    assert failover == f"xerj_search call_3: failing over from XERJ node {dead} to {xerj.url} (attempt 2)"


def test_rerank_fallback_is_info(caplog: pytest.LogCaptureFixture, make_runner: Any) -> None:
    caplog.set_level(logging.INFO, logger="xerj_tools")
    with XerjStandIn(rerank="disabled") as xerj:
        runner = make_runner(url=xerj.url)
        runner.run(chat_call("xerj_search", {**SEARCH, "rerank": {}}, "c1"))
        runner.run(chat_call("xerj_search", {**SEARCH, "rerank": {}}, "c2"))
    assert [r.getMessage() for r in ours(caplog, logging.INFO)] == [
        "xerj_search c1: rerank refused with HTTP 403; search repeated without rerank",
        "xerj_search c2: rerank refused earlier by this cluster; search sent without rerank",
    ]
    assert ours(caplog, logging.WARNING) == []  # a refusal is not retried


def test_no_argument_result_or_key_in_any_log_record(caplog: pytest.LogCaptureFixture, make_runner: Any) -> None:
    """Every logger at DEBUG (httpx and httpcore included): the distinctive values never appear.
    httpx's own INFO line carries the request URL, whose path holds index and namespace names;
    xerj-tools does not configure that logger, and puts nothing in the URL's query."""
    caplog.set_level(logging.DEBUG)
    key, text, secret_index = "sekret-key-0451", "zebra-quartz-7781", "nosuchindex-5512"
    with XerjStandIn(api_key=key) as xerj:
        runner = make_runner(url=[xerj.url, closed_port()], api_key=key)
        xerj.fail_next(503, 503)
        stored = runner.run(chat_call("xerj_memory_store", {"namespace": "agent", "text": text}))
        recalled = runner.run(chat_call("xerj_memory_recall", {"namespace": "agent", "query": text}))
        found = runner.run(chat_call("xerj_search", {"index": "docs", "query": {"match": {"body": "VPN"}}}))
        missing = runner.run(chat_call("xerj_search", {"index": secret_index, "query": {"match": {"body": text}}}))
    assert stored.ok and recalled.ok and found.ok and text in recalled.content and "Berlin" in found.content
    assert missing.code == "index_not_found"
    loggers = {r.name.split(".")[0] for r in caplog.records}
    assert {"xerj_tools", "httpx2", "httpcore2"} <= loggers  # the check below saw every layer
    assert ours(caplog, logging.WARNING)  # retries and the dead node were logged
    for record in caplog.records:
        line = record.getMessage() + repr(record.args) + str(record.exc_info)
        for word in (key, text, "Berlin", "VPN", "Authorization", "ApiKey"):
            assert word not in line, (record.name, line)
    for record in ours(caplog):
        assert secret_index not in record.getMessage() and "agent" not in record.getMessage()


def test_a_failing_handler_is_logged_without_its_message(caplog: pytest.LogCaptureFixture) -> None:
    def leaky(arguments: Any) -> Any:
        raise ValueError(f"cannot search {arguments['query']}")  # a message quoting the arguments

    caplog.set_level(logging.DEBUG, logger="xerj_tools")
    from xerj_tools import Dispatcher

    with Dispatcher(url="http://127.0.0.1:9", handlers={"xerj_semantic_search": leaky}) as dispatcher:
        result = dispatcher.run(chat_call("xerj_semantic_search", {"index": "docs", "field": "body",
                                                                   "query": "zebra-quartz-7781"}))
    assert result.code == "handler_error"
    [error] = ours(caplog, logging.ERROR)
    line = logging.Formatter().format(error)
    assert "handler for xerj_semantic_search raised ValueError at " in line and "test_logging.py:" in line
    assert "zebra-quartz-7781" not in line
