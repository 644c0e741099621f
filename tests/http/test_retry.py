"""Retries across a real socket, with injected sleep: what is retried, how often, how long."""

from __future__ import annotations

import socket
from email.utils import formatdate
from typing import Any

import pytest

from xerj_tools import HttpRequest, RetryPolicy, Timeout
from xerj_tools._http._models import Failure, Reply
from xerj_tools._http._rerank import rerank_refusal
from xerj_tools._http._retry import retry_after_seconds, should_retry
from xerj_tools.testing import Fault, XerjStandIn

from conftest import Runner, SleepRecorder

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}}
RERANKED = {**SEARCH, "rerank": {"window": 30}}


def rerank_error(status: int) -> Fault:
    body = {"error": {"type": "rerank_exception", "reason": "no rerank API key is configured"}, "status": status}
    return Fault(status=status, body=body)


@pytest.mark.parametrize(("status", "code"), [(429, "rate_limited"), (502, "server_error"),
                                              (503, "server_error"), (504, "server_error")])
def test_retryable_status_is_retried_until_attempts_run_out(
    runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder, status: int, code: str
) -> None:
    xerj.fail_next(*[status] * 10)
    result = runner.run(_call(SEARCH))
    assert result.attempts == 4 and len(xerj.requests) == 4
    assert result.code == code
    assert len(sleeps.waits) == 3 and all(0 <= w <= 8 for w in sleeps.waits)
    assert result.payload["error"]["retryable"] is True and result.payload["error"]["attempts"] == 4


@pytest.mark.parametrize(("status", "code"), [(400, "bad_request"), (401, "unauthorized"), (403, "forbidden"),
                                              (404, "not_found"), (409, "bad_request"), (415, "bad_request"),
                                              (500, "server_error"), (501, "server_error")])
def test_other_status_is_not_retried(runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder,
                                     status: int, code: str) -> None:
    xerj.fail_next(status)
    result = runner.run(_call(SEARCH))
    assert result.attempts == 1 and len(xerj.requests) == 1
    assert result.code == code and sleeps.waits == []


def test_flapping_503_then_success(runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder) -> None:
    xerj.fail_next(503, 502)
    result = runner.run(_call(SEARCH))
    assert result.ok and result.attempts == 3 and len(sleeps.waits) == 2


def test_retry_after_seconds_is_honoured(runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder) -> None:
    xerj.fail_next(Fault(status=429, headers={"Retry-After": "3"}))
    result = runner.run(_call(SEARCH))
    assert result.ok and result.attempts == 2
    assert sleeps.waits == [3.0]


def test_retry_after_http_date_is_honoured(runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder) -> None:
    import time

    xerj.fail_next(Fault(status=503, headers={"Retry-After": formatdate(time.time() + 5, usegmt=True)}))
    result = runner.run(_call(SEARCH))
    assert result.ok and len(sleeps.waits) == 1 and 3 <= sleeps.waits[0] <= 5


def test_retry_after_beyond_the_cap_is_not_waited_for(runner: Runner, xerj: XerjStandIn,
                                                      sleeps: SleepRecorder) -> None:
    xerj.fail_next(Fault(status=429, headers={"Retry-After": "120"}))
    result = runner.run(_call(SEARCH))
    assert result.attempts == 1 and sleeps.waits == []
    assert result.code == "rate_limited" and result.payload["error"]["retry_after"] == 120


def test_total_time_budget_stops_before_a_long_wait(make_runner: Any, xerj: XerjStandIn,
                                                    sleeps: SleepRecorder) -> None:
    runner = make_runner(url=xerj.url, retry=RetryPolicy(max_time=10, max_retry_after=60))
    xerj.fail_next(Fault(status=429, headers={"Retry-After": "20"}))
    result = runner.run(_call(SEARCH))
    assert result.attempts == 1 and sleeps.waits == [] and result.code == "rate_limited"


