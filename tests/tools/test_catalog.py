"""Orientation through XERJ autoindex's catalog (``autoindex-catalog``): `xerj_list_indices` and
`xerj_describe_index` read it where the node has it, held to the policy; the stand-in builds it
as autoindex does. Over a real socket where a request is sent; the shaping without one."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from xerj_tools import Dispatcher, Policy, load_registry, run_agent
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn
from xerj_tools.testing._catalog import infer_fields, sample_queries
from xerj_tools.tools._catalog import served_queries
from xerj_tools.tools._ready_queries import ready_query

from conftest import chat_call, openai_client

CATALOG = "autoindex-catalog"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "autoindex"


@pytest.fixture
def cataloged() -> Iterator[XerjStandIn]:
    with XerjStandIn(catalog=True) as xerj:
        yield xerj


def paths(xerj: XerjStandIn) -> list[str]:
    return [f"{r.method} {r.path}" for r in xerj.requests]


def catalog_bodies(xerj: XerjStandIn) -> list[Any]:
    return [r.body for r in xerj.requests if r.path == f"/{CATALOG}/_search"]


# ---------------------------------------------------------------------------- the stand-in's


def test_the_stand_in_infers_what_a_real_autoindex_run_captured() -> None:
    # The first 500 records (autoindex's default sample, lib.rs:126-136, cli.rs:107) of the app log in XERJ's
    # demo/usecases/autoindex/recipe-captures/sample, and the table `xerj autoindex map` printed
    # for them (recipe-captures/cap-map.txt, `ax-logs`): types, cardinality, examples (the map
    # shows 40 characters of each), and the three ready queries.
    with gzip.open(FIXTURES / "app-2026-03.head500.jsonl.gz", "rt") as f:
        records = [json.loads(line) for line in f]
    specs = {s["name"]: s for s in infer_fields(records)}
    table = {name: (s["es_type"], s["cardinality_est"], [e[:40] for e in s["examples"]]) for name, s in specs.items()}
    assert table == {
        "latency_ms": ("long", 160, ["16", "18", "14"]),
        "level": ("keyword", 3, ["INFO", "WARN", "ERROR"]),
        "message": ("text", 500, ["billing handled request for u-0012 in 16", "checkout handled request for u-0054 in 1",
                                  "billing handled request for u-0108 in 14"]),
        "service": ("keyword", 4, ["billing", "checkout", "search"]),
        "ts": ("date", 500, ["2026-03-01T00:00:10.000Z", "2026-03-01T00:01:40.000Z", "2026-03-01T00:03:00.000Z"]),
        "user": ("keyword", 185, ["u-0012", "u-0054", "u-0108"]),
    }
    assert specs["ts"]["date_enc"] == "rfc3339" and all(s["null_ratio"] == 0 for s in specs.values())
    queries = sample_queries("ax-logs", list(specs.values()))
    assert [(q["title"], q["body"]) for q in queries] == [
        ("Exact filter on user", {"query": {"term": {"user": "u-0012"}}, "size": 3}),
        ("Full-text (BM25) match on message", {"query": {"match": {"message": "checkout"}}, "size": 3}),
        ("Daily activity (date_histogram on ts)",
         {"size": 0, "aggs": {"per_day": {"date_histogram": {"field": "ts", "calendar_interval": "day"}}}}),
    ]
    assert {q["request"] for q in queries} == {"POST /ax-logs/_search"}


def test_the_stand_in_writes_the_documents_autoindex_writes(cataloged: XerjStandIn) -> None:
    docs = cataloged.indices[CATALOG].docs
    assert sorted(docs) == ["ds:docs", "ds:tickets", "file:docs-jsonl", "file:tickets-jsonl", "run:run-stand-in"]
    tickets = docs["ds:tickets"]
    # catalog.rs:78-102: fields_json one JSON string, sample_queries_json a list of them
    assert isinstance(tickets["fields_json"], str) and all(isinstance(q, str) for q in tickets["sample_queries_json"])
    specs = json.loads(tickets["fields_json"])
    assert {s["name"]: s["es_type"] for s in specs} == {
        "opened": "date", "priority": "long", "service": "keyword", "status": "keyword", "title": "text"}
    assert (tickets["time_field"], tickets["time_min"], tickets["time_max"]) == (
        "opened", "2026-09-30T00:00:00.000Z", "2026-11-29T00:00:00.000Z")
    assert docs["ds:docs"]["semantic_field"] == "body" and docs["ds:docs"]["notes"][0].startswith("body: hybrid")
    # an index made without a mapping gets autoindex's (lib.rs:174-187); `docs` keeps its own
    assert cataloged.indices["tickets"].mappings == {"properties": {
        "opened": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
        "priority": {"type": "long"}, "service": {"type": "keyword"}, "status": {"type": "keyword"},
        "title": {"type": "text"}}}
    assert cataloged.indices["docs"].mappings is not None and "title" in cataloged.indices["docs"].mappings["properties"]
    with XerjStandIn() as plain:
        assert CATALOG not in plain.indices  # only when asked for


# ---------------------------------------------------------------------------- the listing


def test_the_listing_gives_each_datasets_formats_files_and_time_range(make_runner: Any, cataloged: XerjStandIn) -> None:
    runner = make_runner(url=cataloged.url)
    payload = runner.payload("xerj_list_indices", {})
    assert payload["indices"] == [
        {"name": CATALOG, "docs": 5, "role": "catalog"},
        {"name": "docs", "docs": 8, "formats": ["jsonl"], "files": 1, "semantic_field": "body"},
        {"name": "tickets", "docs": 6, "formats": ["jsonl"], "files": 1, "time_field": "opened",
         "time_range": ["2026-09-30T00:00:00.000Z", "2026-11-29T00:00:00.000Z"]},
    ]
    assert "describe" in payload["notes"][-1] and "example values" in payload["notes"][-1]
    # one search, for the datasets listed, without their field lists
    [body] = catalog_bodies(cataloged)
    assert body["query"]["bool"]["filter"][1] == {"terms": {"index_name": ["docs", "tickets"]}}
    assert "fields_json" not in body["_source"]
    # a pattern that leaves the catalog out still gets its facts (the `_resolve` answer names it)
    narrowed = runner.payload("xerj_list_indices", {"pattern": "tick*"})
    assert [(r["name"], r.get("time_field")) for r in narrowed["indices"]] == [("tickets", "opened")]


def test_an_unreadable_catalog_leaves_the_listing_whole_with_a_note(make_runner: Any, cataloged: XerjStandIn) -> None:
    cataloged.fail_next(Fault(status=500, match=CATALOG))
    payload = make_runner(url=cataloged.url).payload("xerj_list_indices", {})
    assert [r["name"] for r in payload["indices"]] == [CATALOG, "docs", "tickets"]
    assert "formats" not in json.dumps(payload["indices"]) and "could not be read" in payload["notes"][-1]


def test_a_node_without_a_catalog_is_listed_and_described_as_before(runner: Any, xerj: XerjStandIn) -> None:
    listing = runner.payload("xerj_list_indices", {})
    assert listing == {"ok": True, "count": 2, "indices": [{"name": "docs", "docs": 8}, {"name": "tickets", "docs": 6}]}
    assert CATALOG not in json.dumps(paths(xerj))  # no catalog in the listing: not asked
    described = runner.payload("xerj_describe_index", {"index": "tickets"})
    assert "catalog" not in described and described["fields"]["numeric"] == {"priority": "long"}
    assert paths(xerj)[-2:] == ["GET /tickets/_mapping", f"POST /{CATALOG}/_search"]  # one try, a 404


# ---------------------------------------------------------------------------- the description


def test_a_description_gives_example_values_cardinality_notes_and_ready_queries(make_runner: Any, cataloged: XerjStandIn) -> None:
    runner = make_runner(url=cataloged.url)
    payload = runner.payload("xerj_describe_index", {"index": "tickets"})
    # the mapping's groups as before (autoindex's mapping now), the catalog beside them
    assert payload["fields"] == {"date": ["opened"], "keyword": ["service", "status"], "numeric": {"priority": "long"},
                                 "text": ["title"]}
    section = payload["catalog"]["tickets"]
    assert section["records"] == 6 and section["time_field"] == "opened"
    assert section["fields"]["status"] == {"examples": ["open", "closed"], "cardinality": 2}
    assert section["fields"]["opened"]["range"] == ["2026-09-30T00:00:00.000Z", "2026-11-29T00:00:00.000Z"]
    assert section["fields"]["title"]["avg_len"] == 28
    assert section["queries"][0] == {"title": "Exact filter on status", "class": "exact_filter", "tool": "xerj_search",
                                     "arguments": {"index": "tickets", "query": {"term": {"status": "open"}}, "size": 3}}
    docs = runner.payload("xerj_describe_index", {"index": "docs"})["catalog"]["docs"]
    assert docs["semantic_field"] == "body" and "natural language" in docs["fields"]["body"]["notes"][0]
    assert "notes" not in docs  # the dataset's notes repeat its fields' (lib.rs:723-727): said once
    assert all(len(e) <= 81 for e in docs["fields"]["body"]["examples"])  # text examples cut, marked
    hybrid = next(q for q in docs["queries"] if q["class"] == "hybrid_lexical_vector")
    assert hybrid["tool"] == "xerj_hybrid_search" and hybrid["arguments"]["queries"][1]["query"]["semantic"]["field"] == "body"
    assert "note" not in hybrid  # "strip *_vector from hits": the tools drop the embeddings themselves
    assert "title.keyword" not in docs["fields"]  # what the catalog does not know is left as the mapping says


def test_each_ready_query_is_a_valid_call_that_finds_what_it_names(make_runner: Any, cataloged: XerjStandIn) -> None:
    runner = make_runner(url=cataloged.url)
    registry = load_registry()
    for index in ("docs", "tickets"):
        for query in runner.payload("xerj_describe_index", {"index": index})["catalog"][index]["queries"]:
            assert registry[query["tool"]].validate(query["arguments"]).ok, query
            if query["class"] != "analytics":
                answer = runner.payload(query["tool"], query["arguments"])
                assert answer["ok"] is True and answer["hits"], query


def test_describing_the_catalog_itself_says_what_it_is(make_runner: Any, cataloged: XerjStandIn) -> None:
    payload = make_runner(url=cataloged.url).payload("xerj_describe_index", {"index": CATALOG})
    assert "catalog" not in payload and "keyword" in payload["fields"]
    assert "autoindex's catalog" in payload["notes"][-1]
    assert catalog_bodies(cataloged) == []


def _wide_catalog(xerj: XerjStandIn, n: int) -> None:
    mapping = {"properties": {f"f_{i:03d}": {"type": "keyword"} for i in range(n)}}
    xerj.add_documents("wide", {"1": {"f_000": "x"}}, mappings=mapping)
    specs = [{"name": f"f_{i:03d}", "es_type": "keyword", "cardinality_est": 9000, "cardinality_overflow": True,
              "null_ratio": 0.25, "avg_len": 90.0, "coverage": 0.75,
              "examples": [f"value {i:03d}-{k} " + "x" * 90 for k in range(3)]} for i in range(n)]
    query = {"class": "exact_filter", "title": "Exact filter on f_000", "request": "POST /wide/_search",
             "body": {"query": {"term": {"f_000": specs[0]["examples"][0]}}, "size": 3}}
    xerj.add_documents(CATALOG, {"ds:wide": {
        "doc_kind": "dataset", "slug": "wide", "index_name": "wide", "record_count": 1, "file_count": 1,
        "formats": ["csv(gzip)"], "fields_json": json.dumps(specs), "sample_queries_json": [json.dumps(query)],
        "notes": [], "run_id": "r"}})


def test_example_values_fill_a_page_of_the_budget_and_next_goes_on(make_runner: Any, cataloged: XerjStandIn) -> None:
    _wide_catalog(cataloged, 300)
    runner = make_runner(url=cataloged.url)
    result = runner.run(chat_call("xerj_describe_index", {"index": "wide"}))
    first = json.loads(result.content)
    assert len(result.content) <= 12_000 and "truncated" not in json.dumps(first["catalog"])
    shown = first["truncated"]["shown"]
    assert 10 < shown < 300 and first["next"] == {"from": shown} and first["truncated"]["of"] == 300
    assert sorted(first["catalog"]["wide"]["fields"]) == first["fields"]["keyword"]
    entry = first["catalog"]["wide"]["fields"]["f_000"]
    assert entry["cardinality"] == "9000+" and entry["null_ratio"] == 0.25 and len(entry["examples"]) == 3
    assert first["catalog"]["wide"]["queries"][0]["arguments"]["query"] == {"term": {"f_000": entry["examples"][0]}}
    seen = list(first["fields"]["keyword"])
    page = first
    while "next" in page:
        page = runner.payload("xerj_describe_index", {"index": "wide", **page["next"]})
        assert "queries" not in page["catalog"]["wide"]  # the ready queries come with the first page
        assert sorted(page["catalog"]["wide"]["fields"]) == page["fields"]["keyword"]
        seen += page["fields"]["keyword"]
    assert seen == [f"f_{i:03d}" for i in range(300)]


# ---------------------------------------------------------------------------- the policy


def _with_pivot(xerj: XerjStandIn) -> None:
    """`docs`'s dataset document with a cross-dataset pivot into `tickets` (catalog.rs:212-240)."""
    source = dict(xerj.indices[CATALOG].docs["ds:docs"])
    pivot = {"class": "cross_dataset_pivot", "title": "Pivot docs.service → tickets.service", "steps": [
        {"request": "POST /docs/_search", "body": {"query": {"term": {"service": "checkout"}}, "size": 3},
         "note": "step 1: find records in docs for a service value"},
        {"request": "POST /tickets/_search", "body": {"query": {"term": {"service": "checkout"}}, "size": 3},
         "note": "step 2: pivot the same value into tickets"}],
        "evidence": "sampled overlap 3 values, containment 0.75, confirmed 3/3 values live"}
    source["sample_queries_json"] = [*source["sample_queries_json"], json.dumps(pivot)]
    xerj.add_documents(CATALOG, {"ds:docs": source})


