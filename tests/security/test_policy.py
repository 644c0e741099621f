"""Operator guardrails: each refusal sends nothing; clamps are applied and said; failover."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from support import closed_port
from tool_examples import example_arguments

from xerj_tools import (
    XERJ_TOOLS,
    ConfigurationError,
    HttpRequest,
    Policy,
    PolicyDenied,
    PolicyTraits,
    Tool,
    ToolRegistry,
    load_registry,
)
from xerj_tools.testing import XerjStandIn

from conftest import Runner, chat_call, responses_call

MATCH = {"match": {"body": "checkout"}}


def policy_runner(make_runner: Any, xerj: XerjStandIn, **policy: Any) -> Runner:
    return make_runner(url=xerj.url, policy=Policy(**policy))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("policy", "tool", "arguments", "refused"),
    [
        ({}, "xerj_search", {"index": ".xerj-memory-tenant-b", "query": {}}, "index"),
        ({}, "xerj_search", {"index": "*", "query": {}}, "index"),
        ({}, "xerj_search", {"index": "_all", "query": {}}, "index"),
        ({}, "xerj_semantic_search", {"index": ".xerj-*", "field": "text", "query": "x"}, "index"),
        ({}, "xerj_search", {"index": "docs,.secrets", "query": {}}, "index"),
        ({"allow_indices": ("docs", "logs-*")}, "xerj_search", {"index": "tickets", "query": {}}, "index"),
        ({"allow_rerank": False}, "xerj_search", {"index": "docs", "query": MATCH, "rerank": {}}, "rerank"),
        ({"read_only": True}, "xerj_memory_store", {"namespace": "a", "text": "t"}, "xerj_memory_store"),
        ({"namespace": "tenant-a"}, "xerj_memory_recall", {"namespace": "tenant-b", "query": "x"}, "namespace"),
        ({"namespace": "tenant-a"}, "xerj_memory_store", {"namespace": "tenant-b", "text": "x"}, "namespace"),
        ({"namespace_prefix": "tenant-a."}, "xerj_memory_recall", {"namespace": "tenant-b.notes", "query": "x"}, "namespace"),
        ({"max_size": 5, "caps": "refuse"}, "xerj_search", {"index": "docs", "query": {}, "size": 50}, "size"),
        ({"max_k": 5, "caps": "refuse"}, "xerj_memory_recall", {"namespace": "a", "query": "x", "k": 6}, "k"),
        ({"max_rerank_window": 10, "caps": "refuse"}, "xerj_search",
         {"index": "docs", "query": MATCH, "size": 5, "rerank": {"window": 50}}, "rerank.window"),
    ],
)
def test_refusals_send_nothing(make_runner: Any, xerj: XerjStandIn, policy: dict[str, Any], tool: str,
                               arguments: dict[str, Any], refused: str) -> None:
    payload = policy_runner(make_runner, xerj, **policy).payload(tool, arguments)
    assert payload["ok"] is False and payload["error"]["code"] == "policy_denied"
    assert payload["error"]["refused"] == refused and payload["error"]["reason"]
    assert xerj.requests == []


@pytest.mark.parametrize(
    ("policy", "tool", "arguments", "path"),
    [
        ({}, "xerj_search", {"index": "docs", "query": {}}, "/docs/_search"),
        ({}, "xerj_search", {"index": "do*,tickets", "query": {}}, "/do*,tickets/_search"),
        ({"allow_indices": ("docs", "logs-*")}, "xerj_search", {"index": "docs", "query": {}}, "/docs/_search"),
        ({"deny_indices": ()}, "xerj_search", {"index": ".xerj-memory-a", "query": {}}, "/.xerj-memory-a/_search"),
        ({"namespace": "tenant-a"}, "xerj_memory_recall", {"namespace": "tenant-a", "query": "x"}, "/_memory/tenant-a/_recall"),
        ({"namespace_prefix": "tenant-a."}, "xerj_memory_store", {"namespace": "tenant-a.notes", "text": "x"}, "/_memory/tenant-a.notes"),
    ],
)
def test_allowed_calls_go_through(make_runner: Any, xerj: XerjStandIn, policy: dict[str, Any], tool: str,
                                  arguments: dict[str, Any], path: str) -> None:
    xerj.add_documents(".xerj-memory-a", {"m": {"text": "a memory"}})  # an index to resolve
    policy_runner(make_runner, xerj, **policy).payload(tool, arguments)
    # (the index listing the names are resolved against is read first: `xerj.listings`)
    assert [r.path for r in xerj.requests if not r.path.startswith("/_resolve/")] == [path]


def test_caps_are_clamped_and_said(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = policy_runner(make_runner, xerj, max_size=2, max_k=3, max_num_candidates=100, max_rerank_window=20)
    payload = runner.payload("xerj_search", {"index": "docs", "query": MATCH, "size": 10, "rerank": {"window": 300}})
    assert payload["ok"] is True and len(payload["hits"]) <= 2
    assert payload["notes"] == ["size lowered from 10 to 2 by the operator's policy",
                                "rerank.window lowered from 300 to 20 by the operator's policy"]
    assert xerj.requests[-1].body["size"] == 2 and xerj.requests[-1].body["rerank"] == {"window": 20}
    runner.payload("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [0.1] * 384,
                                          "k": 50, "num_candidates": 900})
    knn = xerj.requests[-1].body["knn"]
    assert (knn["k"], knn["num_candidates"]) == (3, 100)


def test_a_clamp_that_breaks_the_call_is_refused(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = policy_runner(make_runner, xerj, max_rerank_window=10)
    payload = runner.payload("xerj_search", {"index": "docs", "query": MATCH, "size": 20, "rerank": {}})
    assert payload["error"]["code"] == "policy_denied" and "window" in payload["error"]["reason"]
    assert xerj.requests == []


def test_oversized_arguments_are_refused_before_decoding(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = policy_runner(make_runner, xerj, max_argument_bytes=1000)
    payload = runner.payload("xerj_memory_store", {"namespace": "a", "text": "x" * 2000})
    assert payload["error"]["code"] == "policy_denied" and "1000" in payload["error"]["reason"]
    assert xerj.requests == []


def test_response_cap_stops_reading(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = policy_runner(make_runner, xerj, max_response_bytes=500)
    result = runner.run({"id": "c", "type": "function", "function": {
        "name": "xerj_search", "arguments": '{"index": "docs", "query": {}}'}})
    assert result.code == "response_too_large" and result.attempts == 1


def test_policy_configuration_mistakes_raise() -> None:
    with pytest.raises(ConfigurationError):
        Policy(caps="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Policy(namespace="a", namespace_prefix="b")
    with pytest.raises(ConfigurationError):
        Policy(max_size=0)


def test_failover_skips_a_dead_node_and_tries_it_later(make_runner: Any, xerj: XerjStandIn) -> None:
    now = [100.0]
    dead = closed_port()
    runner = make_runner(url=[dead, xerj.url], clock=lambda: now[0])
    # a pattern XERJ globs itself: no index listing is read before it (docs/policy.md)
    first = runner.run({"id": "a", "type": "function", "function": {
        "name": "xerj_search", "arguments": '{"index": "doc*", "query": {}}'}})
    assert first.ok and first.attempts == 2  # the dead node, then the live one
    for _ in range(4):  # the dead node rests: every call goes straight to the live node
        again = runner.run({"id": "b", "type": "function", "function": {
            "name": "xerj_search", "arguments": '{"index": "doc*", "query": {}}'}})
        assert again.ok and again.attempts == 1
    assert len(xerj.requests) == 5
    now[0] += 6  # its rest (5 s) is over: it is tried again, fails, and the call moves on
    later = [runner.run({"id": "c", "type": "function", "function": {
        "name": "xerj_search", "arguments": '{"index": "doc*", "query": {}}'}}) for _ in range(2)]
    assert sorted(r.attempts for r in later) == [1, 2] and all(r.ok for r in later)


def test_a_comma_separated_xerj_url_names_several_nodes(monkeypatch: pytest.MonkeyPatch, xerj: XerjStandIn) -> None:
    from xerj_tools import Dispatcher

    monkeypatch.setenv("XERJ_URL", f"{closed_port()}, {xerj.url}")
    with Dispatcher() as dispatcher:
        assert len(dispatcher.urls) == 2 and dispatcher.urls[1] == xerj.url


FLOAT_CAPS = [  # (tool, arguments as the model wrote them, policy, the capped key, where it is in the body)
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}}, "size": 5000.0}', {"max_size": 50}, "size",
     ("size",)),
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}}, "size": 5e3}', {"max_size": 50}, "size", ("size",)),
    ("xerj_semantic_search", '{"index": "docs", "field": "body", "query": "tea", "k": 5E3}', {"max_k": 50}, "k",
     ("query", "semantic", "k")),
    ("xerj_memory_recall", '{"namespace": "agent", "query": "tea", "k": 1e3}', {"max_k": 50}, "k", ("k",)),
    ("xerj_vector_search", '{"index": "docs", "field": "body_vector", "query_vector": [0.1, 0.2], "k": 5,'
     ' "num_candidates": 5.0e3}', {"max_num_candidates": 50}, "num_candidates", ("knn", "num_candidates")),
]


@pytest.mark.parametrize(("tool", "raw", "policy", "key", "where"), FLOAT_CAPS)
def test_caps_apply_to_numbers_written_as_floats(make_runner: Any, xerj: XerjStandIn, tool: str, raw: str,
                                                 policy: dict[str, Any], key: str, where: tuple[str, ...]) -> None:
    cap = next(iter(policy.values()))
    refuse = policy_runner(make_runner, xerj, caps="refuse", **policy).run(
        {"id": "c", "type": "function", "function": {"name": tool, "arguments": raw}})
    assert refuse.code == "policy_denied" and refuse.payload["error"]["refused"] == key
    assert xerj.requests == []
    clamp = policy_runner(make_runner, xerj, **policy).run(
        {"id": "c", "type": "function", "function": {"name": tool, "arguments": raw}})
    sent: Any = xerj.requests[0].body
    for part in where:
        sent = sent[part]
    assert sent == cap and type(sent) is int
    assert f"{key} lowered from " in " ".join(clamp.payload.get("notes", []))


def test_policy_apply_normalises_numbers_itself() -> None:
    applied = Policy(max_size=50, max_k=5).apply(XERJ_TOOLS["xerj_semantic_search"], {"index": "d", "size": 5e3, "k": 9.0})
    assert not isinstance(applied, PolicyDenied)
    arguments, notes = applied
    assert (arguments["size"], arguments["k"]) == (50, 5) and len(notes) == 2
    refused = Policy(max_rerank_window=10, caps="refuse").apply(XERJ_TOOLS["xerj_search"], {"index": "d", "rerank": {"window": 3e1}})
    assert isinstance(refused, PolicyDenied) and "rerank.window" in refused.reason


def test_policy_apply_reads_the_query_for_index_names_unless_told_the_text_names_none() -> None:
    """The one public way in, for the dispatcher too: ``read_body=False`` is what the dispatcher
    passes when the arguments' text shows no clause that can name an index."""
    lookup = {"index": "docs", "query": {"terms": {"user": {"index": ".secrets", "id": "1", "path": "u"}}}}
    refused = Policy().apply(XERJ_TOOLS["xerj_search"], lookup)
    assert isinstance(refused, PolicyDenied) and refused.details["refused"] == "index"
    assert not isinstance(Policy().apply(XERJ_TOOLS["xerj_search"], lookup, read_body=False), PolicyDenied)
    assert not hasattr(Policy, "_apply")


