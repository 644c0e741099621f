"""Dispatch end to end over a socket: call shapes, sync/async parity, concurrency, credentials;
a `Tool` of yours, its grouped fields (`PolicyTraits`, `Advice`) and its `after` step."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx2
import pytest
from openai.types.responses import ResponseFunctionToolCall

try:  # openai >= 1.99 split tool calls into function and custom ones
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
except ImportError:  # the oldest openai declared (1.66)
    from openai.types.chat import (  # type: ignore[assignment, no-redef]
        ChatCompletionMessageToolCall as ChatCompletionMessageFunctionToolCall,
    )

from xerj_tools import (
    Advice,
    AsyncDispatcher,
    ConfigurationError,
    Dispatcher,
    HttpRequest,
    InvalidToolCallError,
    MissingHandlerError,
    Policy,
    PolicyDenied,
    PolicyTraits,
    Tool,
    load_registry,
    parse_tool_call,
)
from xerj_tools.testing import Fault, XerjStandIn

from conftest import Runner, chat_call, responses_call

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}

# A realistic turn: every tool, one mistake, one unknown tool, one missing index.
TURN: list[tuple[str, Any]] = [
    ("xerj_search", SEARCH),
    ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn licences", "k": 2}),
    ("xerj_vector_search", {"index": "docs", "field": "body_vector", "query_vector": [0.1] * 384, "k": 2}),
    ("xerj_hybrid_search", {"index": "docs", "queries": [{"query": {"match": {"body": "search"}}},
                                                         {"query": {"semantic": {"field": "body", "query": "search"}}}],
                            "size": 3, "rerank": {"query": "restore a search index"}}),
    ("xerj_memory_store", {"namespace": "demo", "text": "prefers metric units", "id": "m-1"}),
    ("xerj_memory_recall", {"namespace": "empty-ns", "query": "units"}),
    ("xerj_search", {"index": "tickets", "query": {}, "size": 0, "aggs": {"s": {"terms": {"field": "status"}}}}),
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}}, "size": "3"}'),
    ("xerj_search", '{"index": "docs", "query": {"match_all": {}}, "size": -3}'),
    ("xerj_lookup", {}),
    ("xerj_search", {"index": "nope", "query": {}}),
]


def test_sdk_objects_and_dicts_are_answered_in_their_own_shape(runner: Runner) -> None:
    args = json.dumps(SEARCH)
    chat = ChatCompletionMessageFunctionToolCall(id="c1", type="function",
                                                 function={"name": "xerj_search", "arguments": args})
    item = ResponseFunctionToolCall(type="function_call", id="fc_2", call_id="c2", name="xerj_search", arguments=args)
    a, b = runner.run(chat).message, runner.run(item).message
    assert a["role"] == "tool" and a["tool_call_id"] == "c1"  # type: ignore[typeddict-item]
    assert b["type"] == "function_call_output" and b["call_id"] == "c2"  # type: ignore[typeddict-item]
    assert json.loads(a["content"]) == json.loads(b["output"])  # type: ignore[typeddict-item]


def test_unknown_call_types_get_an_answer_and_no_request(runner: Runner, xerj: XerjStandIn) -> None:
    odd = {"id": "c9", "type": "brand_new_kind", "function": None}
    custom = {"type": "custom_tool_call", "call_id": "c10", "name": "sql", "input": "SELECT 1"}
    a, b = runner.run(odd), runner.run(custom)
    assert a.code == "unknown_tool" and b.code == "unknown_tool"
    assert b.message["type"] == "custom_tool_call_output"  # type: ignore[typeddict-item]
    assert xerj.requests == []


def test_an_object_without_a_call_id_is_a_developer_error() -> None:
    with pytest.raises(InvalidToolCallError):
        parse_tool_call({"function": {"name": "xerj_search", "arguments": "{}"}})
    with pytest.raises(InvalidToolCallError):
        parse_tool_call({"type": "function_call", "name": "xerj_search"})


def test_sync_and_async_give_identical_messages(sleeps: Any) -> None:
    calls = [chat_call(name, args, f"call_{i}") for i, (name, args) in enumerate(TURN)]
    transcripts = []
    for mode in ("sync", "async"):
        with XerjStandIn() as xerj:
            runner = Runner(mode, sleeps, url=xerj.url)
            try:
                transcripts.append([r.message for r in runner.run_many(calls)])
            finally:
                runner.close()
    assert transcripts[0] == transcripts[1]
    assert [m["tool_call_id"] for m in transcripts[0]] == [f"call_{i}" for i in range(len(TURN))]
    codes = [json.loads(m["content"]).get("error", {}).get("code") for m in transcripts[0]]
    assert codes == [None] * 8 + ["invalid_arguments", "unknown_tool", "index_not_found"]
    assert json.loads(transcripts[0][7]["content"])["repairs"] == ['$.size: "3" → 3']


def test_dispatch_many_runs_calls_concurrently_and_answers_in_order(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.fail_next(*[Fault(delay=0.3) for _ in range(4)])
    calls = [chat_call("xerj_search", {**SEARCH, "size": i + 1}, f"c{i}") for i in range(4)]
    results = runner.run_many(calls)
    assert [r.call.call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert [len(r.payload["hits"]) for r in results] == [1, 2, 2, 2]
    assert xerj.max_in_flight >= 2  # several requests were on the wire at once


def test_api_key_is_sent_and_checked(make_runner: Any) -> None:
    with XerjStandIn(api_key="s3cret-key") as xerj:
        good = make_runner(url=xerj.url, api_key="s3cret-key").run(chat_call("xerj_search", SEARCH))
        assert good.ok and xerj.requests[0].headers["authorization"] == "ApiKey s3cret-key"
        bad = make_runner(url=xerj.url, api_key="wrong").run(chat_call("xerj_search", SEARCH))
        # the index listing read first is refused: that is the answer, and nothing else is sent
        assert bad.code == "unauthorized" and bad.attempts == 0
        bearer = make_runner(url=xerj.url, authorization="Bearer s3cret-key").run(chat_call("xerj_search", SEARCH))
        assert bearer.ok


def test_environment_configures_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with XerjStandIn(api_key="env-key") as xerj:
        monkeypatch.setenv("XERJ_URL", xerj.url + "/")
        monkeypatch.setenv("XERJ_API_KEY", "env-key")
        with Dispatcher() as d:
            assert d.url == xerj.url
            assert json.loads(d.dispatch(chat_call("xerj_search", SEARCH))["content"])["ok"] is True


def test_user_supplied_client_is_used_and_left_open(xerj: XerjStandIn) -> None:
    seen: list[str] = []
    client = httpx2.Client(event_hooks={"request": [lambda request: seen.append(request.url.path)]})
    with Dispatcher(url=xerj.url, client=client) as d:
        d.dispatch(chat_call("xerj_search", SEARCH))
    assert seen == ["/_resolve/index/*", "/docs/_search"] and not client.is_closed
    client.close()


def test_one_connection_pool_serves_sequential_calls(runner: Runner, xerj: XerjStandIn) -> None:
    for _ in range(20):
        assert runner.run(chat_call("xerj_search", SEARCH)).ok
    assert xerj.connections == 1


def test_a_tool_without_a_handler_raises_at_construction(tmp_path: Any) -> None:
    # (as a bad option does: test_options.py's test_a_bad_value_is_refused_when_the_dispatcher_is_made)
    extra = tmp_path / "tools.json"
    extra.write_text(json.dumps([{"type": "function", "function": {"name": "count_docs", "parameters": {
        "type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}}}]))
    with pytest.raises(MissingHandlerError) as missing:
        Dispatcher(load_registry(extra))
    assert missing.value.tool_names == ("count_docs",)


def test_a_custom_tool_with_its_own_handler(tmp_path: Any, xerj: XerjStandIn) -> None:
    extra = tmp_path / "tools.json"
    extra.write_text(json.dumps([{"type": "function", "function": {"name": "count_docs", "parameters": {
        "type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}}}]))

    def count_docs(args: Any) -> HttpRequest:
        return HttpRequest("POST", f"/{args['index']}/_search", {"size": 0, "track_total_hits": True}, kind="search")

    def broken(args: Any) -> HttpRequest:
        raise RuntimeError("boom")

    with Dispatcher(load_registry(extra), url=xerj.url, handlers={"count_docs": count_docs}) as d:
        payload = json.loads(d.dispatch(chat_call("count_docs", {"index": "tickets"}))["content"])
        assert payload["ok"] is True and payload["total"] == 6
        assert json.loads(d.dispatch(chat_call("count_docs", {}))["content"])["error"]["code"] == "invalid_arguments"
    with Dispatcher(load_registry(extra), url=xerj.url, handlers={"count_docs": broken}) as d:
        payload = json.loads(d.dispatch(chat_call("count_docs", {"index": "x"}))["content"])
        assert payload["error"]["code"] == "handler_error" and "boom" not in json.dumps(payload)


def test_responses_shape_round_trip(runner: Runner) -> None:
    message = runner.run(responses_call("xerj_memory_recall", {"namespace": "nobody", "query": "x"}, "r1")).message
    assert message == {"type": "function_call_output", "call_id": "r1",
                       "output": '{"ok":true,"hits":[]}'}


def test_tls_settings_reach_the_owned_client(tmp_path: Any) -> None:
    import ssl

    import certifi

    from xerj_tools._http._transport import TransportSettings

    options = TransportSettings(verify=certifi.where(), connect_timeout=1.5, read_timeout=7.0, pool_size=3).httpx_options()
    assert isinstance(options["verify"], ssl.SSLContext) and options["verify"].verify_mode == ssl.CERT_REQUIRED
    assert (options["timeout"].connect, options["timeout"].read) == (1.5, 7.0)
    assert options["limits"].max_connections == 3
    assert TransportSettings(verify=False).httpx_options()["verify"] is False
    with pytest.raises(ConfigurationError):
        Dispatcher(verify=str(tmp_path / "missing.pem"))
    with Dispatcher(url="https://127.0.0.1:9", verify=certifi.where()) as dispatcher:
        assert dispatcher.url == "https://127.0.0.1:9"


def test_the_default_tls_context_is_built_once_per_ca_location(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the CA bundle costs each new client 50-150 ms of CPU: the verifying context
    httpx builds for ``verify=True`` is shared, and still follows ``SSL_CERT_FILE``."""
    import ssl

    import certifi

    from xerj_tools._http._transport import TransportSettings

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = TransportSettings().httpx_options()["verify"]
    assert isinstance(first, ssl.SSLContext)
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert TransportSettings(pool_size=3).httpx_options()["verify"] is first
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    other = TransportSettings().httpx_options()["verify"]
    assert isinstance(other, ssl.SSLContext) and other is not first
    assert other.verify_mode == ssl.CERT_REQUIRED
    with Dispatcher(url="https://127.0.0.1:9") as one, Dispatcher(url="https://127.0.0.1:9") as two:
        assert one.url == two.url == "https://127.0.0.1:9"


