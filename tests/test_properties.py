"""Property: for any JSON as arguments, dispatch never raises, and either answers ok:false having
sent nothing, or sends exactly the request the contract allows. (XERJ_HYPOTHESIS_EXAMPLES sets
the count; a few hundred per tool by default.)"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import Dispatcher, load_registry

EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "250"))
REGISTRY = load_registry()

leaf = st.one_of(st.none(), st.booleans(), st.integers(-20_000, 20_000), st.floats(allow_nan=False),
                 st.text(max_size=20))
json_value = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)
clause = st.sampled_from([{}, {"match": {"body": "checkout"}}, {"match_all": {}}, {"term": {"status": "open"}},
                          {"bool": {"filter": [{"term": {"kind": "runbook"}}]}}, {"match": {"body": "x"}, "size": 3}])
PLAUSIBLE: dict[str, Any] = {
    "index": st.sampled_from(["docs", "tickets", "do*", "docs,tickets", "../x", ".secret", ""]),
    "namespace": st.sampled_from(["agent", "tenant-a.notes", "Bad NS", "a..b", ""]),
    "query": st.one_of(clause, st.text(max_size=12)),
    "field": st.sampled_from(["body", "body_vector", ""]),
    "text": st.text(max_size=30),
    "size": st.integers(-3, 12_000), "from": st.integers(-3, 12_000), "k": st.integers(-1, 12_000),
    "num_candidates": st.integers(-1, 2000), "rrf_k": st.integers(-1, 100),
    "query_vector": st.lists(st.floats(-1, 1), max_size=4), "vector": st.lists(st.floats(-1, 1), max_size=4),
    "queries": st.lists(st.fixed_dictionaries({"query": clause}, optional={"weight": st.floats(0, 3)}), max_size=3),
    "fusion": st.sampled_from(["rrf", "linear", "learned"]),
    "rerank": st.one_of(st.just({}), st.fixed_dictionaries({}, optional={
        "query": st.text(max_size=10), "window": st.integers(0, 400), "min_score": st.floats(-1, 2)})),
    "source": st.one_of(st.booleans(), st.lists(st.sampled_from(["title", "body"]), max_size=2)),
    "sort": st.sampled_from([[{"year": "desc"}], "year", {"year": "asc"}]),
    "aggs": st.just({"k": {"terms": {"field": "kind"}}}),
    "track_total_hits": st.one_of(st.booleans(), st.integers(-2, 100)),
    "semantic": st.booleans(), "dedup": st.booleans(), "dedup_threshold": st.floats(-1, 2),
    "recency_weight": st.floats(-1, 2), "id": st.text(max_size=10),
    "filter": st.just({"term": {"kind": "runbook"}}), "metadata": st.just({"kind": "note"}),
}
ALLOWED_BODY = {
    "xerj_search": {"query", "size", "from", "sort", "aggs", "track_total_hits", "_source", "rerank"},
    "xerj_semantic_search": {"query", "size", "_source"},
    "xerj_vector_search": {"knn", "size", "_source"},
    "xerj_hybrid_search": {"query", "size", "_source", "rerank"},
    "xerj_memory_store": {"text", "id", "metadata", "vector", "dedup", "dedup_threshold"},
    "xerj_memory_recall": {"query", "vector", "semantic", "k", "filter", "recency_weight"},
}
SEARCH_REPLY = {"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}


def arguments_for(tool: str) -> st.SearchStrategy[Any]:
    parameters = REGISTRY.get(tool).parameters  # type: ignore[union-attr]
    required = set(parameters.get("required", []))
    optional = [k for k in parameters["properties"] if k not in required]
    likely = st.fixed_dictionaries({k: PLAUSIBLE[k] for k in required},
                                   optional={k: PLAUSIBLE[k] for k in optional})
    fuzzed = st.fixed_dictionaries({}, optional={k: st.one_of(PLAUSIBLE[k], json_value)
                                                 for k in parameters["properties"]})
    return st.one_of(likely, likely.map(json.dumps), fuzzed, json_value, st.text(max_size=40))


def check_request(tool: str, arguments: Any, request: httpx.Request) -> None:
    body = json.loads(request.content)
    raw = request.url.raw_path.decode().split("?")[0].strip("/").split("/")
    assert request.method == "POST" and set(body) <= ALLOWED_BODY[tool]
    assert None not in body.values()
    if tool.startswith("xerj_memory"):
        assert raw[0] == "_memory" and len(raw) == (2 if tool == "xerj_memory_store" else 3)
        assert unquote(raw[1]).islower() or unquote(raw[1]).replace(".", "").replace("-", "").replace("_", "").isalnum()
        if tool == "xerj_memory_recall":
            assert raw[2] == "_recall" and not ("vector" in body and "query" in body)
        else:
            assert isinstance(body["text"], str) and body["id"]
        return
    assert len(raw) == 2 and raw[1] == "_search" and not unquote(raw[0]).startswith((".", "_"))
    size, start = body.get("size", 10), body.get("from", 0)
    assert isinstance(size, int) and isinstance(start, int) and size >= 0 and start >= 0 and size + start <= 10_000


@pytest.mark.parametrize("tool", sorted(ALLOWED_BODY))
def test_dispatch_never_raises_and_sends_only_contract_requests(tool: str) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.url.path.endswith("_search"):
            return httpx.Response(200, json=SEARCH_REPLY)
        if request.url.path.endswith("_recall"):
            return httpx.Response(200, json={"hits": [], "namespace": "n"})
        return httpx.Response(201, json={"id": "x", "namespace": "n", "created": True})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    dispatcher = Dispatcher(url="http://xerj.test", client=client)

    outcomes: list[bool] = []

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments=arguments_for(tool))
    def check(arguments: Any) -> None:
        sent.clear()
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        message = dispatcher.dispatch({"id": "c", "type": "function", "function": {"name": tool, "arguments": raw}})
        payload = json.loads(message["content"])  # type: ignore[typeddict-item]
        outcomes.append(payload["ok"])
        if payload["ok"]:
            assert len(sent) == 1
            check_request(tool, arguments, sent[0])
        else:
            assert sent == [] and payload["error"]["code"] in ("invalid_arguments", "invalid_json", "policy_denied")
            assert payload["error"]["hint"]

    try:
        check()
    finally:
        dispatcher.close()
        client.close()
    # the generated calls reach both branches: some are sent, most are refused
    assert any(outcomes) and not all(outcomes), (sum(outcomes), len(outcomes))
    print(f"{tool}: {sum(outcomes)} of {len(outcomes)} generated calls were sent")
