"""The envelope a model reads, built from XERJ replies without a socket."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xerj_tools import ERROR_CODES, HttpRequest
from xerj_tools._http._models import Failure, Reply
from xerj_tools._message._format import engine_error

from conftest import success_payload

SEARCH = HttpRequest("POST", "/docs/_search", {"query": {}, "_source": {"excludes": ["*_vector"]}}, kind="search")


def reply(status: int, data: Any, **headers: str) -> Reply:
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    return Reply(status, headers, body, "http://127.0.0.1:9200")


def search_body(hits: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"took": 1, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": hits}, **extra}


def test_no_hits_is_ok_with_total_zero() -> None:
    payload = success_payload("xerj_search", reply(200, search_body([])), SEARCH)
    assert payload == {"ok": True, "total": 0, "hits": [], "ranked_by": "engine"}


def test_hits_keep_only_what_the_model_needs_and_no_vectors() -> None:
    hit = {"_index": "docs", "_id": "1", "_score": 1.5, "_version": 3, "_seq_no": 9, "_ignored": ["x"],
           "_source": {"title": "T", "body": "B", "body_vector": [0.1] * 384, "body_vector_chunks": [[0.1]]},
           "highlight": {"body": ["<em>B</em>"]}}
    payload = success_payload("xerj_search", reply(200, search_body([hit])), SEARCH)
    assert payload["hits"] == [{"_index": "docs", "_id": "1", "_score": 1.5,
                                "_source": {"title": "T", "body": "B"}, "highlight": {"body": ["<em>B</em>"]}}]


def test_vectors_stay_when_the_model_named_its_fields() -> None:
    request = HttpRequest("POST", "/docs/_search", {"query": {}, "_source": ["body_vector"]}, kind="search")
    hit = {"_index": "docs", "_id": "1", "_score": 1.0, "_source": {"body_vector": [0.5, 0.5]}}
    payload = success_payload("xerj_search", reply(200, search_body([hit])), request)
    assert payload["hits"][0]["_source"] == {"body_vector": [0.5, 0.5]}


def test_total_relation_and_untracked_total() -> None:
    body = search_body([])
    body["hits"]["total"] = {"value": 10000, "relation": "gte"}
    payload = success_payload("xerj_search", reply(200, body), SEARCH)
    assert payload["total"] == 10000 and payload["total_relation"] == "gte"
    del body["hits"]["total"]
    assert success_payload("xerj_search", reply(200, body), SEARCH)["total"] is None


def test_partial_results_appear_as_warnings() -> None:
    body = search_body([], timed_out=True)
    body["_shards"]["failed"] = 1
    payload = success_payload("xerj_search", reply(200, body), SEARCH)
    assert payload["ok"] is True and len(payload["warnings"]) == 2


def test_applied_and_degraded_rerank_blocks() -> None:
    applied = {"applied": True, "provider": "jev", "score_kind": "probability", "judged": 4, "unjudged": 1,
               "usage": {"input_tokens": 100}, "took_ms": 212}
    request = HttpRequest("POST", "/d/_search", {"query": {}, "rerank": {}}, kind="search")
    payload = success_payload("xerj_search", reply(200, search_body([], _rerank=applied)), request)
    assert payload["ranked_by"] == "reranker"
    assert payload["rerank"] == {"applied": True, "judged": 4, "unjudged": 1, "provider": "jev",
                                 "score_kind": "probability", "usage": {"input_tokens": 100},
                                 "scores": "probability"}
    degraded = {"applied": False, "reason": "rerank deadline exceeded after 301ms", "score_kind": "engine"}
    payload = success_payload("xerj_search", reply(200, search_body([], _rerank=degraded)), request)
    assert payload["ranked_by"] == "engine"
    assert payload["rerank"]["applied"] is False and "deadline" in payload["rerank"]["reason"]


def test_every_rerank_count_reaches_the_model_and_silent_fields_are_a_warning() -> None:
    # rerank_stage.rs `apply` (xerj 11b0cd0): what was skipped, dropped or failed, and the
    # `rerank.fields` no hit in the window returned text for.
    block = {"applied": True, "provider": "jev", "model": "jev-latest", "score_kind": "probability",
             "window": 5, "judged": 3, "unjudged": 2, "skipped_no_text": 1, "pruned_below_min_score": 0,
             "dropped_unjudged": 0, "fields_without_text": ["bdoy"], "partial_failures": 1,
             "usage": {"input_tokens": 100, "output_tokens": 10}, "query": "q", "took_ms": 9}
    request = HttpRequest("POST", "/d/_search", {"query": {}, "rerank": {"fields": ["bdoy"]}}, kind="search")
    payload = success_payload("xerj_search", reply(200, search_body([], _rerank=block)), request)
    kept = {k: v for k, v in block.items() if k not in ("query", "took_ms")}
    assert payload["rerank"] == {**kept, "scores": "probability"}
    assert any("rerank.fields named bdoy" in w for w in payload["warnings"])


def test_hybrid_message_names_its_fusion() -> None:
    request = HttpRequest("POST", "/d/_search", {"query": {"hybrid": {"queries": [{}, {}], "fusion": "linear"}}},
                          kind="search")
    payload = success_payload("xerj_hybrid_search", reply(200, search_body([])), request)
    assert payload["fusion"] == {"type": "linear", "queries": 2}


def test_memory_messages() -> None:
    store = HttpRequest("POST", "/_memory/n", {}, kind="memory_store")
    dedup = {"id": "old", "namespace": "n", "created": False, "deduplicated": True, "score": 0.97}
    assert success_payload("xerj_memory_store", reply(200, dedup), store) == {"ok": True, **dedup}
    recall = HttpRequest("POST", "/_memory/n/_recall", {}, kind="memory_recall")
    data = {"hits": [{"id": "a", "text": "t", "metadata": None, "score": 0.6, "graph": {}},
                     {"id": "b", "text": "u", "metadata": {"k": 1}, "score": 0.5}], "namespace": "n"}
    payload = success_payload("xerj_memory_recall", reply(200, data), recall)
    # the hits alone: no namespace echo, no count of them, no null metadata
    assert payload == {"ok": True,
                       "hits": [{"id": "a", "text": "t", "score": 0.6},
                                {"id": "b", "text": "u", "metadata": {"k": 1}, "score": 0.5}]}


INDEX_404 = {"error": {"root_cause": [{"type": "index_not_found_exception", "reason": "no such index [x]"}],
                       "type": "index_not_found_exception", "reason": "no such index [x]"}, "status": 404}


@pytest.mark.parametrize(
    ("outcome", "code", "reason_part"),
    [
        (reply(404, INDEX_404), "index_not_found", "no such index [x]"),
        (reply(401, {"error": {"type": "security_exception", "reason": "missing or invalid API key"}}), "unauthorized", "API key"),
        (reply(400, {"error": {"type": "search_phase_execution_exception", "reason": "all shards failed",
                               "root_cause": [{"type": "illegal_argument_exception", "reason": "bad search_after"}]}}),
         "bad_request", "bad search_after"),
        (reply(400, {"error": {"type": "memory_error", "reason": "vector must not be empty"}, "status": 400}),
         "bad_request", "vector must not be empty"),
        (reply(502, b"<html><body>Bad Gateway</body></html>"), "server_error", "Bad Gateway"),
        (reply(200, b"<html>proxy login</html>"), "invalid_response", "not JSON"),
        (reply(500, b""), "server_error", "empty body"),
        (Failure("unreachable", "connection failed (ConnectError)", "http://n"), "unreachable", "ConnectError"),
        (Failure("timeout", "no answer in time", "http://n"), "timeout", "in time"),
        (Failure("too_large", "larger than 10 bytes", "http://n"), "response_too_large", "larger"),
    ],
)
def test_error_classification(outcome: Any, code: str, reason_part: str) -> None:
    error = engine_error(outcome, SEARCH)
    assert error.code == code and reason_part in error.reason
    assert code in ERROR_CODES


def test_success_status_with_unreadable_body_is_an_error() -> None:
    from xerj_tools import EngineError

    with pytest.raises(EngineError) as info:
        success_payload("xerj_search", reply(200, b"{truncated"), SEARCH)
    assert info.value.code == "invalid_response"


def test_every_error_code_is_documented_with_its_retryable_flag() -> None:
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "messages.md").read_text()
    table = dict(re.findall(r"^\| `([a-z_]+)` \| .* \| (yes|no) \|$", page, flags=re.M))
    assert set(table) == set(ERROR_CODES)
    for code, (retryable, hint) in ERROR_CODES.items():
        assert hint and (table[code] == "yes") == retryable, code