def test_policy_is_made_with_keywords_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        Policy(("docs",))  # type: ignore[misc]
    assert Policy(allow_indices=("docs",)).allow_indices == ("docs",)


# Query clauses that name an index of their own. XERJ (e6e8e6a) fetches a terms lookup's document
# from any index with no check, in the query and in aggregations (es_compat.rs:3229-3299, called at
# 6262-6273); the others it ignores or refuses today, and the policy checks them all the same.
LOOKUP = {"terms": {"user": {"index": ".xerj-memory-tenant-b", "id": "1", "path": "names"}}}
BODY_INDICES = [
    ("xerj_search", {"index": "docs", "query": LOOKUP}, "$.query.terms.user.index"),
    ("xerj_search", {"index": "docs", "query": {"bool": {"filter": [{"match": {"body": "x"}}, LOOKUP]}}},
     "$.query.bool.filter[1].terms.user.index"),
    ("xerj_search", {"index": "docs", "query": {"match_all": {}}, "aggs": {"f": {"filter": LOOKUP}}},
     "$.aggs.f.filter.terms.user.index"),
    ("xerj_search", {"index": "docs", "query": {"more_like_this": {
        "fields": ["body"], "like": ["tea", {"_index": ".xerj-memory-a", "_id": "7"}]}}},
     "$.query.more_like_this.like[1]._index"),
    ("xerj_search", {"index": "docs", "query": {"more_like_this": {
        "like": "tea", "unlike": {"_index": ".secrets", "_id": "7"}}}}, "$.query.more_like_this.unlike._index"),
    ("xerj_search", {"index": "docs", "query": {"percolate": {"field": "q", "index": ".secrets", "id": "1"}}},
     "$.query.percolate.index"),
    ("xerj_search", {"index": "docs", "query": {"geo_shape": {"area": {
        "indexed_shape": {"index": ".shapes", "id": "1", "path": "s"}}}}},
     "$.query.geo_shape.area.indexed_shape.index"),
    ("xerj_search", {"index": "docs", "query": {"pinned": {
        "docs": [{"_index": ".secrets", "_id": "1"}], "organic": {"match_all": {}}}}}, "$.query.pinned.docs[0]._index"),
    ("xerj_search", {"index": "docs", "query": {"terms": {"user": {"index": ["docs", ".x"], "id": "1", "path": "p"}}}},
     "$.query.terms.user.index"),
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "x", "filter": LOOKUP},
     "$.filter.terms.user.index"),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [0.1], "filter": LOOKUP},
     "$.filter.terms.user.index"),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": {"match": {"body": "x"}}}, {"query": LOOKUP}]},
     "$.queries[1].query.terms.user.index"),
    ("xerj_memory_recall", {"namespace": "agent", "query": "x", "filter": LOOKUP}, "$.filter.terms.user.index"),
    # not read by XERJ today (keys are case-sensitive, a lookup is an object): checked all the same
    ("xerj_search", {"index": "docs", "query": {"terms": {"user": {"INDEX": ".secrets", "id": "1", "path": "p"}}}},
     "$.query.terms.user.INDEX"),
    ("xerj_search", {"index": "docs", "query": {"percolate": {"field": "q", "Index": ".secrets", "id": "1"}}},
     "$.query.percolate.Index"),
    ("xerj_search", {"index": "docs", "query": {"match_all": {}}, "aggs": {"t": {"terms": {"field": "tag", "index": ".secrets"}}}},
     "$.aggs.t.terms.index"),
]


