"""Whatever the engine answers, the model gets a strict-JSON tool message within its budget that
says what happened: deep bodies, NaN, errors inside a 200, missing fields, shard failures,
inner hits and stored vectors. (Pure shaping: the engine is an `httpx2.MockTransport`.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from support import nested_bytes

from xerj_tools import Dispatcher

SEARCH = {"index": "docs", "query": {"match": {"body": "x"}}}


def strict(content: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(content, parse_constant=refuse)


# XERJ's `_resolve/index/*` (es_compat.rs:15816-15863) for the indices these tests name
LISTING = {"indices": [{"name": n, "attributes": ["open"]} for n in ("docs", "idx")],
           "aliases": [], "data_streams": []}


class Engine:
    """A dispatcher whose engine answers every request with `status` and `body` (and the index
    listing with `LISTING`)."""

    def __init__(self, budget: int = 12_000) -> None:
        self.status, self.body, self.headers = 200, b"{}", {}
        self.sent: list[httpx2.Request] = []
        self.client = httpx2.Client(transport=httpx2.MockTransport(self._answer))
        self.dispatcher = Dispatcher(url="http://xerj.test", client=self.client, budget=budget)
        self.budget = budget

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/_resolve/index/*":  # the listing names are resolved against
            return httpx2.Response(200, json=LISTING)
        self.sent.append(request)
        return httpx2.Response(self.status, content=self.body, headers=self.headers)

    def reply(self, body: Any, status: int = 200) -> None:
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()

    def call(self, tool: str = "xerj_search", arguments: Any = None) -> dict[str, Any]:
        raw = json.dumps(SEARCH if arguments is None else arguments)
        message = self.dispatcher.dispatch({"id": "c", "type": "function", "function": {"name": tool, "arguments": raw}})
        content = message["content"]  # type: ignore[typeddict-item]
        assert len(content) <= self.budget, len(content)
        return strict(content)  # type: ignore[no-any-return]


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine()
    yield e
    e.dispatcher.close()
    e.client.close()


def hits(*sources: Any, total: Any = None, **extra: Any) -> dict[str, Any]:
    rows = [{"_index": "docs", "_id": str(i), "_score": 1.0, "_source": s} for i, s in enumerate(sources)]
    return {"took": 1, "timed_out": False,
            "hits": {"total": {"value": len(rows), "relation": "eq"} if total is None else total, "hits": rows},
            **extra}


# -- depth --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "code"), [(200, "invalid_response"), (400, "bad_request"), (500, "server_error")])
def test_a_body_nested_100k_levels_is_a_tool_message(engine: Engine, status: int, code: str) -> None:
    engine.reply(nested_bytes(100_000), status)
    payload = engine.call()
    assert payload["ok"] is False and payload["error"]["code"] == code
    if status == 200:
        assert "nested too deeply" in payload["error"]["reason"]


def test_aggregations_500_levels_deep_are_cut_with_a_marker(engine: Engine) -> None:
    deep = nested_bytes(500, key="sub").decode()
    engine.reply(b'{"hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}, "aggregations": ' + deep.encode() + b"}")
    payload = engine.call()
    assert payload["ok"] is True and "nested deeper than" in json.dumps(payload["aggregations"])


@pytest.mark.parametrize("depth", [400, 5000])
def test_a_deep_source_that_must_be_cut_to_the_budget(engine: Engine, depth: int) -> None:
    rows = [b'{"_id": "0", "_source": ' + nested_bytes(depth, leaf="y" * 3000, key="k") + b"}"]
    rows += [json.dumps({"_id": str(i), "_source": {"body": "z" * 4000}}).encode() for i in range(1, 6)]
    engine.reply(b'{"hits": {"total": {"value": 6, "relation": "eq"}, "hits": [' + b",".join(rows) + b"]}}")
    payload = engine.call()
    if payload["ok"]:
        assert payload["truncated"] and "nested deeper than" in json.dumps(payload["hits"][0])
    else:  # deeper than Python decodes: the whole answer is unreadable, and says so
        assert depth > 1000 and payload["error"]["code"] == "invalid_response"


# -- numbers JSON cannot carry ------------------------------------------------------------------

@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999"])
def test_non_finite_numbers_become_null(engine: Engine, literal: bytes) -> None:
    template = (b'{"hits": {"total": {"value": 1, "relation": "eq"}, "max_score": N, "hits": [{"_id": "1",'
                b' "_score": N, "_source": {"price": N, "tags": [1, N]}, "sort": [N]}]}, "aggregations":'
                b' {"avg": {"value": N}}}')
    body = template.replace(b"N", literal)
    engine.reply(body)
    payload = engine.call()
    assert payload["ok"] is True
    assert payload["hits"][0]["_score"] is None and payload["hits"][0]["_source"] == {"price": None, "tags": [1, None]}
    assert payload["aggregations"]["avg"]["value"] is None


@pytest.mark.parametrize("total", [list(range(3000)), {"value": list(range(3000)), "relation": "eq"},
                                   {"value": "12"}, "many", -5, True, 1.5])
def test_a_total_of_the_wrong_type_is_null_and_fits(total: Any) -> None:
    engine = Engine(budget=1000)
    try:
        engine.reply(hits({"title": "t"}, total=total))
        payload = engine.call()
    finally:
        engine.dispatcher.close()
    assert payload["ok"] is True and payload["total"] is None


# -- a 2xx that is not a result -----------------------------------------------------------------

@pytest.mark.parametrize("error", [{"type": "search_phase_execution_exception", "reason": "all shards failed"},
                                   "something broke"])
def test_an_error_inside_a_200_is_a_failure(engine: Engine, error: Any) -> None:
    engine.reply({"error": error, "status": 500})
    payload = engine.call()
    assert payload["ok"] is False and payload["error"]["code"] == "invalid_response"
    assert ("all shards failed" if isinstance(error, dict) else error) in payload["error"]["reason"]


@pytest.mark.parametrize(("tool", "arguments", "body"), [
    ("xerj_search", SEARCH, {"took": 1}),
    ("xerj_search", SEARCH, {"hits": []}),
    ("xerj_search", SEARCH, {"hits": {"total": 3}}),
    ("xerj_search", SEARCH, {"hits": {"hits": "none"}}),
    ("xerj_memory_recall", {"namespace": "agent", "query": "tea"}, {"namespace": "agent"}),
    ("xerj_memory_recall", {"namespace": "agent", "query": "tea"}, {"hits": {"hits": []}}),
    ("xerj_memory_store", {"namespace": "agent", "text": "tea"}, {"namespace": "agent", "created": True}),
])
def test_a_2xx_without_what_the_tool_needs_is_a_failure(
    engine: Engine, tool: str, arguments: Any, body: Any
) -> None:
    engine.reply(body)
    payload = engine.call(tool, arguments)
    assert payload["ok"] is False and payload["error"]["code"] == "invalid_response", payload


# -- information the model needs ----------------------------------------------------------------

def test_failed_shards_say_why(engine: Engine) -> None:
    # XERJ's shard failure entry: engine/crates/xerj-api/src/es_compat.rs:8012-8019, 10504
    failure = {"shard": 0, "index": "docs", "node": "xerj-node-1", "reason": {
        "type": "illegal_argument_exception",
        "reason": "Negative values are not supported by the HDRHistogram percentiles aggregation"}}
    engine.reply(hits({"t": 1}, _shards={"total": 2, "successful": 1, "failed": 1, "failures": [failure] * 3}))
    payload = engine.call()
    assert payload["ok"] is True
    text = " ".join(payload["warnings"])
    assert "1 of 2 shards failed" in text and "Negative values are not supported" in text
    assert text.count("Negative values") == 1  # the same reason is said once


def test_inner_hits_are_kept_without_vectors(engine: Engine) -> None:
    inner = {"comments": {"hits": {"total": {"value": 1, "relation": "eq"}, "hits": [
        {"_id": "1", "_nested": {"field": "comments", "offset": 0}, "_score": 1.0,
         "_source": {"text": "hello", "text_vector": [0.1] * 384}}]}}}
    body = hits({"title": "t"})
    body["hits"]["hits"][0]["inner_hits"] = inner
    engine.reply(body)
    payload = engine.call()
    kept = payload["hits"][0]["inner_hits"]["comments"]["hits"]["hits"][0]
    assert kept["_source"] == {"text": "hello"} and kept["_nested"] == {"field": "comments", "offset": 0}


@pytest.mark.parametrize(("source", "kept"), [
    ("*", set()), (["body*"], set()), (["*"], set()), ("body,title", set()), (["body", "title"], set()),
    (["body_vector"], {"body_vector"}), ("body_vector,title", {"body_vector"}),
    (["body_vector_chunks", "body*"], {"body_vector_chunks"}),
])
def test_vectors_come_back_only_when_named_exactly(engine: Engine, source: Any, kept: set[str]) -> None:
    # XERJ keeps a semantic field's embedding in _source as `<field>_vector`
    # (engine/crates/xerj-engine/src/index.rs:5077) and cannot exclude it with a wildcard
    # (index.rs:15826 `field_matches` knows only a trailing `*`).
    stored = {"title": "t", "body": "b", "body_vector": [0.5] * 384, "body_vector_chunks": [[0.5] * 384]}
    engine.reply(hits(stored))
    payload = engine.call(arguments={**SEARCH, "source": source})
    vectors = {k for k in payload["hits"][0]["_source"] if k.endswith(("_vector", "_vector_chunks"))}
    assert vectors == kept
