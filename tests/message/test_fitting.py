"""Fitting any result: a custom tool's JSON, one document, deep and wide JSON, and a budget in
tokens; every strategy within its budget, with a marker iff something was cut."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import (
    Budget,
    ConfigurationError,
    Dispatcher,
    HttpRequest,
    estimate_tokens,
    load_registry,
)
from xerj_tools._dispatch._core import DispatchCore
from xerj_tools._message._budget import MIN_BUDGET, fit_result
from xerj_tools._message._fit_hits import Measured, cut_strings, size

from conftest import chat_call
from rawserver import RawServer, answer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fitting as bench

WORDS = "node shard heap latency queue merge segment refresh flush cache disk".split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def stats_result() -> dict[str, Any]:
    """A custom tool's 25 KB answer: node statistics, each with a long description."""
    rng = random.Random(11)
    return {"cluster": "prod-eu", "status": "green",
            "nodes": [{"name": f"node-{i:02d}", "heap_used_percent": 40 + i % 50, "roles": ["data", "ingest"],
                       "description": words(rng, 60), "segments": {"count": 100 + i, "memory_bytes": 2**20 + i}}
                      for i in range(50)]}


def test_a_custom_tools_25_kb_result_keeps_most_of_itself_and_says_what_was_cut(tmp_path: Path) -> None:
    extra = tmp_path / "tools.json"
    extra.write_text(json.dumps([{"type": "function", "function": {"name": "node_stats", "parameters": {
        "type": "object", "properties": {"cluster": {"type": "string"}}}}}]))
    body = json.dumps(stats_result()).encode()
    assert len(body) > 25_000

    def node_stats(args: Any) -> HttpRequest:
        return HttpRequest("GET", "/_nodes/stats", None)

    with RawServer(answer(200, body)) as server, Dispatcher(load_registry(extra), url=server.url, budget=12_000,
                                                           handlers={"node_stats": node_stats}) as dispatcher:
        content = dispatcher.dispatch(chat_call("node_stats", {}))["content"]  # type: ignore[typeddict-item]
    payload = json.loads(content)
    assert len(content) <= 12_000 and payload["ok"] is True
    assert len(content) > 10_000  # most of the room is used: not "everything but the total"
    result = payload["result"]
    assert result["cluster"] == "prod-eu" and result["status"] == "green"
    shown = [n for n in result["nodes"] if isinstance(n, dict)]
    assert len(shown) >= 15 and [n["name"] for n in shown] == [f"node-{i:02d}" for i in range(len(shown))]
    truncated = payload["truncated"]
    assert truncated["items_omitted"] == {"result.nodes": 50 - len(shown)}
    assert result["nodes"][-1] == f"…[+{50 - len(shown)} items]"
    assert "ask for less" in truncated["hint"]


def big_document() -> dict[str, Any]:
    rng = random.Random(5)
    return {"ok": True, "_index": "manuals", "_id": "m-1", "_version": 4, "found": True,
            "_source": {"title": "Operations manual", "body": words(rng, 4000), "summary": words(rng, 30),
                        "tags": [f"tag-{i}" for i in range(2000)], "owner": {"name": "ops", "team": "sre"}}}


def test_a_big_document_keeps_its_metadata_and_cuts_its_longest_fields_first() -> None:
    payload = big_document()
    out = fit_result(payload, 6000, fit="document")
    assert size(out) <= 6000
    assert {k: out[k] for k in ("ok", "_index", "_id", "_version", "found")} == {
        k: payload[k] for k in ("ok", "_index", "_id", "_version", "found")}
    source = out["_source"]
    assert source["title"] == "Operations manual" and source["owner"] == {"name": "ops", "team": "sre"}
    assert source["summary"] == payload["_source"]["summary"]  # short fields whole
    assert "_source.body" in out["truncated"]["cut_paths"] and "…[+" in source["body"]
    assert "`source`" in out["truncated"]["hint"]


def test_a_document_nested_in_a_result_is_found_and_fitted() -> None:
    doc = big_document()
    payload = {"ok": True, "result": {k: v for k, v in doc.items() if k != "ok"}}
    out = fit_result(payload, 3000, fit="document")
    assert size(out) <= 3000 and out["result"]["_id"] == "m-1" and out["result"]["found"] is True


def deep(levels: int) -> Any:
    value: Any = {"leaf": "x" * 500}
    for i in range(levels):
        value = {f"level{i}": value, "note": f"n{i}"}
    return value


@pytest.mark.parametrize("name, value, expect", [
    ("deep", deep(90), "summarised"),
    ("wide", {f"key-{i:05d}": i for i in range(5000)}, "keys_omitted"),
    ("long arrays", {"rows": [[j for j in range(300)] for _ in range(100)]}, "items_omitted"),
    ("nested arrays of objects", [{"id": i, "children": [{"id": j, "text": "t" * 80} for j in range(40)]}
                                  for i in range(60)], "items_omitted"),
])
def test_deep_wide_and_nested_json_fit_with_their_structure_said(name: str, value: Any, expect: str) -> None:
    payload = {"ok": True, "result": value}
    out = fit_result(payload, 2000, fit="json")
    text = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    assert len(text) <= 2000 and out["ok"] is True and "tool" not in out
    assert expect in out["truncated"] and out["truncated"]["hint"]
    assert out["result"] not in ("", None, {}, [])  # never an empty shell


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=400))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=30),
                                                             st.dictionaries(st.text(max_size=30), inner, max_size=30)),
                          max_leaves=400)


EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "60"))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(value=json_value, budget=st.integers(min_value=MIN_BUDGET, max_value=6000),
       fit=st.sampled_from(["json", "document"]))
def test_any_json_fits_any_budget_with_a_marker_iff_something_was_cut(value: Any, budget: int, fit: Any) -> None:
    payload = {"ok": True, "result": value}
    if fit == "document":
        payload = {"ok": True, "_index": "i", "_id": "1", "found": True, "_source": {"v": value}}
    out = fit_result(payload, budget, fit=fit)
    text = json.dumps(out, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert len(text) <= budget and json.loads(text) == out
    whole = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
    assert ("truncated" in out) == (whole > budget)
    if whole > budget:
        assert out["truncated"]["hint"] and out["ok"] is True


hit_value = st.recursive(st.one_of(st.integers(), st.text(alphabet=st.characters(), min_size=150, max_size=700),
                                   st.text(max_size=20)),
                         lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                 st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                         max_leaves=12)


@settings(max_examples=EXAMPLES)
@given(hits=st.lists(st.dictionaries(st.text(max_size=8), hit_value, max_size=5), min_size=1, max_size=5),
       cap=st.one_of(st.none(), st.just(0), st.integers(min_value=200, max_value=800)))
def test_a_hits_measured_size_is_its_serialized_size(hits: list[Any], cap: int | None) -> None:
    measured = Measured(hits)
    for i, hit in enumerate(hits):
        if cap == 0:  # a lower bound of every cut at MIN_CUT or more
            assert all(measured.size(i, 0) <= size(cut_strings(hit, c, "", [])) for c in (200, 250, 700, 10**6))
        else:
            expected = size(hit) if cap is None else size(cut_strings(hit, cap, "", []))
            assert measured.size(i, cap) == expected


@pytest.mark.parametrize("name", [n for n in bench.model_cases() if "hits" in n])
def test_every_hits_id_score_and_requested_fields_survive_when_they_fit(name: str) -> None:
    tool, arguments, body = bench.model_cases()[name]
    content = bench.dispatch_canned(tool, arguments, json.dumps(body).encode())
    payload = json.loads(content)
    raw = body["hits"]["hits"]
    shown = payload["hits"]
    assert shown and "_vector" not in content
    assert len(shown) + payload.get("truncated", {}).get("hits_omitted", 0) == len(raw)
    for got, sent in zip(shown, raw, strict=False):
        assert got["_id"] == sent["_id"] and got["_score"] == sent["_score"]
        fields = {k for k in sent["_source"] if not k.endswith(("_vector", "_vector_chunks"))}
        assert set(got["_source"]) == fields
        for field in fields:
            value = got["_source"][field]
            assert value == sent["_source"][field] or (isinstance(value, str) and "…[+" in value)
    if "aggregations" in body:
        assert payload["aggregations"] == body["aggregations"]
    assert len(content) * 10 <= len(json.dumps(body))  # vector-bearing: at least 10 times smaller


def test_every_memorys_id_score_text_and_metadata_survive_in_a_message_no_larger_than_needed() -> None:
    tool, arguments, body = bench.model_cases()["memory recall, 10 memories"]
    raw = json.dumps(body, separators=(",", ":"))
    content = bench.dispatch_canned(tool, arguments, raw.encode())
    payload = json.loads(content)
    assert payload["hits"] == body["hits"] and "truncated" not in payload  # every memory, whole
    # the raw body less its namespace echo, plus the envelope every message has: never larger
    envelope = len('"ok":true,')
    assert len(content) == len(raw) - len(f',"namespace":"{body["namespace"]}"') + envelope
    assert len(content) <= len(json.dumps(bench.without_bookkeeping(body), separators=(",", ":")))
    bare = {**body, "hits": [{**h, "metadata": None} for h in body["hits"]]}
    content = bench.dispatch_canned(tool, arguments, json.dumps(bare, separators=(",", ":")).encode())
    assert json.loads(content)["hits"] == [{k: v for k, v in h.items() if k != "metadata"} for h in bare["hits"]]
    assert len(content) < len(json.dumps(bare, separators=(",", ":")))


def test_a_budget_in_tokens_holds_and_a_budget_needs_one_unit() -> None:
    tool, arguments, body = bench.model_cases()["50 hits, text + vectors, highlights, aggregations"]
    raw = json.dumps(body).encode()
    content = bench.dispatch_canned(tool, arguments, raw, budget=Budget(tokens=1500))
    assert estimate_tokens(content) <= 1500 and len(content) > 3000  # most of the tokens used
    calls: list[int] = []

    def count(text: str) -> int:
        calls.append(len(text))
        return len(text) // 2

    content = bench.dispatch_canned(tool, arguments, raw, budgets={"xerj_search": Budget(tokens=2000, count=count)})
    assert calls and len(content) // 2 <= 2000
    with pytest.raises(ConfigurationError):
        Dispatcher(url="http://xerj.test", budget=Budget(tokens=10))
    with pytest.raises(ValueError):
        Budget(chars=2000, tokens=500)
    assert DispatchCore(load_registry(), None, rerank_fallback=True, rerank_memory_seconds=0,
                        budget=Budget(chars=5000)).budget == 5000


def test_the_token_estimate_reads_numbers_denser_than_prose() -> None:
    prose = ("The checkout outage started after the deploy of the payment template, and engineers "
             "rolled back within twenty minutes because customers could not pay. ") * 20
    vector = json.dumps(bench.embedding(random.Random(1)), separators=(",", ":"))
    assert 3.0 <= len(prose) / estimate_tokens(prose) <= 4.5
    assert 1.8 <= len(vector) / estimate_tokens(vector) <= 2.6
    assert estimate_tokens("") == 0 and estimate_tokens("日本語") == 3


def test_a_payload_without_hits_is_fitted_as_json_by_default() -> None:
    # no tool object on the prepared call: a payload without a list of hits is fitted as JSON
    core = DispatchCore(load_registry(), None, rerank_fallback=True, rerank_memory_seconds=0, budget=2000)
    payload, content = core._shape("anything", {"ok": True, "result": stats_result()}, None)
    assert len(content) <= 2000 and payload["truncated"]["items_omitted"]


def test_a_plain_handler_s_recall_is_read_and_fitted_as_memories() -> None:
    """The prepared call always carries the tool that reads it: a plain handler's is chosen by
    its request's kind, so a recall it builds is fitted as memories (hits with ``id``)."""
    from xerj_tools import HttpRequest
    from xerj_tools._dispatch._core import Prepared
    from xerj_tools._shapes import ToolCall

    def recall(arguments: Any) -> HttpRequest:
        return HttpRequest("POST", "/_memory/n/_recall", {"query": "q"}, kind="memory_recall")

    core = DispatchCore(load_registry(), {"xerj_memory_recall": recall},
                        rerank_fallback=True, rerank_memory_seconds=0, budget=1000)  # fmt: skip
    prepared = core.prepare(ToolCall("c", "xerj_memory_recall", json.dumps({"namespace": "n", "query": "q"})))
    assert isinstance(prepared, Prepared) and prepared.tool.fit == "memories"
    memories = [{"id": f"m{n}", "text": "w" * 400, "score": 1.0 - n / 100} for n in range(8)]
    _, content = core._shape("xerj_memory_recall", {"ok": True, "hits": memories}, prepared)
    shown = json.loads(content)["hits"]
    assert len(content) <= 1000 and shown and all(h["id"].startswith("m") for h in shown)


def test_the_docs_snippet_runs() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "budget.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/budget.md", "exec"), {})