@pytest.mark.parametrize(("tool", "arguments", "path"), BODY_INDICES)
def test_indices_named_inside_the_query_are_checked(make_runner: Any, xerj: XerjStandIn, tool: str,
                                                    arguments: dict[str, Any], path: str) -> None:
    payload = policy_runner(make_runner, xerj).payload(tool, arguments)
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    assert payload["error"]["path"] == path
    assert xerj.requests == []


def test_a_wrapper_query_is_refused_because_it_hides_its_indices(make_runner: Any, xerj: XerjStandIn) -> None:
    import base64

    hidden = base64.b64encode(json.dumps({"query": LOOKUP}).encode()).decode()
    payload = policy_runner(make_runner, xerj).payload(
        "xerj_search", {"index": "docs", "query": {"bool": {"must": [{"wrapper": {"query": hidden}}]}}})
    assert payload["error"]["code"] == "policy_denied" and "wrapper" in payload["error"]["reason"]
    assert payload["error"]["path"] == "$.query.bool.must[0].wrapper"
    assert xerj.requests == []


def test_a_lookup_into_an_allowed_index_goes_through(make_runner: Any, xerj: XerjStandIn) -> None:
    xerj.add_documents("users", {"1": {"names": ["ann"]}})
    runner = policy_runner(make_runner, xerj, allow_indices=("docs", "users"))
    allowed = {"terms": {"user": {"index": "users", "id": "1", "path": "names"}}}
    runner.payload("xerj_search", {"index": "docs", "query": allowed})
    # the empty answer is followed by a read of the mapping, for a field hint (`_after`)
    assert [r.path for r in xerj.requests if r.path != "/_cat/indices"] == ["/docs/_search", "/docs/_mapping"]
    refused = runner.payload("xerj_search", {"index": "docs", "query": {
        "terms": {"user": {"index": "tickets", "id": "1", "path": "names"}}}})
    assert refused["error"]["code"] == "policy_denied" and "tickets" in refused["error"]["reason"]
    # a memory's metadata is stored, not run: a lookup-shaped object in it names no index
    stored = runner.payload("xerj_memory_store", {"namespace": "agent", "text": "t", "metadata": LOOKUP})
    assert stored["ok"] is True