def test_a_missing_index_is_answered_with_the_indices_the_model_may_use(make_runner: Any, xerj: XerjStandIn) -> None:
    from xerj_tools import Policy

    runner = make_runner(url=xerj.url)
    runner.payload("xerj_memory_store", {"namespace": "agent", "text": "a memory lives in a dot-index"})
    result = runner.run(chat_call("xerj_search", {"index": "doc", "query": {}}))
    error = result.payload["error"]
    assert result.code == "index_not_found" and result.attempts == 0  # resolved: nothing sent
    assert error["indices"] == ["docs", "tickets"]  # no .xerj-memory-agent: the policy denies it
    assert "indices" in error["hint"]
    assert all(r.path != "/doc/_search" for r in xerj.requests) and xerj.listings
    narrow = make_runner(url=xerj.url, policy=Policy(allow_indices=("do*",)))  # "doc" may be tried
    assert narrow.payload("xerj_search", {"index": "doc", "query": {}})["error"]["indices"] == ["docs"]


def test_a_failed_listing_is_the_answer_and_nothing_is_sent(runner: Any, xerj: XerjStandIn) -> None:
    from xerj_tools.testing import Fault

    # the names cannot be resolved: the node's own failure is told, and the search is not sent
    xerj.fail_next(Fault(status=500, match="_resolve"), Fault(status=500, match="_cat"))
    error = runner.payload("xerj_search", {"index": "doc", "query": {}})["error"]
    assert error["code"] == "server_error" and "indices" not in error
    assert all(r.path != "/doc/_search" for r in xerj.requests)