TICKET_VALUES = ("tickets", "opened", "Refund not received", "2026-11-29", "closed")


def test_a_denied_dataset_shows_nowhere_nor_its_example_values(make_runner: Any, cataloged: XerjStandIn) -> None:
    _with_pivot(cataloged)
    open_runner = make_runner(url=cataloged.url)
    queries = open_runner.payload("xerj_describe_index", {"index": "docs"})["catalog"]["docs"]["queries"]
    pivot = next(q for q in queries if q["class"] == "cross_dataset_pivot")
    assert [s["arguments"]["index"] for s in pivot["steps"]] == ["docs", "tickets"]

    runner = make_runner(url=cataloged.url, policy=Policy(deny_indices=(".*", "tickets")))
    listing = runner.run(chat_call("xerj_list_indices", {}))
    described = runner.run(chat_call("xerj_describe_index", {"index": "docs"}))
    assert [r["name"] for r in json.loads(listing.content)["indices"]] == [CATALOG, "docs"]
    assert "cross_dataset_pivot" not in described.content  # its second step is in `tickets`
    assert "examples" in described.content
    for text in (listing.content, described.content):
        assert not [v for v in TICKET_VALUES if v in text]
    # the catalog is asked about the allowed datasets only
    assert all("tickets" not in json.dumps(body) for body in catalog_bodies(cataloged))