REMOTES = [
    ({}, "r*:.xerj-memory-a"),
    ({}, "remote:docs"),
    ({}, "docs,remote:docs"),
    ({"allow_indices": ("logs-*",)}, "logs-*:.xerj-memory-a"),
    ({"allow_indices": ("logs-*",)}, "logs-1:logs-1"),
    ({"allow_remotes": True}, "r*:.xerj-memory-a"),
    ({"allow_remotes": True}, "remote:_all"),
    ({"allow_remotes": True, "allow_indices": ("logs-*",)}, "logs-*:.xerj-memory-a"),
    ({"allow_remotes": True, "allow_indices": ("eu:logs-*",)}, "us:logs-1"),
]


@pytest.mark.parametrize(("policy", "index"), REMOTES)
def test_cross_cluster_expressions_are_refused(make_runner: Any, xerj: XerjStandIn, policy: dict[str, Any],
                                               index: str) -> None:
    payload = policy_runner(make_runner, xerj, **policy).payload("xerj_search", {"index": index, "query": {}})
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    lookup = {"terms": {"user": {"index": index, "id": "1", "path": "p"}}}
    payload = policy_runner(make_runner, xerj, **policy).payload("xerj_search", {"index": "logs-1", "query": lookup})
    assert payload["error"]["code"] == "policy_denied"
    assert xerj.requests == []