@pytest.mark.parametrize("status", [503, 403, 502, 501, 500])
def test_rerank_refusal_is_sent_once_then_repeated_without_rerank(
    runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder, status: int
) -> None:
    xerj.fail_next(rerank_error(status))
    result = runner.run(_call(RERANKED))
    assert [("rerank" in r.body) for r in xerj.requests] == [True, False]
    assert sleeps.waits == []
    assert result.ok and result.payload["ranked_by"] == "engine"
    rerank = result.payload["rerank"]
    assert rerank["applied"] is False and "no rerank API key" in rerank["reason"]
    assert rerank["fallback"].startswith("search repeated without rerank")


@pytest.mark.parametrize("mode_name", ["unconfigured", "disabled", "provider_error", "unsupported"])
def test_every_rerank_refusal_of_the_stand_in_falls_back(runner: Runner, xerj: XerjStandIn,
                                                         mode_name: Any) -> None:
    xerj.rerank = mode_name
    result = runner.run(_call(RERANKED))
    assert len(xerj.requests) == 2 and result.ok
    assert result.payload["rerank"]["applied"] is False and result.payload["total"] > 0


def test_refusal_can_be_returned_instead_of_falling_back(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, rerank_fallback=False)
    xerj.rerank = "unconfigured"
    result = runner.run(_call(RERANKED))
    assert len(xerj.requests) == 1 and result.code == "rerank_unavailable"
    assert result.payload["error"]["status"] == 503
    assert "without `rerank`" in result.payload["error"]["hint"]
    # remembered: the next call is refused without a request
    result = runner.run(_call(RERANKED))
    assert len(xerj.requests) == 1 and result.code == "rerank_unavailable"


def test_refusal_is_remembered_per_node_for_a_while(make_runner: Any, xerj: XerjStandIn) -> None:
    now = [1000.0]
    runner = make_runner(url=xerj.url, clock=lambda: now[0], rerank_memory_seconds=60)
    xerj.rerank = "unconfigured"
    runner.run(_call(RERANKED))
    assert len(xerj.requests) == 2
    second = runner.run(_call(RERANKED))
    assert len(xerj.requests) == 3 and "rerank" not in xerj.requests[2].body
    assert "not asked again" in second.payload["rerank"]["reason"]
    # One request went out, without rerank: the note says so, not that a search was repeated.
    assert second.payload["rerank"]["fallback"].startswith("sent without rerank")
    now[0] += 61
    xerj.rerank = "ok"
    third = runner.run(_call(RERANKED))
    assert "rerank" in xerj.requests[3].body and third.payload["rerank"]["applied"] is True


@pytest.mark.parametrize(("status", "remembered"), [(503, True), (403, True), (501, True), (502, False), (500, False)])
def test_only_configuration_refusals_are_remembered(make_runner: Any, xerj: XerjStandIn, status: int,
                                                    remembered: bool) -> None:
    # rerank_stage.rs `status_for` @ 11b0cd0: 403/501/503 are how the node is set up; a 502
    # (the provider failed) or a 500 (the local model failed) is a fault of that one call.
    runner = make_runner(url=xerj.url, rerank_memory_seconds=300)
    xerj.fail_next(rerank_error(status))
    first = runner.run(_call(RERANKED))
    assert first.ok and first.payload["rerank"]["applied"] is False
    second = runner.run(_call(RERANKED))
    sent_rerank = [("rerank" in r.body) for r in xerj.requests]
    if remembered:
        assert sent_rerank == [True, False, False] and "not asked again" in second.payload["rerank"]["reason"]
    else:
        assert sent_rerank == [True, False, True] and second.payload["rerank"]["applied"] is True


def test_a_refusal_is_remembered_per_provider_not_per_cluster(make_runner: Any, xerj: XerjStandIn) -> None:
    # rerank_stage.rs `status_for` @ 11b0cd0: 501 LocalUnavailable is the local judge's own
    # refusal; jev (the default provider) on the same node may well be configured.
    runner = make_runner(url=xerj.url, rerank_memory_seconds=300)
    xerj.fail_next(rerank_error(501))
    local = runner.run(_call({**SEARCH, "rerank": {"provider": "local"}}))
    assert local.ok and local.payload["rerank"]["applied"] is False
    default = runner.run(_call(RERANKED))
    assert default.payload["rerank"]["applied"] is True and "rerank" in xerj.requests[2].body
    again = runner.run(_call({**SEARCH, "rerank": {"provider": "local"}}))
    assert "rerank" not in xerj.requests[3].body and "not asked again" in again.payload["rerank"]["reason"]
    # jev's own refusal is jev's, under its alias `typesafe` too
    xerj.fail_next(rerank_error(503))
    runner.run(_call({**SEARCH, "rerank": {"provider": "typesafe"}}))
    runner.run(_call(RERANKED))
    assert [("rerank" in r.body) for r in xerj.requests[4:]] == [True, False, False]