def test_a_catalog_answering_for_a_denied_index_is_not_believed(make_runner: Any, cataloged: XerjStandIn) -> None:
    # A catalog that sends the dataset documents of every index, whatever was asked.
    everything = [{"_index": CATALOG, "_id": i, "_source": d} for i, d in cataloged.indices[CATALOG].docs.items()
                  if d["doc_kind"] == "dataset"]
    answer = {"took": 1, "timed_out": False, "hits": {"total": {"value": 2, "relation": "eq"}, "hits": everything}}
    runner = make_runner(url=cataloged.url, policy=Policy(deny_indices=(".*", "tickets")))
    cataloged.fail_next(Fault(status=200, match=CATALOG, body=json.dumps(answer).encode()))
    listing = runner.run(chat_call("xerj_list_indices", {}))
    cataloged.fail_next(Fault(status=200, match=CATALOG, body=json.dumps(answer).encode()))
    described = runner.run(chat_call("xerj_describe_index", {"index": "docs"}))
    assert list(json.loads(described.content)["catalog"]) == ["docs"]
    for text in (listing.content, described.content):
        assert not [v for v in TICKET_VALUES if v in text]


def test_a_caller_who_may_not_read_the_catalog_gets_the_mapping_alone(make_runner: Any, cataloged: XerjStandIn) -> None:
    runner = make_runner(url=cataloged.url, policy=Policy(allow_indices=("docs", "tickets")))
    listing = runner.payload("xerj_list_indices", {})
    described = runner.payload("xerj_describe_index", {"index": "tickets"})
    assert [r["name"] for r in listing["indices"]] == ["docs", "tickets"] and "formats" not in json.dumps(listing)
    assert "catalog" not in described and "examples" not in json.dumps(described)
    assert catalog_bodies(cataloged) == []  # never asked