def test_a_long_id_is_never_cut() -> None:
    """The hint tells the model to fetch a cut field by the hit's `_id`: the `_id` (and
    `_index`, and a memory's `id`) stays whole, however long, while the bodies are cut."""
    long_id = "d" * 400
    hits = [{"_index": "i" * 240, "_id": f"{long_id}{n}", "_score": 1.0, "_source": {"body": "w" * 3000}}
            for n in range(3)]
    out = fit_result({"ok": True, "total": 3, "hits": hits}, 2500, fit="hits", next_page=lambda n: {"from": n})
    assert size(out) <= 2500 and out["hits"], out
    assert [h["_id"] for h in out["hits"]] == [h["_id"] for h in hits[: len(out["hits"])]]
    assert all(h["_index"] == "i" * 240 for h in out["hits"])
    assert out["truncated"]["cut_fields"] == ["body"]
    memories = [{"id": f"{long_id}{n}", "text": "t" * 3000, "score": 1.0} for n in range(3)]
    out = fit_result({"ok": True, "hits": memories}, 2500, fit="memories")
    assert size(out) <= 2500 and out["hits"]
    assert [m["id"] for m in out["hits"]] == [m["id"] for m in memories[: len(out["hits"])]]


def test_the_last_resort_cuts_a_hit_short_but_not_its_id() -> None:
    """When not even one hit fits with its strings cut to 200 characters, the first is cut
    shorter still (120, 60, 30): its `_id` and `_index` stay whole even then."""
    hit = {"_index": "docs", "_id": "k" * 400, "_score": 2.0,
           "_source": {f"field{n}": "w" * 300 for n in range(10)}}
    out = fit_result({"ok": True, "total": 1, "hits": [hit]}, 2000, fit="hits", next_page=lambda n: {"from": n})
    assert size(out) <= 2000
    [shown] = out["hits"]
    assert shown["_id"] == "k" * 400 and shown["_index"] == "docs" and shown["_score"] == 2.0
    assert all(len(v) < 200 and "…[+" in v for v in shown["_source"].values())
