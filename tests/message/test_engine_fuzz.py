"""Property: whatever the engine answers (any status; deep, non-finite, wrong-typed or erroneous
JSON; stacked or broken content codings; bytes), every tool's message is strict JSON within its
budget, and dispatch never raises. (XERJ_HYPOTHESIS_EXAMPLES sets the count.)"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from typing import Any

import httpx2
import pytest
from canned import listing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tool_examples import example_arguments

from xerj_tools import (
    ERROR_CODES,
    XERJ_TOOLS,
    Dispatcher,
    HttpRequest,
    Limits,
    RetryPolicy,
    Tool,
    load_registry,
)
from xerj_tools.testing import XerjStandIn

EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "250")) // 2
BUDGET = 1000
# A custom tool that carries its own definition is fuzzed like the library's own.
CUSTOM = Tool(name="count_docs", build=lambda a: HttpRequest("POST", f"/{a['index']}/_count", {}),
              description="Count the documents of an index.",
              parameters={"type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]})
REGISTRY = load_registry().with_definitions([CUSTOM.definition() or {}])
# Arguments for each tool: these, else a plain example made from its schema.
VALID = {
    "xerj_search": {"index": "docs", "query": {"match": {"body": "x"}}, "source": "*"},
    "xerj_semantic_search": {"index": "docs", "field": "body", "query": "x"},
    "xerj_vector_search": {"index": "docs", "field": "body_vector", "query_vector": [0.1, 0.2]},
    "xerj_hybrid_search": {"index": "docs", "queries": [{"query": {"match": {"body": "x"}}}]},
    "xerj_memory_store": {"namespace": "agent", "text": "tea"},
    "xerj_memory_recall": {"namespace": "agent", "query": "tea"},
}

# JSON text, built as text so that it can hold what Python would not write: NaN, 1e999, depth.
number = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "1", "0.5", "-3", "1e308"])
string = st.text(max_size=30).map(json.dumps) | st.integers(0, 20_000).map(lambda n: json.dumps("w" * n))
scalar = number | string | st.sampled_from(["null", "true", "false"])


def deep(depth: int, inner: str, kind: str) -> str:
    if kind == "list":
        return "[" * depth + inner + "]" * depth
    return '{"a":' * depth + inner + "}" * depth


def obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in pairs) + "}"


value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]")
    | st.lists(st.tuples(st.sampled_from(["_id", "_source", "total", "value", "hits", "error", "body",
                                          "body_vector", "reason", "type", "buckets", "inner_hits", "x"]),
                         inner), max_size=4).map(obj)
    | st.builds(deep, st.sampled_from([50, 99, 101, 400, 999, 5_000, 100_000]), inner,
                st.sampled_from(["list", "dict"])),
    max_leaves=10,
)
hit = st.fixed_dictionaries({"_id": string, "_score": number, "_source": value}).map(lambda d: obj(list(d.items())))
search_reply = st.builds(
    lambda total, rows, aggs, shards: obj([("hits", obj([("total", total), ("hits", "[" + ",".join(rows) + "]")])),
                                           ("aggregations", aggs), ("_shards", shards)]),
    value | st.just('{"value":3,"relation":"eq"}'), st.lists(hit | value, max_size=6), value,
    value | st.just('{"total":2,"failed":1,"failures":[{"reason":{"type":"x","reason":"bad"}}]}'),
)
recall_reply = st.lists(value, max_size=5).map(lambda rows: obj([("namespace", '"agent"'), ("hits", "[" + ",".join(rows) + "]")]))
store_reply = st.builds(lambda i, c: obj([("id", i), ("namespace", '"agent"'), ("created", c)]), string | value, value)
error_reply = st.builds(lambda t, r: obj([("error", obj([("type", t), ("reason", r)])), ("status", "500")]), value, value)
any_body = search_reply | recall_reply | store_reply | error_reply | value


def gz(data: bytes) -> bytes:
    return gzip.compress(data, 1)


CODINGS: dict[str, Any] = {
    "": lambda b: b, "gzip": gz, "deflate": zlib.compress, "gzip, gzip": lambda b: gz(gz(b)),
    "br": lambda b: b, "x-bogus": lambda b: b, "gzip ": lambda b: gz(b)[:-5],
    "deflate, gzip": lambda b: gz(zlib.compress(b)),
}


def replies(tool: str) -> st.SearchStrategy[tuple[int, bytes, str]]:
    own = {"xerj_memory_store": store_reply, "xerj_memory_recall": recall_reply}.get(tool, search_reply)
    return st.tuples(
        st.sampled_from([200, 200, 200, 201, 204, 400, 401, 404, 429, 500, 502, 503]),
        (own | own | any_body).map(str.encode) | st.binary(max_size=64),
        st.sampled_from(sorted(CODINGS)),
    )


OK_REPLY = {"count_docs": (200, b'{"count":3}', ""),
            "xerj_memory_store": (201, b'{"id":"m1","namespace":"agent","created":true}', ""),
            "xerj_memory_recall": (200, b'{"namespace":"agent","hits":[]}', "gzip")}
SEARCH_OK = (200, b'{"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}', "deflate")


def arguments(tool: str) -> dict[str, Any]:
    return VALID.get(tool) or example_arguments(REGISTRY, tool)


def ok_reply(tool: str) -> tuple[int, bytes, str]:
    """A reply the tool reads as a result: the stand-in's answer to its plain arguments."""
    if tool in OK_REPLY or XERJ_TOOLS[tool].fit == "hits":
        return OK_REPLY.get(tool, SEARCH_OK)
    with XerjStandIn() as xerj, Dispatcher(url=xerj.url) as dispatcher:
        prepared = dispatcher._core.prepare(dispatcher.begin(
            {"id": "c", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments(tool))}})[0])
        request = getattr(prepared, "request")  # noqa: B009 - a ToolCallError here fails the test
        reply = httpx2.request(request.method, xerj.url + request.path, json=request.body)
    return reply.status_code, reply.content, ""