# ---------------------------------------------------------------------------- a model orients


def _answers(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body.get("messages", []) if m.get("role") == "tool"]


def _filter_on_what_it_read(body: Mapping[str, Any]) -> Sequence[tuple[str, Any]]:
    """The model's second turn: a term filter on a keyword field, with a value the description
    showed it (not a guess)."""
    [described] = [a for a in _answers(body) if "catalog" in a]
    section = described["catalog"]["tickets"]
    field = next(f for f in described["fields"]["keyword"] if section["fields"][f]["cardinality"] <= 3)
    value = section["fields"][field]["examples"][0]
    return [("xerj_search", {"index": "tickets", "query": {"term": {field: value}}, "size": 10})]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_scripted_model_orients_in_one_call_and_filters_on_an_example_value_it_read(cataloged: XerjStandIn, mode: str) -> None:
    script = [Turn(tool_calls=[("xerj_describe_index", {"index": "tickets"})]),
              Turn(tool_calls=_filter_on_what_it_read), Turn(text="Four tickets are open.")]
    with ScriptedModel(script) as model:
        if mode == "sync":
            with openai_client(model.base_url) as client, Dispatcher(url=cataloged.url) as d:
                result = run_agent(client, model="scripted", messages=[{"role": "user", "content": "open tickets?"}],
                                   dispatcher=d)
        else:
            import asyncio

            from xerj_tools import AsyncDispatcher, arun_agent

            async def main() -> Any:
                async with openai_client(model.base_url, "async") as client, AsyncDispatcher(url=cataloged.url) as d:
                    return await arun_agent(client, model="scripted", dispatcher=d,
                                            messages=[{"role": "user", "content": "open tickets?"}])

            result = asyncio.run(main())
    assert result.outcome == "completed" and result.output_text == "Four tickets are open."
    search = next(r for r in cataloged.requests if r.path == "/tickets/_search")
    assert search.body["query"] == {"term": {"status": "open"}}
    answer = json.loads(result.transcript[-2]["content"])
    assert answer["ok"] is True and {h["_id"] for h in answer["hits"]} == {"T-1", "T-2", "T-4", "T-6"}