def test_an_older_node_refusing_the_key_is_remembered_for_every_provider(make_runner: Any,
                                                                       xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, rerank_memory_seconds=300)
    xerj.rerank = "unsupported"
    runner.run(_call(RERANKED))
    runner.run(_call({**SEARCH, "rerank": {"provider": "local"}}))
    assert [("rerank" in r.body) for r in xerj.requests] == [True, False, False]


@pytest.mark.parametrize("status", [500, 501])
def test_a_local_judge_fault_is_not_told_to_the_model_as_a_retryable_server_error(
    make_runner: Any, xerj: XerjStandIn, status: int
) -> None:
    runner = make_runner(url=xerj.url, rerank_fallback=False)
    xerj.fail_next(rerank_error(status))
    result = runner.run(_call(RERANKED))
    error = result.payload["error"]
    assert result.code == "rerank_unavailable" and error["retryable"] is False and len(xerj.requests) == 1
    assert "without `rerank`" in error["hint"]


def test_memory_store_retried_after_a_dropped_connection_stores_once(
    runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder
) -> None:
    xerj.fail_next(Fault(drop="after"))
    result = runner.run(_call({"namespace": "agent", "text": "likes tea"}, "xerj_memory_store"))
    assert result.ok and result.attempts == 2 and len(sleeps.waits) == 1
    ids = {r.body["id"] for r in xerj.requests}
    assert len(ids) == 1 and len(xerj.memories["agent"]) == 1
    assert result.payload["id"] == ids.pop()


def test_a_store_retried_with_dedup_reports_its_own_first_write_as_stored(
    runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder
) -> None:
    xerj.fail_next(Fault(drop="after"))  # the first attempt stores, its answer is lost
    result = runner.run(_call({"namespace": "agent", "text": "likes green tea", "dedup": True}, "xerj_memory_store"))
    payload = result.payload
    assert result.ok and result.attempts == 2 and len(xerj.memories["agent"]) == 1
    assert payload["created"] is True and "deduplicated" not in payload and "score" not in payload
    assert payload["id"] == xerj.requests[0].body["id"] and payload["notes"][0].startswith("stored")
    # A store that finds another memory is still reported as deduplicated, not stored.
    again = runner.run(_call({"namespace": "agent", "text": "likes green tea", "dedup": True}, "xerj_memory_store"))
    assert again.payload["deduplicated"] is True and again.payload["created"] is False
    assert again.payload["id"] == payload["id"] and "notes" not in again.payload


@pytest.mark.parametrize("status", [403, 429])
def test_an_index_block_is_not_a_credential_problem_and_is_not_retried(
    runner: Runner, xerj: XerjStandIn, sleeps: SleepRecorder, status: int
) -> None:
    # XERJ: IndexBlocked is 403 cluster_block_exception, 429 for a full disk (api error.rs:113-122)
    reason = "index [docs] is blocked for read operations"
    body = {"error": {"root_cause": [{"type": "cluster_block_exception", "reason": reason, "index": "docs"}],
                      "type": "cluster_block_exception", "reason": reason}, "status": status}
    xerj.fail_next(Fault(status=status, body=body))
    result = runner.run(_call(SEARCH))
    error = result.payload["error"]
    assert result.code == "forbidden" and result.attempts == 1 and sleeps.waits == []
    assert "'docs' is blocked for read operations" in error["hint"] and "credential" in error["hint"]
    assert "credentials are not the problem" in error["hint"] and error["retryable"] is False


