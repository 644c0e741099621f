"""`xerj-tools mcp` as a subprocess, driven by the MCP SDK's own clients (stdio and streamable
HTTP) against the XERJ stand-in; the policy file and the command line's refusals in-process."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import HAVE_SDK, Connected, needs_sdk, server_env
from support import until_async

from xerj_tools import XERJ_TOOLS, Policy, load_registry
from xerj_tools._cli._main import main
from xerj_tools._install import install_hint
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

TOOLS_JSON = Path(__file__).resolve().parents[2] / "tools.json"
KEY = "mcp-test-key-4e1f"


@pytest.fixture(scope="module")
def stand_in() -> Iterator[XerjStandIn]:
    with XerjStandIn(api_key=KEY) as xerj:
        yield xerj


@pytest.fixture(scope="module", params=["stdio", "http"])
def server(request: pytest.FixtureRequest, stand_in: XerjStandIn, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connected]:
    if not HAVE_SDK:
        pytest.skip("the MCP SDK is not installed: pip install -e '.[mcp]' (in the clone)")
    # The key reaches the server as $XERJ_API_KEY over stdio, and as XERJ's own $XERJ_AUTH over HTTP.
    auth = {"XERJ_API_KEY": KEY} if request.param == "stdio" else {"XERJ_AUTH": f"ApiKey {KEY}"}
    log = tmp_path_factory.mktemp("mcp") / f"{request.param}.log"
    connected = Connected(request.param, [], server_env(stand_in, **auth), log)
    yield connected
    connected.close()
    assert KEY not in connected.log()


@pytest.fixture
def xerj(stand_in: XerjStandIn) -> XerjStandIn:
    stand_in.clear()
    return stand_in


@needs_sdk
def test_lists_the_tools_with_titles_hints_and_the_published_schemas(server: Connected) -> None:
    listed = server.run(lambda client: client.list_tools()).tools
    published = {t["function"]["name"]: t["function"] for t in json.loads(TOOLS_JSON.read_text())}
    assert [t.name for t in listed] == list(published)
    for tool in listed:
        assert tool.input_schema == published[tool.name]["parameters"]
        assert tool.description == published[tool.name]["description"]
        assert tool.title and tool.annotations is not None and tool.annotations.title == tool.title
        assert tool.annotations.open_world_hint is False
        if tool.name == "xerj_memory_store":
            assert tool.annotations.read_only_hint is False
            assert tool.annotations.destructive_hint is False
            assert tool.annotations.idempotent_hint is False
        else:
            assert tool.annotations.read_only_hint is True
            assert tool.annotations.idempotent_hint is True


@needs_sdk
def test_a_valid_call_answers_with_the_tool_message(server: Connected, xerj: XerjStandIn) -> None:
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2})
    assert error is False and payload["ok"] is True and "total" in payload
    assert 1 <= len(payload["hits"]) <= 2 and "repairs" not in payload
    [request] = xerj.requests
    assert (request.method, request.path, request.body["size"]) == ("POST", "/docs/_search", 2)
    assert request.headers["authorization"] == f"ApiKey {KEY}"


@needs_sdk
def test_a_repairable_call_is_repaired_and_the_repair_reported(server: Connected, xerj: XerjStandIn) -> None:
    error, payload = server.call("xerj_search", {"index": "docs", "query": '{"match": {"body": "checkout"}}', "size": "2"})
    assert error is False and payload["ok"] is True
    assert payload["repairs"] == ["$.query: JSON string → object", '$.size: "2" → 2']
    [request] = xerj.requests
    assert request.body["size"] == 2 and request.body["query"] == {"match": {"body": "checkout"}}


@needs_sdk
def test_invalid_arguments_are_an_error_result_and_nothing_is_sent(server: Connected, xerj: XerjStandIn) -> None:
    error, payload = server.call("xerj_search", {"query": {"match_all": {}}, "size": -1})
    assert error is True and payload["ok"] is False
    assert payload["error"]["code"] == "invalid_arguments" and len(payload["error"]["problems"]) == 2
    assert xerj.requests == []


@needs_sdk
def test_an_unknown_tool_is_an_error_result_naming_the_tools(server: Connected, xerj: XerjStandIn) -> None:
    error, payload = server.call("xerj_delete_index", {"index": "docs"})
    assert error is True and payload["error"]["code"] == "unknown_tool"
    assert "xerj_search" in payload["error"]["hint"]
    assert xerj.requests == []


@needs_sdk
def test_the_default_policy_refuses_xerj_memory_indices(server: Connected, xerj: XerjStandIn) -> None:
    error, payload = server.call("xerj_search", {"index": ".xerj-memory-alice", "query": {"match_all": {}}})
    assert error is True and payload["error"]["code"] == "policy_denied"
    assert xerj.requests == []


@needs_sdk
def test_an_engine_failure_is_an_error_result(server: Connected, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=500, body={"error": {"type": "exception", "reason": "boom"}, "status": 500}))
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match_all": {}}})
    assert error is True and payload["error"]["code"] == "server_error"
    assert len(xerj.requests) == 1  # a 500 is not retried


@needs_sdk
def test_a_node_that_drops_every_connection_is_unreachable_after_retries(server: Connected, xerj: XerjStandIn) -> None:
    xerj.fail_next(*[Fault(drop="before")] * 4)
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match_all": {}}})
    assert error is True and payload["error"]["code"] == "unreachable"
    assert len(xerj.requests) == 4
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1})
    assert error is False and payload["ok"] is True


@needs_sdk
def test_overload_is_retried_behind_the_client(server: Connected, xerj: XerjStandIn) -> None:
    xerj.fail_next(503, 503)
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1})
    assert error is False and payload["ok"] is True
    assert len(xerj.requests) == 3


@needs_sdk
def test_calls_run_concurrently_and_a_cancelled_one_is_dropped(server: Connected, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(delay=300, match="/tickets/_search"))  # held until the stand-in stops
    answered: list[Any] = []

    async def cancel_one(client: Any) -> Any:
        async def call() -> None:
            answered.append(await client.call_tool("xerj_search", {"index": "tickets", "query": {"match_all": {}}}))

        task = asyncio.ensure_future(call())
        await until_async(lambda: xerj.requests)  # the call reached XERJ, which holds it
        other = await client.call_tool("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1})
        assert not task.done()  # answered while the first call was still in flight
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return other

    other = server.run(cancel_one)
    assert other.is_error is False and answered == []
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 1})
    assert error is False and payload["ok"] is True
    # The server dropped the call when the client cancelled it (it says so in its log).
    server.run(lambda _: until_async(lambda: "xerj_search mcp-" in server.log() and "cancelled by the client" in server.log()))


@needs_sdk
@pytest.mark.skipif(importlib.util.find_spec("agents") is None, reason="openai-agents is not installed (pip install openai-agents)")
def test_openai_agents_runs_the_tools_through_mcp_server_stdio(stand_in: XerjStandIn, xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # nothing leaves 127.0.0.1
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    script = [Turn(tool_calls=[("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": "2"}),
                               ("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": -1})]),
              Turn(text="Checkout was slow because the cart service saturated.")]
    with ScriptedModel(script) as model:
        async def main() -> Any:
            params: Any = {"command": sys.executable, "args": ["-m", "xerj_tools", "mcp"],
                           "env": server_env(stand_in, XERJ_API_KEY=KEY)}
            async with MCPServerStdio(params=params, name="xerj", cache_tools_list=True,
                                      client_session_timeout_seconds=60) as server, \
                    AsyncOpenAI(base_url=model.base_url, api_key="scripted") as client:
                llm = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
                agent = Agent(name="analyst", instructions="Answer from XERJ.", mcp_servers=[server], model=llm)
                return await Runner.run(agent, "Why was checkout slow?", run_config=RunConfig(tracing_disabled=True))

        result = asyncio.run(main())
    assert result.final_output == "Checkout was slow because the cart service saturated."
    offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert offered == {t["function"]["name"] for t in json.loads(TOOLS_JSON.read_text())}
    answers = [json.loads(m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
               for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert answers[0]["ok"] is True and answers[0]["repairs"] == ['$.size: "2" → 2']
    assert answers[1]["ok"] is False and answers[1]["error"]["code"] == "invalid_arguments"
    assert [r.body["size"] for r in xerj.requests] == [2]


POLICY_TOML = """\
# Tenant 42's agent: two indices, small pages, its own memory, nothing written.
allow_indices = ["docs", "logs-*"]
max_size = 3
read_only = true
namespace = "tenant-42"
max_argument_bytes = 2048
"""


@pytest.fixture(scope="module")
def guarded(stand_in: XerjStandIn, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connected]:
    if not HAVE_SDK:
        pytest.skip("the MCP SDK is not installed: pip install -e '.[mcp]' (in the clone)")
    where = tmp_path_factory.mktemp("guarded")
    (where / "policy.toml").write_text(POLICY_TOML)
    env = server_env(stand_in, XERJ_API_KEY=KEY)
    connected = Connected("stdio", ["--policy", str(where / "policy.toml")], env, where / "server.log")
    yield connected
    connected.close()


@needs_sdk
def test_a_policy_file_binds_the_server(guarded: Connected, xerj: XerjStandIn) -> None:
    listed = guarded.run(lambda client: client.list_tools()).tools
    writers = [n for n, t in XERJ_TOOLS.items() if t.traits.writes]
    assert writers == ["xerj_memory_store"]  # read-only: the tools that write are not listed
    assert [t.name for t in listed] == [n for n in load_registry().names if n not in writers]
    assert "policy.toml" in guarded.log()

    refusals = [
        ("xerj_search", {"index": "tickets", "query": {"match_all": {}}}, "index"),
        ("xerj_memory_store", {"namespace": "tenant-42", "text": "remember"}, "xerj_memory_store"),
        ("xerj_memory_recall", {"namespace": "tenant-7", "query": "secrets"}, "namespace"),
    ]
    for name, arguments, refused in refusals:
        error, payload = guarded.call(name, arguments)
        assert error is True and payload["error"]["code"] == "policy_denied"
        assert payload["error"]["refused"] == refused
    # The arguments arrive decoded, yet the size cap holds (measured on their JSON text).
    error, payload = guarded.call("xerj_search", {"index": "docs", "query": {"match": {"body": "x" * 3000}}})
    assert error is True and payload["error"]["code"] == "policy_denied"
    assert "the limit is 2048" in payload["error"]["reason"]
    assert xerj.requests == []  # a refusal sends nothing

    error, payload = guarded.call("xerj_search", {"index": "docs", "query": {"match_all": {}}, "size": 50})
    assert error is False and len(payload["hits"]) == 3
    assert "size lowered from 50 to 3 by the operator's policy" in payload["notes"]
    assert [r.body["size"] for r in xerj.requests] == [3]


# The policy file and the command line's refusals: in-process, no server started.

def test_a_toml_and_a_json_policy_file_give_the_same_policy(tmp_path: Path) -> None:
    pytest.importorskip("mcp.server", reason="the MCP SDK is not installed")
    from xerj_tools.integrations.mcp._policy_file import load_policy_file

    (tmp_path / "p.toml").write_text(POLICY_TOML.replace("2048", "4096") + 'caps = "refuse"\n')
    (tmp_path / "p.json").write_text(json.dumps({
        "allow_indices": ["docs", "logs-*"], "max_size": 3, "read_only": True, "namespace": "tenant-42",
        "caps": "refuse", "max_argument_bytes": 4096, "max_response_bytes": None,
    }))
    expected = Policy(allow_indices=("docs", "logs-*"), max_size=3, read_only=True, namespace="tenant-42",
                      caps="refuse", max_argument_bytes=4096)
    assert load_policy_file(tmp_path / "p.toml") == expected
    assert load_policy_file(tmp_path / "p.json") == expected
    (tmp_path / "empty.toml").write_text("")
    assert load_policy_file(tmp_path / "empty.toml") == Policy()


def test_every_policy_field_can_be_set_from_a_file() -> None:
    pytest.importorskip("mcp.server", reason="the MCP SDK is not installed")
    from dataclasses import fields

    from xerj_tools.integrations.mcp._policy_file import POLICY_KEYS

    assert set(POLICY_KEYS) == {f.name for f in fields(Policy)}


BAD_POLICIES = [
    ("p.toml", "max_sise = 3\n", "unknown key 'max_sise'"),
    ("p.toml", "max_size = '3'\n", 'max_size must be a positive integer; got "3"'),
    ("p.toml", "max_size = 0\n", "max_size must be a positive integer"),
    ("p.toml", "read_only = 1\n", "read_only must be true or false"),
    ("p.toml", 'allow_indices = "docs"\n', "allow_indices must be a list of strings"),
    ("p.toml", 'caps = "ignore"\n', 'caps must be "clamp" or "refuse"'),
    ("p.toml", 'namespace = "a"\nnamespace_prefix = "b"\n', "not both"),
    ("p.toml", "max_size = \n", "not valid TOML"),
    ("p.json", '{"max_size": 3,}', "not valid JSON"),
    ("p.json", '["docs"]', "the top level must be a table"),
    ("p.yaml", "max_size: 3\n", "a policy file ends in .toml or .json"),
]


@needs_sdk  # `xerj-tools mcp` checks for the SDK before it reads the policy
@pytest.mark.parametrize(("name", "text", "message"), BAD_POLICIES)
def test_a_bad_policy_file_is_refused_with_exit_2(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    err = io.StringIO()
    assert main(["mcp", "--policy", str(tmp_path / name)], stderr=err) == 2
    assert message in err.getvalue() and str(tmp_path / name) in err.getvalue()


@needs_sdk  # `xerj-tools mcp` checks for the SDK before it reads the policy
def test_a_missing_policy_file_is_refused_with_exit_2(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["mcp", "--policy", str(tmp_path / "nope.toml")], stderr=err) == 2
    assert "cannot read the policy file" in err.getvalue()
    err = io.StringIO()
    assert main(["mcp", "--policy", ""], stderr=err) == 2
    assert "a policy file ends in .toml or .json" in err.getvalue()


@needs_sdk
@pytest.mark.parametrize("bind", ["0.0.0.0:8765", "192.0.2.7:8765", "example.com:8765", "[::]:8765"])
def test_http_refuses_a_non_loopback_address_unless_told(bind: str) -> None:
    from xerj_tools.integrations.mcp import parse_bind

    err = io.StringIO()
    assert main(["mcp", "--http", bind], stderr=err) == 2
    assert "not a loopback address" in err.getvalue() and "--allow-remote" in err.getvalue()
    host = bind.rpartition(":")[0].strip("[]")
    assert parse_bind(bind, allow_remote=True) == (host, 8765)


@needs_sdk
@pytest.mark.parametrize(("bind", "expected"), [
    ("127.0.0.1:8765", ("127.0.0.1", 8765)), ("8765", ("127.0.0.1", 8765)), (":0", ("127.0.0.1", 0)),
    ("localhost:80", ("localhost", 80)), ("[::1]:8765", ("::1", 8765)), ("127.0.0.2:1", ("127.0.0.2", 1)),
])
def test_http_binds_loopback_by_default(bind: str, expected: tuple[str, int]) -> None:
    from xerj_tools.integrations.mcp import parse_bind

    assert parse_bind(bind) == expected


@needs_sdk
@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", "", "127.0.0.1:８７６５"])
def test_http_needs_a_port(bind: str) -> None:
    err = io.StringIO()
    assert main(["mcp", "--http", bind], stderr=err) == 2
    assert "--http takes HOST:PORT" in err.getvalue()


def test_without_the_sdk_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    err = io.StringIO()
    assert main(["mcp"], stderr=err) == 2
    assert f"the `mcp` extra: {install_hint('mcp')}" in err.getvalue()


@needs_sdk
def test_arguments_past_the_depth_limit_are_an_error_result(server: Connected, xerj: XerjStandIn) -> None:
    filters: Any = {}
    for _ in range(100):
        filters = [filters]
    error, payload = server.call("xerj_search", {"index": "docs", "query": {"bool": {"filter": filters}}})
    assert error is True and "nested deeper than 64 levels" in json.dumps(payload["error"])
    assert xerj.requests == []


@needs_sdk
def test_credentials_in_the_url_name_the_environment_variables() -> None:
    err = io.StringIO()
    assert main(["mcp", "--url", "http://u:s3cret-pw@127.0.0.1:9200"], stderr=err) == 2
    assert "$XERJ_API_KEY" in err.getvalue() and "$XERJ_AUTH" in err.getvalue()
    assert "s3cret-pw" not in err.getvalue()


@needs_sdk
def test_the_instructions_name_every_tool_the_server_lists(tmp_path: Path) -> None:
    from xerj_tools import AsyncDispatcher, HttpRequest
    from xerj_tools.integrations.mcp import build_server

    extra = tmp_path / "tools.json"
    extra.write_text(json.dumps([*json.loads(TOOLS_JSON.read_text()), {"type": "function", "function": {
        "name": "count_docs", "description": "Count the documents of one index. Maps to POST /{index}/_search.",
        "parameters": {"type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}}}]))
    registry = load_registry(extra)

    def count_docs(args: Any) -> HttpRequest:
        return HttpRequest("POST", f"/{args['index']}/_search", {"size": 0}, kind="search")

    async def instructions(policy: Policy | None) -> str:
        async with AsyncDispatcher(registry, url="http://127.0.0.1:9", handlers={"count_docs": count_docs},
                                   policy=policy) as dispatcher:
            return str(build_server(dispatcher).instructions)

    text = asyncio.run(instructions(None))
    assert [n for n in registry.names if n not in text] == []
    assert "xerj_get_document: Get a document by id" in text
    assert "count_docs: Count the documents of one index. Every result" in text
    read_only = asyncio.run(instructions(Policy(read_only=True)))
    assert "xerj_memory_store" not in read_only and "xerj_memory_recall" in read_only


@needs_sdk
def test_an_mcp_client_orients_then_queries_a_field_it_learned(server: Connected, xerj: XerjStandIn) -> None:
    # A model over MCP lists the indices, describes one, then aggregates on a keyword field it
    # read from the description (not one the script knew): orientation, end to end.
    error, listing = server.call("xerj_list_indices", {})
    assert error is False and [i["name"] for i in listing["indices"]] == ["docs", "tickets"]
    index = listing["indices"][0]["name"]
    error, described = server.call("xerj_describe_index", {"index": index})
    assert error is False and described["search_with"]["xerj_semantic_search"] == ["body"]
    field = described["fields"]["keyword"][0]
    error, counted = server.call("xerj_search", {"index": index, "query": {"match_all": {}}, "size": 0,
                                                 "aggs": {"by": {"terms": {"field": field}}}})
    assert error is False and counted["total"] == listing["indices"][0]["docs"]
    assert sum(b["doc_count"] for b in counted["aggregations"]["by"]["buckets"]) == counted["total"]
    assert ("POST", f"/{index}/_search") in [(r.method, r.path) for r in xerj.requests]


@needs_sdk
def test_a_policy_file_hides_an_index_from_the_listing_and_refuses_describing_it(
    guarded: Connected, xerj: XerjStandIn
) -> None:
    error, listing = guarded.call("xerj_list_indices", {})
    assert error is False and [i["name"] for i in listing["indices"]] == ["docs"]
    assert listing["count"] == 1 and "tickets" not in json.dumps(listing)
    error, refused = guarded.call("xerj_describe_index", {"index": "tickets"})
    assert error is True and refused["error"]["code"] == "policy_denied"
    assert not any("tickets" in r.path for r in xerj.requests)