# ---------------------------------------------------------------------------- pure shaping


def test_ready_queries_name_only_the_tools_served() -> None:
    payload = {"ok": True, "catalog": {"docs": {"records": 1, "queries": [
        {"tool": "xerj_search", "arguments": {}}, {"tool": "xerj_hybrid_search", "arguments": {}},
        {"steps": [{"tool": "xerj_search"}, {"tool": "xerj_semantic_search"}]}]}}}
    kept = served_queries(payload, {"xerj_search", "xerj_describe_index"})
    assert kept["catalog"]["docs"]["queries"] == [{"tool": "xerj_search", "arguments": {}}]
    assert "queries" not in served_queries(payload, {"xerj_describe_index"})["catalog"]["docs"]
    assert payload["catalog"]["docs"]["queries"][1]["tool"] == "xerj_hybrid_search"  # not changed in place


def _allow(name: str) -> bool:
    return name != "secret"


@pytest.mark.parametrize(("raw", "tool", "arguments"), [
    ({"request": "POST /ax-docs/_search", "body": {"query": {"semantic": {"field": "body", "query": "vpn"}}, "size": 3}},
     "xerj_semantic_search", {"index": "ax-docs", "field": "body", "query": "vpn", "size": 3}),
    ({"request": "POST /ax-logs/_search", "body": {"size": 0, "aggregations": {"t": {"terms": {"field": "level"}}}}},
     "xerj_search", {"index": "ax-logs", "query": {"match_all": {}}, "size": 0, "aggs": {"t": {"terms": {"field": "level"}}}}),
    ({"request": "POST /ax-*/_search", "body": {"query": {"hybrid": {"queries": [{"query": {"match": {"b": "x"}}}],
                                                                        "fusion": "linear"}}}},
     "xerj_hybrid_search", {"index": "ax-*", "queries": [{"query": {"match": {"b": "x"}}}], "fusion": "linear"}),
])
def test_a_ready_query_becomes_the_arguments_of_one_of_the_tools(raw: dict[str, Any], tool: str, arguments: dict[str, Any]) -> None:
    query = ready_query(json.dumps({"title": "t", "class": "c", **raw}), _allow)
    assert query == {"title": "t", "class": "c", "tool": tool, "arguments": arguments}
    assert load_registry()[tool].validate(arguments).ok


