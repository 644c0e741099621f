"""`null` for an argument a client means to leave out (as real clients send it): an audited
repair for an optional property, never a value sent to XERJ; an error for a required one; the
same reading offline; and what each tool-definition shape says about strict mode."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from xerj_tools import AgentOptions, Dispatcher, load_registry, run_agent
from xerj_tools._cli._main import main
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

from conftest import Runner, openai_client

REGISTRY = load_registry()
MATCH = {"match": {"body": "checkout"}}


@pytest.mark.parametrize(
    ("tool", "arguments", "repaired", "repairs"),
    [
        (
            "xerj_search",
            {"index": "docs", "query": MATCH, "size": None, "from": None, "rerank": None},
            {"index": "docs", "query": MATCH},
            ["$.size: null → omitted", "$.from: null → omitted", "$.rerank: null → omitted"],
        ),
        (
            "xerj_memory_recall",
            {"namespace": "n", "query": "q", "vector": None, "recency_weight": None},
            {"namespace": "n", "query": "q"},
            ["$.vector: null → omitted", "$.recency_weight: null → omitted"],
        ),
        (
            "xerj_search",
            {"index": "docs", "query": {**MATCH, "size": None}},  # nested, then moved up
            {"index": "docs", "query": MATCH},
            ["$.query.size → $.size", "$.size: null → omitted"],
        ),
        (
            "xerj_hybrid_search",
            {"index": "d", "queries": [{"query": MATCH, "weight": None}]},
            {"index": "d", "queries": [{"query": MATCH}]},
            ["$.queries[0].weight: null → omitted"],
        ),
    ],
)
def test_null_for_an_optional_property_is_omitted(
    tool: str, arguments: dict[str, Any], repaired: dict[str, Any], repairs: list[str]
) -> None:
    result = REGISTRY.validate(tool, arguments, repair=True)
    assert result.ok, result.problems
    assert result.arguments == repaired and list(result.repairs) == repairs


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        ("xerj_search", {"index": None, "query": MATCH}, "$.index"),
        ("xerj_get_document", {"index": "docs", "id": None}, "$.id"),
        ("xerj_hybrid_search", {"index": "d", "queries": [{"query": None}]}, "$.queries[0].query"),
    ],
)
def test_null_for_a_required_property_stays_an_error(
    tool: str, arguments: dict[str, Any], path: str
) -> None:
    result = REGISTRY.validate(tool, arguments, repair=True)
    assert not result.ok and path in {p.path for p in result.problems}
    assert not any("null → omitted" in r and r.startswith(path + ":") for r in result.repairs)


def test_a_null_inside_a_free_form_query_is_the_query_s_own() -> None:
    # `query` declares no properties: its content is XERJ's DSL, not arguments to omit
    args = {"index": "docs", "query": {"match": {"body": None}}, "size": None}
    result = REGISTRY.validate("xerj_search", args, repair=True)
    assert result.arguments == {"index": "docs", "query": {"match": {"body": None}}}


def test_no_null_reaches_xerj_and_the_model_is_told(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload(
        "xerj_search",
        {
            "index": "docs",
            "query": MATCH,
            "size": None,
            "sort": None,
            "source": None,
            "aggs": None,
            "track_total_hits": None,
        },
    )
    assert payload["ok"] is True and payload["total"] > 0
    assert payload["repairs"] == [
        f"$.{k}: null → omitted" for k in ("size", "sort", "source", "aggs", "track_total_hits")
    ]
    body = xerj.requests[0].body
    assert set(body) == {"query"} and None not in body.values()


def test_strict_repair_off_still_refuses_the_null(make_runner: Any, xerj: XerjStandIn) -> None:
    payload = make_runner(url=xerj.url, repair=False).payload(
        "xerj_search", {"index": "docs", "query": MATCH, "size": None}
    )
    assert payload["error"]["problems"][0]["path"] == "$.size" and xerj.requests == []


def test_offline_validation_agrees_with_the_dispatcher() -> None:
    line = json.dumps(
        {
            "name": "xerj_search",
            "arguments": json.dumps({"index": "docs", "query": {}, "size": None}),
        }
    )
    out = io.StringIO()
    code = main(
        ["validate", "-", "--format", "json"],
        stdin=io.StringIO(line + "\n"),
        stdout=out,
        stderr=io.StringIO(),
    )
    report = json.loads(out.getvalue())
    assert code == 0, report
    assert report["repaired"] == 1 and report["invalid"] == 0
    assert report["results"][0]["repairs"] == ["$.size: null → omitted"]
    required = json.dumps(
        {"name": "xerj_search", "arguments": json.dumps({"index": None, "query": {}})}
    )
    assert (
        main(
            ["validate", "-"],
            stdin=io.StringIO(required + "\n"),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        == 1
    )


# What each definition shape sends about strict mode, as it reaches an OpenAI-compatible server.


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_strict_as_the_model_server_receives_it(xerj: XerjStandIn, api: str) -> None:
    with (
        ScriptedModel([Turn(text="done")]) as model,
        Dispatcher(url=xerj.url) as dispatcher,
        openai_client(model.base_url) as client,
    ):
        run_agent(client, model="m", messages="hi", dispatcher=dispatcher, options=AgentOptions(api=api))  # type: ignore[arg-type]
    tools = model.requests[0]["tools"]
    assert len(tools) == len(REGISTRY.names)
    if api == "responses":
        # an omitted (or null) strict lets OpenAI normalise into strict mode; false opts out
        assert [t["strict"] for t in tools] == [False] * len(tools)
    else:
        # Chat Completions: the tools file as written, which sets no strict (non-strict default)
        assert all("strict" not in t["function"] for t in tools)


def test_a_tools_file_that_sets_strict_keeps_it_in_responses(tmp_path: Any) -> None:
    definition = {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "d",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
                "additionalProperties": False,
            },
        },
    }
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([definition]))
    registry = load_registry(path)
    assert registry.responses_tools()[0]["strict"] is True
    assert registry.chat_tools()[0]["function"]["strict"] is True


def test_mcp_lists_the_published_schema_without_strict() -> None:
    pytest.importorskip("mcp")
    from xerj_tools.integrations.mcp import list_tools

    listed = {t.name: t for t in list_tools(REGISTRY)}
    for spec in REGISTRY:
        schema = listed[spec.name].input_schema
        assert schema == spec.parameters and "strict" not in json.dumps(schema)