def test_remotes_the_operator_allows_go_through() -> None:
    policy = Policy(allow_remotes=True, allow_indices=("eu:logs-*", "docs"))
    assert policy.allows_index("eu:logs-1") and policy.allows_index("docs")
    assert not policy.allows_index("eu:docs") and not Policy().allows_index("eu:logs-1")
    assert Policy(allow_remotes=True).allows_index("eu:logs-1")


@pytest.mark.parametrize("raw", [
    '{"index": "docs", "query": {"\\u0074erms": {"user": {"index": ".secrets", "id": "1", "path": "p"}}}}',
    '{"index": "docs", "query": {"bool": {"filter": [{"more_like_thi\\u0073": {"like": [{"_index": ".x", "_id": "1"}]}}]}}}',
    json.dumps({"index": "docs", "query": json.dumps(LOOKUP)}),  # a JSON string the repair decodes
    json.dumps({"index": "docs", "query": {"match_all": {}}, "aggs": json.dumps({"f": {"filter": LOOKUP}})}),
])
def test_escaped_or_encoded_clauses_are_read_too(make_runner: Any, xerj: XerjStandIn, raw: str) -> None:
    result = policy_runner(make_runner, xerj).run({"id": "c", "type": "function", "function": {
        "name": "xerj_search", "arguments": raw}})
    assert result.code == "policy_denied" and result.payload["error"]["refused"] == "index"
    assert xerj.requests == []


# The rules follow the tools' declared traits, for every tool of the registry: a tool added to it
# is guarded without a line here.
REGISTRY = load_registry()
INDEX_ARGS = [(n, k) for n in REGISTRY.names for k in XERJ_TOOLS[n].traits.index_args or ()]
NAMESPACE_ARGS = [(n, k) for n in REGISTRY.names for k in XERJ_TOOLS[n].traits.namespace_args or ()]


@pytest.mark.parametrize(("tool", "key"), INDEX_ARGS)
def test_every_index_argument_is_held_to_the_index_rules(make_runner: Any, xerj: XerjStandIn, tool: str,
                                                         key: str) -> None:
    arguments = {**example_arguments(REGISTRY, tool), key: ".xerj-memory-tenant-b"}
    payload = make_runner(url=xerj.url).payload(tool, arguments)  # the default policy
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    assert xerj.requests == []