@pytest.mark.parametrize("raw", [
    "{not json", "[1, 2]", json.dumps({"request": "GET /x/_mapping", "body": {}}),
    json.dumps({"request": "POST /secret/_search", "body": {"query": {"match_all": {}}}}),
    json.dumps({"request": "POST /x,secret/_search", "body": {"query": {"match_all": {}}}}),
    json.dumps({"request": "POST /x/_search", "body": {"query": {"match_all": {}}, "script_fields": {}}}),
    json.dumps({"request": "POST /x/_search", "body": {"query": "match everything"}}),
    json.dumps({"request": "POST /x/_search", "body": {"query": {"semantic": {"field": "b", "query": "q", "boost": 2}}}}),
    json.dumps({"steps": [{"request": "POST /x/_search", "body": {"query": {}}},
                          {"request": "POST /secret/_search", "body": {"query": {}}}]}),
    json.dumps({"steps": []}), "[" * 5000,
])
def test_a_ready_query_the_tools_cannot_say_or_the_policy_denies_is_left_out(raw: str) -> None:
    assert ready_query(raw, _allow) is None


# ---------------------------------------------------------------------------- over `xerj-tools mcp`

from mcp_support import HAVE_SDK, Connected, needs_sdk, server_env  # noqa: E402


@pytest.fixture(scope="module")
def mcp_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[XerjStandIn, Connected, Connected]]:
    """A stand-in with its catalog, served by `xerj-tools mcp` twice: as is, and bound by a policy
    file that denies `tickets`."""
    if not HAVE_SDK:
        pytest.skip("the MCP SDK is not installed: pip install -e '.[mcp]' (in the clone)")
    where = tmp_path_factory.mktemp("catalog-mcp")
    (where / "policy.toml").write_text('deny_indices = [".*", "tickets"]\n')
    with XerjStandIn(catalog=True) as xerj:
        open_server = Connected("stdio", [], server_env(xerj), where / "open.log")
        try:
            guarded = Connected("stdio", ["--policy", str(where / "policy.toml")], server_env(xerj), where / "guarded.log")
            try:
                yield xerj, open_server, guarded
            finally:
                guarded.close()
        finally:
            open_server.close()


@needs_sdk
@pytest.mark.skipif(importlib.util.find_spec("agents") is None, reason="openai-agents is not installed (pip install openai-agents)")
def test_over_mcp_a_scripted_model_orients_in_one_call_and_filters_on_a_value_it_read(
        mcp_catalog: tuple[XerjStandIn, Connected, Connected], monkeypatch: pytest.MonkeyPatch) -> None:
    # The model (openai-agents' runner with a scripted model) reaches the tools through a
    # `xerj-tools mcp` process of its own; its second turn filters on what the first one read.
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # nothing leaves 127.0.0.1
    import asyncio

    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    xerj = mcp_catalog[0]
    xerj.clear()

    def tool_text(message: Mapping[str, Any]) -> str:
        content = message["content"]
        return content if isinstance(content, str) else content[0]["text"]

    def filter_on_what_it_read(body: Mapping[str, Any]) -> Sequence[tuple[str, Any]]:
        [described] = [json.loads(tool_text(m)) for m in body["messages"] if m["role"] == "tool"]
        value = described["catalog"]["tickets"]["fields"]["status"]["examples"][0]
        return [("xerj_search", {"index": "tickets", "query": {"term": {"status": value}}, "size": 10})]

    script = [Turn(tool_calls=[("xerj_describe_index", {"index": "tickets"})]),
              Turn(tool_calls=filter_on_what_it_read), Turn(text="Four tickets are open.")]
    with ScriptedModel(script) as model:
        async def main() -> Any:
            params: Any = {"command": sys.executable, "args": ["-m", "xerj_tools", "mcp"], "env": server_env(xerj)}
            async with MCPServerStdio(params=params, name="xerj", cache_tools_list=True,
                                      client_session_timeout_seconds=60) as server, \
                    AsyncOpenAI(base_url=model.base_url, api_key="scripted") as client:
                llm = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
                agent = Agent(name="analyst", instructions="Answer from XERJ.", mcp_servers=[server], model=llm)
                return await Runner.run(agent, "How many tickets are open?", run_config=RunConfig(tracing_disabled=True))

        result = asyncio.run(main())
    assert result.final_output == "Four tickets are open."
    search = next(r for r in xerj.requests if r.path == "/tickets/_search")
    assert search.body["query"] == {"term": {"status": "open"}}
    found = json.loads(tool_text([m for m in model.requests[2]["messages"] if m["role"] == "tool"][-1]))
    assert {h["_id"] for h in found["hits"]} == {"T-1", "T-2", "T-4", "T-6"}