@pytest.mark.parametrize("tool", REGISTRY.names)
def test_any_engine_reply_gives_a_strict_message_within_the_budget(tool: str) -> None:
    answer: list[tuple[int, bytes, str]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/_resolve/index/*":  # the listing the names are resolved against
            return httpx2.Response(200, json=listing())
        status, body, coding = answer[0]
        headers = {"Content-Type": "application/json", "Retry-After": "0"}
        if coding:
            headers["Content-Encoding"] = coding
        # a stream, so that the dispatcher reads the raw bytes as they would come off a socket
        return httpx2.Response(status, headers=headers, stream=httpx2.ByteStream(CODINGS[coding](body)))

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    dispatcher = Dispatcher(url="http://xerj.test", client=client, budget=BUDGET, retry=RetryPolicy.never(),
                            limits=Limits(max_response_bytes=2 * 1024 * 1024), tools=[CUSTOM])
    call = {"id": "c", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments(tool))}}
    outcomes: list[bool] = []

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    @settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
    @given(reply=replies(tool))
    @example(reply=ok_reply(tool))  # both branches are reached, whatever is drawn
    @example(reply=(200, b'{"error":"boom"}', "gzip, gzip"))
    def check(reply: tuple[int, bytes, str]) -> None:
        answer[:] = [reply]
        content = dispatcher.dispatch(call)["content"]  # type: ignore[typeddict-item]
        assert len(content) <= BUDGET
        payload = json.loads(content, parse_constant=refuse)
        assert payload["ok"] in (True, False) and "tool" not in payload
        if not payload["ok"]:
            assert payload["error"]["code"] in ERROR_CODES and payload["error"]["reason"]
        outcomes.append(payload["ok"])

    try:
        check()
    finally:
        dispatcher.close()
        client.close()
    assert any(outcomes) and not all(outcomes), (sum(outcomes), len(outcomes))
