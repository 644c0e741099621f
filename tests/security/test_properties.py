"""Property: for any JSON as arguments, dispatch never raises, and either answers ok:false having
sent nothing, or sends exactly the request the contract allows. The inputs include hostile ones:
nesting far past the depth limit, non-finite numbers (written as 1e400, -1e999, NaN), integers
written as floats (5000.0), arguments of the wrong type, already decoded dicts. A second
property holds the operator's caps against integers written as floats. (XERJ_HYPOTHESIS_EXAMPLES
sets the count; a few hundred per tool by default.)"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote

import httpx2
import pytest
from canned import listing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import nested
from tool_examples import example_arguments

from xerj_tools import (
    MAX_ARGUMENT_DEPTH,
    XERJ_TOOLS,
    Dispatcher,
    Policy,
    RetryPolicy,
    load_registry,
)
from xerj_tools.testing import XerjStandIn

EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "250"))
REGISTRY = load_registry()

leaf = st.one_of(st.none(), st.booleans(), st.integers(-20_000, 20_000), st.floats(allow_nan=False),
                 st.text(max_size=20))
json_value = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)
# Hostile values: nesting around and far past the limit, non-finite numbers, whole floats.
deep = st.integers(MAX_ARGUMENT_DEPTH - 4, 3 * MAX_ARGUMENT_DEPTH).map(
    lambda levels: nested(levels, kind="array" if levels % 2 else "object")
)
non_finite = st.sampled_from([float("inf"), float("-inf"), float("nan")])
whole_float = st.integers(-3, 12_000).map(float)
hostile = st.one_of(deep, non_finite, whole_float, st.lists(st.one_of(non_finite, deep), min_size=1, max_size=2))
integer = st.one_of(st.integers(-3, 12_000), whole_float)
clause = st.sampled_from([{}, {"match": {"body": "checkout"}}, {"match_all": {}}, {"term": {"status": "open"}},
                          {"bool": {"filter": [{"term": {"kind": "runbook"}}]}}, {"match": {"body": "x"}, "size": 3}])
PLAUSIBLE: dict[str, Any] = {
    "index": st.sampled_from(["docs", "tickets", "do*", "docs,tickets", "../x", ".secret", ""]),
    "namespace": st.sampled_from(["agent", "tenant-a.notes", "Bad NS", "a..b", ""]),
    "query": st.one_of(clause, st.text(max_size=12)),
    "field": st.sampled_from(["body", "body_vector", ""]),
    "text": st.text(max_size=30),
    "size": integer, "from": integer, "k": integer, "num_candidates": integer, "rrf_k": st.integers(-1, 100),
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
# Beyond what every tool's requests must hold (`check_request`), the body keys some tools may send.
ALLOWED_BODY = {
    "xerj_search": {"query", "size", "from", "sort", "aggs", "track_total_hits", "_source", "rerank"},
    "xerj_semantic_search": {"query", "size", "_source"},
    "xerj_vector_search": {"knn", "size", "_source"},
    "xerj_hybrid_search": {"query", "size", "_source", "rerank"},
    "xerj_memory_store": {"text", "id", "metadata", "vector", "dedup", "dedup_threshold"},
    "xerj_memory_recall": {"query", "vector", "semantic", "k", "filter", "recency_weight"},
}
SEARCH_REPLY = {"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}
BY_TYPE: dict[str, Any] = {"string": st.text(max_size=12), "integer": integer, "number": st.floats(-1, 2),
                           "boolean": st.booleans(), "array": st.lists(leaf, max_size=3), "object": json_value}


def plausible(key: str, schema: Any) -> st.SearchStrategy[Any]:
    """Values a model would plausibly send for `key`: the table's, else by the schema's type (so a
    new tool's new argument is fuzzed too)."""
    if key in PLAUSIBLE:
        return PLAUSIBLE[key]  # type: ignore[no-any-return]
    kind = schema.get("type") if isinstance(schema, dict) else None
    return BY_TYPE.get(kind if isinstance(kind, str) else "", json_value)  # type: ignore[no-any-return]


def arguments_for(tool: str) -> st.SearchStrategy[Any]:
    parameters = REGISTRY.get(tool).parameters  # type: ignore[union-attr]
    properties = parameters["properties"]
    required = set(parameters.get("required", []))
    optional = [k for k in properties if k not in required]
    likely = st.fixed_dictionaries({k: plausible(k, properties[k]) for k in required},
                                   optional={k: plausible(k, properties[k]) for k in optional})
    fuzzed = st.fixed_dictionaries({}, optional={k: st.one_of(plausible(k, v), json_value, hostile)
                                                 for k, v in properties.items()})
    poisoned = st.builds(lambda args, key, bad: {**args, key: bad}, likely,
                         st.sampled_from(sorted(parameters["properties"])), hostile)
    very_deep = st.integers(1_000, 100_000).map(
        lambda n: '{"index": "docs", "query": {"bool": {"filter": ' + "[" * n + "]" * n + "}}}")
    return st.one_of(likely, likely.map(json.dumps), fuzzed, poisoned, json_value, st.text(max_size=40),
                     very_deep, st.sampled_from([5, 2.5, [1, 2], ["index", "docs"], True]))


def encode(arguments: Any) -> Any:
    """What the model sends: JSON text, with infinities written as numbers too large for a float
    (which decode to inf); strings and non-JSON-object values are sent as they are."""
    if isinstance(arguments, str) or not isinstance(arguments, dict):
        return arguments
    text = json.dumps(arguments)
    return text.replace("-Infinity", "-1e999").replace("Infinity", "1e400")


def strict_json(content: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} sent to the engine")

    return json.loads(content, parse_constant=refuse)


def check_request(tool: str, request: httpx2.Request) -> None:
    """What any tool may send: its declared path with each name in one segment (no dot segment,
    no dot- or underscore-index, a valid namespace), strict JSON without nulls, a result window
    XERJ accepts; and for some tools, only their body keys."""
    raw = request.url.raw_path.decode().split("?")[0].strip("/").split("/")
    template = (XERJ_TOOLS[tool].path or "").strip("/").split("/")
    assert len(raw) == len(template), (raw, template)
    for part, want in zip(raw, template, strict=True):
        if not want.startswith("{"):
            assert part == want
            continue
        name = unquote(part)
        assert name and name not in (".", "..") and "/" not in part
        if want == "{index}":
            assert not name.startswith((".", "_"))
        if want == "{namespace}":
            assert name.islower() or name.replace(".", "").replace("-", "").replace("_", "").isalnum()
    assert request.method in ("GET", "POST")
    if not request.content:
        assert request.method == "GET"
        return
    body = strict_json(request.content)
    assert request.method == "POST" and isinstance(body, dict) and None not in body.values()
    assert set(body) <= ALLOWED_BODY.get(tool, set(body))
    size, start = body.get("size", 10), body.get("from", 0)
    assert isinstance(size, int) and isinstance(start, int) and size >= 0 and start >= 0 and size + start <= 10_000
    if tool == "xerj_memory_recall":
        assert not ("vector" in body and "query" in body)
    if tool == "xerj_memory_store":
        assert isinstance(body["text"], str) and body["id"]


def follow_up(tool: str, request: httpx2.Request) -> bool:
    """A read the dispatcher adds after XERJ answered: the index listing after a miss (or the
    aliases of `xerj_list_indices`), the mapping after an empty or refused search (a field hint),
    XERJ autoindex's catalog after a description or a listing."""
    path = request.url.raw_path.decode().split("?")[0]
    if path.startswith("/_resolve/") or path == "/autoindex-catalog/_search":
        return True
    parts = path.strip("/").split("/")
    if tool != "xerj_describe_index" and request.method == "GET" and len(parts) == 2 and parts[1] == "_mapping":
        assert unquote(parts[0]) not in ("", ".", "..") and not unquote(parts[0]).startswith((".", "_"))
        return True
    return False


@pytest.mark.parametrize("tool", REGISTRY.names)
def test_dispatch_never_raises_and_sends_only_contract_requests(tool: str) -> None:
    # Against the stand-in, over a real socket: whatever it answers, what was sent must be a
    # request the contract allows, and a call refused before sending must have sent nothing.
    sent: list[httpx2.Request] = []
    with XerjStandIn() as xerj, httpx2.Client(event_hooks={"request": [sent.append]}) as client:
        dispatcher = Dispatcher(url=xerj.url, client=client, retry=RetryPolicy(max_attempts=1))
        outcomes: list[bool] = []

        # A valid call is always among the examples, so that "some are sent" does not rest on
        # the draw (a tool whose random calls are rarely valid may draw none).
        @settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
        @given(arguments=arguments_for(tool), decoded=st.booleans())
        @example(arguments=example_arguments(REGISTRY, tool), decoded=False)
        def check(arguments: Any, decoded: bool) -> None:
            sent.clear()
            raw = arguments if decoded else encode(arguments)  # a dict, as an SDK or caller may pass it
            message = dispatcher.dispatch({"id": "c", "type": "function", "function": {"name": tool, "arguments": raw}})
            payload = json.loads(message["content"])  # type: ignore[typeddict-item]
            calls = [r for r in sent if not follow_up(tool, r)]
            outcomes.append(bool(calls))
            if calls:
                assert len(calls) == 1
                check_request(tool, calls[0])
            elif tool == "xerj_list_indices" and payload["ok"]:
                # `counts: false`: the names from the cheap listing, its one request
                assert [r.url.raw_path.decode() for r in sent] == ["/_resolve/index/*"]
            elif not payload["ok"] and payload["error"]["code"] == "index_not_found":
                # a name the index listing does not hold is answered from the listing alone
                assert sent and all(r.url.raw_path.decode().startswith("/_resolve/") for r in sent)
                assert payload["error"]["hint"]
            else:
                assert not payload["ok"]
                assert payload["error"]["code"] in ("invalid_arguments", "invalid_json", "policy_denied")
                assert payload["error"]["hint"]

        try:
            check()
        finally:
            dispatcher.close()
    # the generated calls reach both branches: some are sent, most are refused
    assert any(outcomes) and not all(outcomes), (sum(outcomes), len(outcomes))
    print(f"{tool}: {sum(outcomes)} of {len(outcomes)} generated calls were sent")


CAPS = {"max_size": 50, "max_k": 40, "max_num_candidates": 100}
# The tools the operator's caps apply to, and the arguments each caps (`PolicyTraits.caps`).
CAPPED = {name: tuple(tool.traits.caps) for name, tool in XERJ_TOOLS.items() if name in REGISTRY and tool.traits.caps}
LIMIT = {"size": CAPS["max_size"], "k": CAPS["max_k"], "num_candidates": CAPS["max_num_candidates"]}


def capped_values(value: Any, keys: tuple[str, ...]) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        found = [(k, v) for k, v in value.items() if k in keys and not isinstance(v, (dict, list))]
        return found + [pair for v in value.values() for pair in capped_values(v, keys)]
    return [pair for v in value for pair in capped_values(v, keys)] if isinstance(value, list) else []


@pytest.mark.parametrize("caps", ["clamp", "refuse"])
@pytest.mark.parametrize("tool", sorted(CAPPED))
def test_caps_hold_for_integers_written_as_floats(tool: str, caps: str) -> None:
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/_resolve/index/*":  # the listing the names are resolved against
            return httpx2.Response(200, json=listing())
        sent.append(request)
        return httpx2.Response(200, json=SEARCH_REPLY)  # what comes back does not matter here

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    dispatcher = Dispatcher(url="http://xerj.test", client=client, policy=Policy(caps=caps, **CAPS))  # type: ignore[arg-type]
    written = st.one_of(st.integers(1, 12_000).map(str), st.integers(1, 12_000).map(lambda n: f"{n}.0"),
                        st.tuples(st.integers(1, 12), st.integers(0, 4)).map(lambda t: f"{t[0]}e{t[1]}"))

    parameters = REGISTRY[tool].parameters
    required = {k: plausible(k, parameters["properties"][k]) for k in parameters.get("required", [])}

    @settings(max_examples=max(EXAMPLES // 5, 20), suppress_health_check=list(HealthCheck))
    @given(base=st.fixed_dictionaries(required),
           numbers=st.dictionaries(st.sampled_from(CAPPED[tool]), written, min_size=1))
    def check(base: dict[str, Any], numbers: dict[str, str]) -> None:
        sent.clear()
        fields = [json.dumps(base)[1:-1]] if base else []
        text = "{" + ", ".join(fields + [f'"{k}": {v}' for k, v in numbers.items()]) + "}"
        message = dispatcher.dispatch({"id": "c", "type": "function", "function": {"name": tool, "arguments": text}})
        payload = json.loads(message["content"])  # type: ignore[typeddict-item]
        if not sent:
            return
        body = strict_json(sent[0].content)
        for key, value in capped_values(body, CAPPED[tool]):  # wherever the tool put them
            assert type(value) is int and value <= LIMIT[key], (text, body)
        if caps == "refuse":
            assert all(float(v) <= LIMIT[k] for k, v in numbers.items()), (text, payload)

    try:
        check()
    finally:
        dispatcher.close()
        client.close()