@needs_sdk
def test_over_mcp_the_catalog_orients_and_a_policy_file_hides_a_denied_dataset(
        mcp_catalog: tuple[XerjStandIn, Connected, Connected]) -> None:
    xerj, open_server, guarded = mcp_catalog
    error, described = open_server.call("xerj_describe_index", {"index": "tickets"})
    assert error is False and described["catalog"]["tickets"]["fields"]["status"]["examples"] == ["open", "closed"]
    xerj.clear()
    error, listing = guarded.call("xerj_list_indices", {})
    assert error is False and [r["name"] for r in listing["indices"]] == [CATALOG, "docs"]
    error, docs = guarded.call("xerj_describe_index", {"index": "docs"})
    assert error is False and docs["catalog"]["docs"]["fields"]["service"]["examples"]
    error, refused = guarded.call("xerj_describe_index", {"index": "tickets"})
    assert error is True and refused["error"]["code"] == "policy_denied"
    for text in (json.dumps(listing), json.dumps(docs), json.dumps(refused)):
        assert not [v for v in TICKET_VALUES[1:] if v in text]
    assert catalog_bodies(xerj) and all("tickets" not in json.dumps(b) for b in catalog_bodies(xerj))


def test_a_hostile_catalog_document_is_read_without_harm(make_runner: Any, cataloged: XerjStandIn) -> None:
    # Engine data: ready queries that are 100,000 `[`, nested 600 deep or 200 kB long; field specs
    # with a NaN, a 1e400, examples that are not strings, no name, or no object at all.
    deep: Any = {"term": {"status": "open"}}
    for _ in range(300):
        deep = {"bool": {"must": [deep]}}
    specs = ('[{"name": "status", "es_type": "keyword", "cardinality_est": 2, "null_ratio": NaN, "avg_len": 1e400,'
             ' "examples": ["open", 7, null, {"x": 1}]}, {"es_type": "keyword"}, "junk"]')
    big = {"request": "POST /tickets/_search", "body": {"query": {"match": {"title": "x" * 200_000}}}}
    source = dict(cataloged.indices[CATALOG].docs["ds:tickets"])
    source.update(fields_json=specs, formats="jsonl", time_min=12,
                  sample_queries_json=["[" * 100_000, json.dumps({"request": "POST /tickets/_search",
                                                                   "body": {"query": deep}}), json.dumps(big)])
    cataloged.add_documents(CATALOG, {"ds:tickets": source})
    runner = make_runner(url=cataloged.url)
    result = runner.run(chat_call("xerj_describe_index", {"index": "tickets"}))
    payload = json.loads(result.content)
    assert payload["ok"] is True and len(result.content) <= 12_000
    assert payload["catalog"]["tickets"]["fields"]["status"]["examples"] == ["open"]
    assert "null_ratio" not in payload["catalog"]["tickets"]["fields"]["status"]
    assert "queries" not in payload["catalog"]["tickets"]  # none the model could send as it reads it
    listing = runner.payload("xerj_list_indices", {})
    assert listing["ok"] is True and "formats" not in listing["indices"][2]