@pytest.mark.parametrize(("tool", "key"), NAMESPACE_ARGS)
def test_every_namespace_argument_is_held_to_the_tenant(make_runner: Any, xerj: XerjStandIn, tool: str,
                                                        key: str) -> None:
    arguments = {**example_arguments(REGISTRY, tool), key: "tenant-b"}
    payload = policy_runner(make_runner, xerj, namespace="tenant-a").payload(tool, arguments)
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "namespace"
    assert xerj.requests == []


@pytest.mark.parametrize("tool", REGISTRY.names)
def test_read_only_refuses_exactly_the_tools_that_write(make_runner: Any, xerj: XerjStandIn, tool: str) -> None:
    payload = policy_runner(make_runner, xerj, read_only=True).payload(tool, example_arguments(REGISTRY, tool))
    if XERJ_TOOLS[tool].traits.writes:
        assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == tool
        assert xerj.requests == []
    else:
        assert xerj.requests and payload.get("error", {}).get("code") != "policy_denied"


def custom_registry(tmp_path: Any, name: str, **properties: Any) -> ToolRegistry:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": properties}}}]))
    return load_registry(path)


def stats(args: Any) -> HttpRequest:
    index = next(v for k, v in args.items() if "ind" in k.lower())
    index = index if isinstance(index, str) else ",".join(index)
    return HttpRequest("GET", f"/{quote(index, safe=',*')}/_stats")


@pytest.mark.parametrize("arguments", [
    {"index": ".secret"},
    {"indices": ["docs", ".secret"]},
    {"index_name": ".xerj-memory-tenant-b"},
    {"target_index": "*"},
    {"INDEX": "_all"},
])
def test_a_custom_tool_with_an_index_argument_is_guarded_by_default(make_runner: Any, xerj: XerjStandIn,
                                                                     tmp_path: Any, arguments: dict[str, Any]) -> None:
    # Fails closed: the plain handler declares nothing, its arguments' names say what they are.
    key = next(iter(arguments))
    schema = {"type": "array", "items": {"type": "string"}} if key == "indices" else {"type": "string"}
    registry = custom_registry(tmp_path, "my_stats", **{key: schema})
    runner = make_runner(registry=registry, url=xerj.url, handlers={"my_stats": stats})
    payload = runner.payload("my_stats", arguments)
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    assert xerj.requests == []
    assert isinstance(Policy().apply(Tool(name="my_stats", build=stats), arguments), PolicyDenied)  # no dispatcher needed
    runner.payload("my_stats", {key: ["docs"] if key == "indices" else "docs"})
    assert [r.path for r in xerj.requests] == ["/docs/_stats"]  # an allowed index goes through


def test_a_custom_tool_with_a_namespace_argument_is_held_to_the_tenant(make_runner: Any, xerj: XerjStandIn,
                                                                       tmp_path: Any) -> None:
    registry = custom_registry(tmp_path, "my_notes", namespace={"type": "string"})

    def notes(args: Any) -> HttpRequest:
        return HttpRequest("GET", f"/_memory/{quote(args['namespace'], safe='')}")

    runner = make_runner(registry=registry, url=xerj.url, handlers={"my_notes": notes},
                         policy=Policy(namespace="tenant-a"))
    payload = runner.payload("my_notes", {"namespace": "tenant-b"})
    assert payload["error"]["refused"] == "namespace" and xerj.requests == []


@pytest.mark.parametrize(("method", "path", "refused"), [
    ("PUT", "/docs/_doc/1", True),
    ("DELETE", "/docs/_doc/1", True),
    ("POST", "/docs/_update/1", True),
    ("POST", "/docs/_count", False),
    ("GET", "/docs/_doc/1", False),
])
def test_read_only_refuses_a_custom_tool_whose_request_writes(make_runner: Any, xerj: XerjStandIn, tmp_path: Any,
                                                              method: str, path: str, refused: bool) -> None:
    registry = custom_registry(tmp_path, "my_write", index={"type": "string"})
    runner = make_runner(registry=registry, url=xerj.url, handlers={"my_write": lambda _: HttpRequest(method, path)},
                         policy=Policy(read_only=True))
    payload = runner.payload("my_write", {"index": "docs"})
    assert (payload.get("error", {}).get("refused") == "my_write") is refused
    assert (xerj.requests == []) is refused