def test_dropped_connection_before_an_answer_is_retried(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(drop="before"), Fault(drop="before"))
    result = runner.run(_call(SEARCH))
    assert result.ok and result.attempts == 3


def test_connection_refused_is_retried_then_reported(make_runner: Any, sleeps: SleepRecorder) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    runner = make_runner(url=f"http://127.0.0.1:{port}")
    result = runner.run(_call({**SEARCH, "index": "doc*"}))  # a pattern: no listing read first
    assert result.code == "unreachable" and result.attempts == 4 and len(sleeps.waits) == 3
    # a plain name: the index listing, read first, is not retried; its failure is the answer
    cold = runner.run(_call(SEARCH))
    assert cold.code == "unreachable" and cold.attempts == 0
    assert result.payload["error"]["retryable"] is True


def test_read_timeout_is_retried_then_reported(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, timeout=Timeout(read=0.1), retry=RetryPolicy(max_attempts=2))
    xerj.fail_next(Fault(delay=0.6), Fault(delay=0.6))
    result = runner.run(_call(SEARCH))
    assert result.code == "timeout" and result.attempts == 2


def test_non_idempotent_request_is_not_repeated_after_it_may_have_arrived(
    make_runner: Any, xerj: XerjStandIn
) -> None:
    def append_log(args: Any) -> HttpRequest:
        return HttpRequest("POST", "/_memory/log", {"text": args["index"]}, kind="memory_store", idempotent=False)

    runner = make_runner(url=xerj.url, handlers={"xerj_search": append_log})
    xerj.fail_next(Fault(drop="after"))
    result = runner.run(_call(SEARCH))
    assert result.attempts == 1 and result.code == "unreachable"


# Pure decisions, no socket.
REQ = HttpRequest("POST", "/docs/_search", {"query": {}}, kind="search")
RR_REQ = HttpRequest("POST", "/docs/_search", {"query": {}, "rerank": {}}, kind="search")


def _reply(status: int, body: bytes = b"{}", **headers: str) -> Reply:
    return Reply(status, {k.replace("_", "-"): v for k, v in headers.items()}, body)


def test_should_retry_decisions() -> None:
    policy = RetryPolicy()
    assert should_retry(REQ, _reply(503), policy)
    assert not should_retry(REQ, _reply(500), policy)
    assert not should_retry(REQ, _reply(400), policy)
    refusal = b'{"error":{"type":"rerank_exception","reason":"x"},"status":503}'
    assert not should_retry(RR_REQ, _reply(503, refusal), policy)
    assert should_retry(REQ, _reply(503, refusal), policy)  # no rerank asked: an ordinary 503
    assert should_retry(REQ, Failure("timeout", "t"), policy)
    assert not should_retry(HttpRequest("POST", "/x", idempotent=False), Failure("timeout", "t"), policy)
    assert should_retry(HttpRequest("POST", "/x", idempotent=False), Failure("unreachable", "c", sent=False), policy)
    assert not should_retry(REQ, Failure("too_large", "big"), policy)


def test_rerank_refusal_recognises_the_older_node() -> None:
    old = b'{"error":{"type":"parsing_exception","reason":"Unknown key for a START_OBJECT in [rerank]."},"status":400}'
    refusal = rerank_refusal(RR_REQ, _reply(400, old))
    assert refusal is not None and refusal.lasting
    assert rerank_refusal(RR_REQ, _reply(400, b'{"error":{"type":"x","reason":"other"}}')) is None


@pytest.mark.parametrize(("value", "expected"), [("7", 7.0), ("0", 0.0), ("-3", 0.0), ("soon", None), ("nan", None)])
def test_retry_after_parsing(value: str, expected: float | None) -> None:
    assert retry_after_seconds(_reply(429, retry_after=value)) == expected


def test_retry_policy_rejects_nonsense() -> None:
    from xerj_tools import ConfigurationError

    with pytest.raises(ConfigurationError):
        RetryPolicy(max_attempts=0)
    assert RetryPolicy.never().max_attempts == 1


def _call(arguments: dict[str, Any], tool: str = "xerj_search") -> dict[str, Any]:
    from conftest import chat_call

    return chat_call(tool, arguments)