def test_a_declared_tool_that_fails_to_read_is_answered_not_raised(tmp_path: Any, xerj: XerjStandIn) -> None:
    from xerj_tools import ConfigurationError, Tool

    extra = tmp_path / "tools.json"
    extra.write_text(json.dumps([{"type": "function", "function": {"name": "count_docs", "parameters": {
        "type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}}}]))
    tool = Tool(name="count_docs", build=lambda a: HttpRequest("POST", f"/{a['index']}/_search", {"size": 0}),
                read=lambda got: got.reply.data["no such key"])
    with Dispatcher(load_registry(extra), url=xerj.url, tools=[tool]) as d:
        payload = json.loads(d.dispatch(chat_call("count_docs", {"index": "tickets"}))["content"])
        assert payload["error"]["code"] == "handler_error" and "no such key" not in json.dumps(payload)
        # an argument the schema does not list is refused, as for the library's own tools
        payload = json.loads(d.dispatch(chat_call("count_docs", {"index": "tickets", "size": 3}))["content"])
        assert payload["error"]["code"] == "invalid_arguments"
    with pytest.raises(ConfigurationError):
        Dispatcher(load_registry(extra), url=xerj.url, tools=[tool, Tool(name="nowhere", build=tool.build)])


def test_a_handler_without_a_definition_is_refused_when_the_dispatcher_is_built() -> None:
    # The model is never shown a tool without a definition, so its handler could never run:
    # say so at construction, not as `unknown_tool` at the first call.
    def my_stats(arguments: Any) -> HttpRequest:
        return HttpRequest("GET", "/_stats")

    with pytest.raises(ConfigurationError) as info:
        Dispatcher(url="http://127.0.0.1:9", handlers={"my_stats": my_stats})
    assert "my_stats" in str(info.value) and "registry" in str(info.value)
    with pytest.raises(ConfigurationError):
        AsyncDispatcher(url="http://127.0.0.1:9", handlers={"my_stats": my_stats})


def test_the_public_seam_runs_a_call_in_two_steps(xerj: XerjStandIn) -> None:
    # What an agent loop or an integration uses: begin (nothing sent), then complete.
    from xerj_tools import AsyncDispatcher, Dispatcher

    search = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
    with Dispatcher(url=xerj.url) as dispatcher:
        assert set(dispatcher.tools) == set(dispatcher.registry.names)
        with pytest.raises(TypeError):
            dispatcher.tools["mine"] = dispatcher.tools["xerj_search"]  # type: ignore[index]
        before = len(xerj.requests)
        first = dispatcher.begin(chat_call("xerj_search", search, "a"))
        second = dispatcher.begin(chat_call("xerj_search", json.dumps(search), "b"))
        refused = dispatcher.begin(chat_call("xerj_search", {"index": "docs"}, "c"))
        assert len(xerj.requests) == before  # begin sends nothing
        assert first.key is not None and first.key == second.key and refused.key is None
        result = dispatcher.complete(first)
        assert result.ok and len(xerj.requests) == before + 1
        copy = dispatcher.copy_of(second.call, result, second.started)
        assert copy.call.call_id == "b" and "identical to call a" in copy.content
        answer = dispatcher.complete(refused)
        assert answer.code == "invalid_arguments" and len(xerj.requests) == before + 1
        assert dispatcher.answer(first.call, "denied", "not now").code == "denied"
        assert dispatcher.cancelled(first.call).code == "cancelled"

    async def run_async() -> None:
        async with AsyncDispatcher(url=xerj.url) as dispatcher:
            begun = dispatcher.begin(chat_call("xerj_search", search, "d"))
            assert (await dispatcher.complete(begun)).ok

    asyncio.run(run_async())


def test_a_custom_tool_is_one_tool_with_its_definition(xerj: XerjStandIn) -> None:
    # No tools file: the Tool carries its description and parameters, and the dispatcher lists,
    # validates, guards and fits it like the library's own (the fuzzing is in test_engine_fuzz).
    import importlib.util

    from xerj_tools import Policy, Tool

    count = Tool(
        name="count_docs",
        build=lambda a: HttpRequest("POST", f"/{a['index']}/_search", {"query": {"match_all": {}}, "size": a.get("size", 3)}),
        description="Count the documents of one index.",
        parameters={"type": "object", "properties": {"index": {"type": "string"}, "size": {"type": "integer", "minimum": 0}},
                    "required": ["index"], "additionalProperties": False},
    )
    with Dispatcher(url=xerj.url, tools=[count], budget=1000, policy=Policy(max_size=2)) as d:
        assert "count_docs" in d.registry.names and "count_docs" in d.tools
        listed = [t["function"]["name"] for t in d.registry.chat_tools()]
        assert listed[-1] == "count_docs" and len(listed) == len(load_registry().names) + 1
        assert d.registry["count_docs"].description == "Count the documents of one index."
        if importlib.util.find_spec("mcp") is not None:  # the MCP listing, where the extra is
            from xerj_tools.integrations.mcp import list_tools

            assert [t.name for t in list_tools(d.registry, d.policy, d.tools)][-1] == "count_docs"
        bad = json.loads(d.dispatch(chat_call("count_docs", {"index": "docs", "size": -1, "x": 1}))["content"])
        assert bad["error"]["code"] == "invalid_arguments"
        assert {"$.size", "$.x"} <= {problem["path"] for problem in bad["error"]["problems"]}
        denied = json.loads(d.dispatch(chat_call("count_docs", {"index": ".xerj-memory"}))["content"])
        assert denied["error"]["code"] == "policy_denied"
        before = len(xerj.requests)
        fitted = d.run(chat_call("count_docs", {"index": "docs", "size": 5}))
        assert fitted.ok and len(fitted.content) <= 1000 and len(xerj.requests) == before + 1
        assert xerj.requests[-1].body["size"] == 2  # the policy's cap, inferred from the name
    # A bad schema is refused when the dispatcher is built, as a tools file's would be.
    from xerj_tools import ToolDefinitionError

    broken = Tool(name="broken", build=count.build, description="", parameters={"type": "objekt"})
    with pytest.raises(ToolDefinitionError):
        Dispatcher(url=xerj.url, tools=[broken])


# A Tool of yours: its one `after` step, run alike by both dispatchers, and its grouped fields.
FIRST_DOC_PARAMETERS = {"type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}
SEEN: list[tuple[Mapping[str, Any], bool, bool]] = []


def _search(args: Mapping[str, Any]) -> HttpRequest:
    return HttpRequest("POST", f"/{args['index']}/_search", {"size": 1, "query": {"match_all": {}}})


def _first_document(arguments: Mapping[str, Any], payload: dict[str, Any], policy: Any) -> Any:
    """Reads the first hit whole (a read counted as the call's), then the listing (not counted)."""
    SEEN.append((arguments, policy.allows_index("docs"), policy.allows_index(".hidden")))
    hit = payload["result"]["hits"]["hits"][0]
    outcome, attempts = yield HttpRequest("GET", f"/{arguments['index']}/_doc/{hit['_id']}")
    assert attempts == 1
    yield HttpRequest("GET", "/_cat/indices", kind="listing")
    return {"ok": True, "found": True, "_index": outcome.data["_index"], "_id": hit["_id"]}


def _moved(arguments: Mapping[str, Any], payload: dict[str, Any], policy: Any) -> Any:
    """Says the document lives in an index the policy denies: the policy checks what it returns."""
    yield from ()
    return {"ok": True, "found": True, "_index": ".hidden", "_id": "1"}


def _tool(after: Any) -> Tool:
    return Tool(name="first_doc", build=_search, description="The first document.",
                parameters=FIRST_DOC_PARAMETERS, after=after)  # fmt: skip


def test_the_after_step_reads_more_under_the_calls_policy(make_runner: Any, xerj: XerjStandIn) -> None:
    SEEN.clear()
    runner = make_runner(url=xerj.url, tools=[_tool(_first_document)])
    before = len(xerj.requests)
    result = runner.run(chat_call("first_doc", {"index": "docs"}))
    assert result.ok and result.payload["found"] is True and result.payload["_index"] == "docs"
    assert SEEN == [({"index": "docs"}, True, False)]
    sent = [(r.method, r.path.split("/")[-2]) for r in xerj.requests[before:]]
    assert sent[-2:] == [("GET", "_doc"), ("GET", "_cat")]
    assert result.attempts == 2  # the search and the document read; the listing is not counted
    # an answer that is an error runs no step
    assert runner.payload("first_doc", {"index": "missing"})["error"]["code"] == "index_not_found"
    assert len(SEEN) == 1


def test_what_the_after_step_returns_is_held_to_the_policy(make_runner: Any, xerj: XerjStandIn) -> None:
    payload = make_runner(url=xerj.url, tools=[_tool(_moved)]).payload("first_doc", {"index": "docs"})
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    allowed = Policy(deny_indices=("secret-*",))
    ok = make_runner(url=xerj.url, tools=[_tool(_moved)], policy=allowed).payload("first_doc", {"index": "docs"})
    assert ok == {"ok": True, "found": True, "_index": ".hidden", "_id": "1"}


def test_traits_and_advice_group_what_the_policy_and_the_model_read() -> None:
    plain = Tool(name="t", build=_search)
    assert plain.traits == PolicyTraits() and plain.advice == Advice()
    # left undeclared, a trait is inferred from the argument names (the policy fails closed)
    args = {"index": "a", "source_indices": ["b"], "size": 3, "k": 1, "rerank": {}}
    assert plain.traits.index_arguments(args) == ("index", "source_indices")
    assert plain.traits.cap_arguments(args) == {"size": "max_size", "k": "max_k"}
    assert plain.traits.rerank_argument(args) == "rerank"
    declared = PolicyTraits(index_args=("source",), caps={"limit": "max_size"}, rerank_arg="second")
    assert declared.index_arguments(args) == ("source",) and declared.cap_arguments(args) == {"limit": "max_size"}
    assert declared.rerank_argument(args) is None
    assert Advice(refetch=lambda served: ",".join(sorted(served))).refetch_hint({"b", "a"}) == "a,b"
    # an argument that filters a listing: its concrete names are held to the policy, not its wildcards
    lister = Tool(name="list_logs", build=_search, traits=PolicyTraits(listed_args=("names",)))
    refused = Policy().apply(lister, {"names": "logs-*,.secret"})
    assert isinstance(refused, PolicyDenied) and str(refused).startswith("name 2 of `names` is not among")
    assert not isinstance(Policy().apply(lister, {"names": "*"}), PolicyDenied)


def test_a_cap_that_names_no_policy_cap_is_refused_when_the_traits_are_made() -> None:
    with pytest.raises(ConfigurationError, match="'max_sise'"):
        PolicyTraits(caps={"size": "max_sise"})  # type: ignore[dict-item]