def test_a_declared_tool_is_guarded_by_its_traits(make_runner: Any, xerj: XerjStandIn, tmp_path: Any) -> None:
    registry = custom_registry(tmp_path, "copy_docs", source={"type": "string"}, dest={"type": "string"})
    tool = Tool(name="copy_docs", build=lambda a: HttpRequest("POST", "/_reindex", {"source": {"index": a["source"]},
                                                                         "dest": {"index": a["dest"]}}),
                traits=PolicyTraits(index_args=("source", "dest"), writes=True))
    runner = make_runner(registry=registry, url=xerj.url, tools=[tool])
    assert runner.payload("copy_docs", {"source": ".secret", "dest": "docs"})["error"]["refused"] == "index"
    read_only = make_runner(registry=registry, url=xerj.url, tools=[tool], policy=Policy(read_only=True))
    assert read_only.payload("copy_docs", {"source": "a", "dest": "b"})["error"]["refused"] == "copy_docs"
    assert xerj.requests == []


def test_the_custom_tool_example_in_docs_tools_md_runs() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text("utf-8")
    blocks = re.findall(r"```python\n(.*?)\n```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/tools.md", "exec"), {})


def _anthropic_call(name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}


@pytest.mark.parametrize("shape", [chat_call, responses_call, _anthropic_call])
def test_the_argument_cap_holds_for_every_wire_shape(
    make_runner: Any, xerj: XerjStandIn, shape: Any
) -> None:
    # An Anthropic `tool_use` input arrives decoded: it is measured by its JSON text.
    runner = policy_runner(make_runner, xerj, max_argument_bytes=1000)
    big = runner.run(shape("xerj_memory_store", {"namespace": "a", "text": "x" * 1200}))
    assert big.code == "policy_denied" and "the limit is 1000" in big.payload["error"]["reason"]
    assert xerj.requests == []
    small = runner.run(shape("xerj_memory_store", {"namespace": "a", "text": "x" * 800}))
    assert small.ok and len(xerj.requests) == 1


def test_an_object_that_is_no_json_is_left_to_validation() -> None:
    looped: dict[str, Any] = {"index": "docs"}
    looped["self"] = looped
    assert Policy(max_argument_bytes=10).check_size(looped) is None
    assert Policy(max_argument_bytes=10).check_size({"index": "a-long-index-name"}) is not None


def test_a_tool_names_its_rerank_and_plain_arguments() -> None:
    # The policy acts on traits the Tool declares, not on argument names it guesses: a custom
    # tool whose reranker argument has another name is held to `allow_rerank`, and an argument
    # the tool says holds no query DSL is not read for index names.
    from xerj_tools import Tool

    build = lambda a: HttpRequest("POST", "/docs/_search", {})  # noqa: E731
    second = Tool(name="second_stage", build=build, traits=PolicyTraits(rerank_arg="second_stage_model"))
    refused = Policy(allow_rerank=False).apply(second, {"q": "x", "second_stage_model": {"window": 9}})
    assert isinstance(refused, PolicyDenied) and refused.details == {"refused": "rerank"}
    capped = Policy(max_rerank_window=5).apply(second, {"second_stage_model": {"window": 9}})
    assert not isinstance(capped, PolicyDenied) and capped[0]["second_stage_model"] == {"window": 5}
    # Left undeclared, an argument named `rerank` is the reranker's, as before.
    plain = Tool(name="plain", build=build)
    assert isinstance(Policy(allow_rerank=False).apply(plain, {"rerank": {}}), PolicyDenied)
    assert not isinstance(Policy(allow_rerank=False).apply(plain, {"second_stage_model": {}}), PolicyDenied)
    # A stored template that merely looks like a query naming a dot-index.
    template = {"template": {"query": {"terms": {"x": {"index": ".secrets", "id": "1", "path": "x"}}}}}
    assert isinstance(Policy().apply(Tool(name="store", build=build), template), PolicyDenied)
    assert not isinstance(Policy().apply(Tool(name="store", build=build, traits=PolicyTraits(plain_args=("template",))), template), PolicyDenied)
