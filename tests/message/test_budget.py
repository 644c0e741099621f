"""What the model reads: golden messages for realistic responses, and the budget as a property."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from canned import canned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import ConfigurationError, Dispatcher, ToolResult
from xerj_tools.testing import XerjStandIn

from conftest import Runner, chat_call

GOLDEN = Path(__file__).parents[1] / "golden"
WORDS = ("checkout search outage index latency rollback snapshot alias pool cache region deploy "
         "template canary payment vpn licence tunnel timeline incident monitor report").split()


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def search_response(hits: list[dict[str, Any]], total: int | None = None, **extra: Any) -> dict[str, Any]:
    return {**extra, "took": 3, "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": total if total is not None else len(hits), "relation": "eq"},
                     "max_score": hits[0]["_score"] if hits else None, "hits": hits}}


def doc_hit(rng: random.Random, i: int, body_words: int, vectors: bool = False) -> dict[str, Any]:
    source: dict[str, Any] = {"title": text(rng, 6), "year": 2020 + i % 7, "body": text(rng, body_words)}
    if vectors:
        source["body_vector"] = [round(rng.uniform(-1, 1), 6) for _ in range(384)]
        source["body_vector_chunks"] = [[round(rng.uniform(-1, 1), 6) for _ in range(384)] for _ in range(2)]
    return {"_index": "docs", "_id": f"d-{i}", "_score": round(10 - i * 0.05, 4), "_version": 1,
            "_seq_no": i, "_primary_term": 1, "_source": source}


def cases() -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """name -> (tool, arguments, XERJ response body)."""
    rng = random.Random(7)
    search = {"index": "docs", "query": {"match": {"body": "checkout outage"}}}
    return {
        "large_sources": ("xerj_search", {**search, "size": 10},
                          search_response([doc_hit(rng, i, 450) for i in range(10)], total=87)),
        "many_hits": ("xerj_search", {**search, "size": 120, "from": 40},
                      search_response([doc_hit(rng, i, 30) for i in range(120)], total=500)),
        "vectors_in_source": ("xerj_semantic_search", {"index": "docs", "field": "body", "query": "outage"},
                              search_response([doc_hit(rng, i, 20, vectors=True) for i in range(10)])),
        "deep_aggregations": ("xerj_search", {"index": "tickets", "query": {}, "size": 0, "aggs": {
            "by_service": {"terms": {"field": "service", "size": 200},
                           "aggs": {"by_status": {"terms": {"field": "status", "size": 40}}}}}},
            search_response([], total=9000, aggregations={"by_service": {
                "doc_count_error_upper_bound": 0, "sum_other_doc_count": 0,
                "buckets": [{"key": f"svc-{i}", "doc_count": 300 - i, "by_status": {
                    "doc_count_error_upper_bound": 0, "sum_other_doc_count": 0,
                    "buckets": [{"key": f"s{j}", "doc_count": 40 - j} for j in range(40)]}}
                    for i in range(200)]}})),
        "rerank_applied": ("xerj_search", {**search, "size": 5, "rerank": {"window": 30}},
                           search_response([{**doc_hit(rng, i, 40), "_score": round(0.93 - i * 0.1, 2)}
                                            for i in range(5)], total=41, _rerank={
                               "applied": True, "provider": "jev", "model": "jev-latest", "score_kind": "probability",
                               "window": 30, "judged": 30, "unjudged": 0, "skipped_no_text": 0,
                               "pruned_below_min_score": 0, "dropped_unjudged": 0, "partial_failures": 0,
                               "usage": {"input_tokens": 9000, "output_tokens": 30}, "query": "checkout outage",
                               "took_ms": 212})),
        "rerank_degraded": ("xerj_search", {**search, "size": 3, "rerank": {}},
                            search_response([doc_hit(rng, i, 40) for i in range(3)], _rerank={
                                "applied": False, "reason": "rerank deadline exceeded after 301ms", "provider": "jev",
                                "score_kind": "engine", "query": "checkout outage", "took_ms": 301})),
        "memory_recall": ("xerj_memory_recall", {"namespace": "agent", "query": "checkout", "k": 40},
                          {"namespace": "agent", "hits": [
                              {"id": f"m-{i}", "text": text(rng, 60 + i * 10), "metadata": {"kind": "note", "n": i},
                               "score": round(5 - i * 0.1, 3)} for i in range(40)]}),
    }


def dispatch_canned(tool: str, arguments: dict[str, Any], body: dict[str, Any], **options: Any) -> ToolResult:
    """Dispatch against a canned XERJ answer (httpx2.MockTransport: no socket)."""
    transport = httpx2.MockTransport(canned(body))
    with httpx2.Client(transport=transport) as client, Dispatcher(url="http://xerj.test", client=client, **options) as d:
        return d.run(chat_call(tool, arguments))


@pytest.mark.parametrize("name", list(cases()))
def test_golden_message(name: str) -> None:
    tool, arguments, body = cases()[name]
    result = dispatch_canned(tool, arguments, body)
    assert len(result.content) <= 12_000
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("XERJ_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(result.payload, indent=1, ensure_ascii=False) + "\n")
    assert result.payload == json.loads(golden.read_text())


def test_golden_large_sources_cut_fields_and_keep_every_hit() -> None:
    result = dispatch_canned(*cases()["large_sources"])
    truncated = result.payload["truncated"]
    assert len(result.payload["hits"]) == 10 and "hits_omitted" not in truncated
    assert truncated["fields_cut"] == 10 and truncated["cut_fields"] == ["body"]
    body = result.payload["hits"][0]["_source"]["body"]
    assert body.endswith(" chars]") and "…[+" in body


def test_golden_many_hits_drop_from_the_end_and_say_where_to_resume() -> None:
    result = dispatch_canned(*cases()["many_hits"])
    shown = len(result.payload["hits"])
    truncated = result.payload["truncated"]
    assert 0 < shown < 120 and truncated["hits_omitted"] == 120 - shown
    assert truncated["next"] == {"from": 40 + shown}
    assert [h["_id"] for h in result.payload["hits"]] == [f"d-{i}" for i in range(shown)]


def test_golden_vectors_never_reach_the_model() -> None:
    result = dispatch_canned(*cases()["vectors_in_source"])
    assert "_vector" not in result.content and "truncated" not in result.payload


def test_golden_aggregations_capped_and_counted() -> None:
    result = dispatch_canned(*cases()["deep_aggregations"])
    agg = result.payload["aggregations"]["by_service"]
    assert len(agg["buckets"]) <= 25 and agg["buckets_omitted"] >= 175
    assert len(result.content) <= 12_000


def test_budget_is_configurable_globally_and_per_tool() -> None:
    tool, arguments, body = cases()["many_hits"]
    small = dispatch_canned(tool, arguments, body, budget=3000)
    large = dispatch_canned(tool, arguments, body, budgets={"xerj_search": 40_000})
    assert len(small.content) <= 3000 < len(large.content) <= 40_000
    with pytest.raises(ConfigurationError):
        Dispatcher(url="http://xerj.test", budget=10)


# Sizes against the budgets drawn below (1,000 to 7,500 characters): about 40% of the responses
# drawn are over their budget, as many as with texts and lists twice as long against budgets up
# to 15,000, for a fifth less of the drawing's CPU.
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=1500))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                             st.dictionaries(st.text(max_size=12), inner, max_size=6)),
                          max_leaves=30)
hit = st.fixed_dictionaries({"_index": st.text(max_size=30), "_id": st.text(max_size=60),
                             "_score": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
                             "_source": st.dictionaries(st.text(max_size=20), json_value, max_size=8)},
                            optional={"highlight": st.dictionaries(st.text(max_size=10),
                                                                   st.lists(st.text(max_size=500), max_size=3))})


# 150 examples in three runs of 50 (a test each): drawing these bodies is most of the cost (several
# seconds under coverage), and three shorter tests share out over the workers where one long one
# would hold a worker to the end. The three runs draw independently: the same 150 random cases.
RESPONSE_PARTS = 3


@pytest.mark.parametrize("part", range(RESPONSE_PARTS))
@settings(max_examples=int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "150")) // RESPONSE_PARTS,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hits=st.lists(hit, max_size=30), aggs=st.one_of(st.none(), json_value),
       budget=st.integers(min_value=1000, max_value=7_500))
def test_the_budget_holds_for_any_response(part: int, hits: list[dict[str, Any]], aggs: Any, budget: int) -> None:
    body = search_response(hits)
    if aggs is not None:
        body["aggregations"] = aggs
    result = dispatch_canned("xerj_search", {"index": "docs", "query": {}, "size": 100}, body, budget=budget)
    assert len(result.content) <= budget
    assert result.ok and json.loads(result.content)["ok"] is True


@settings(max_examples=60)
@given(memories=st.lists(st.fixed_dictionaries({"id": st.text(max_size=40), "text": st.text(max_size=4000),
                                                "metadata": json_value, "score": st.floats(0, 10)}), max_size=40))
def test_the_budget_holds_for_memory_recall(memories: list[dict[str, Any]]) -> None:
    result = dispatch_canned("xerj_memory_recall", {"namespace": "n", "query": "q"},
                             {"hits": memories, "namespace": "n"}, budget=2000)
    assert len(result.content) <= 2000


@pytest.fixture
def long_corpus(xerj: XerjStandIn) -> Iterator[XerjStandIn]:
    rng = random.Random(3)
    xerj.add_documents("long", {f"L{i:02d}": {"title": f"doc {i}", "rank": i, "body": text(rng, 120)}
                                for i in range(60)})
    yield xerj


def test_following_truncated_next_reads_the_next_page(make_runner: Any, long_corpus: XerjStandIn) -> None:
    runner: Runner = make_runner(url=long_corpus.url, budget=4000)
    args = {"index": "long", "query": {"match_all": {}}, "size": 30, "sort": [{"rank": "asc"}]}
    seen: list[str] = []
    for _ in range(20):
        payload = runner.payload("xerj_search", args)
        seen += [h["_id"] for h in payload["hits"]]
        nxt = payload.get("truncated", {}).get("next")
        if nxt is None:
            if len(payload["hits"]) < 30:
                break
            nxt = {"from": args.get("from", 0) + len(payload["hits"])}
        args = {**args, **nxt}
    assert seen == [f"L{i:02d}" for i in range(60)]  # every document once, in order, none skipped
    assert len(long_corpus.requests) > 2


@pytest.mark.parametrize("budget", [1000, 1700, 2600, 4000])
def test_paging_through_a_whole_result_finds_every_hit_exactly_once(make_runner: Any, xerj: XerjStandIn,
                                                                  budget: int) -> None:
    # Hits of very different lengths, so that pages end with fields cut and the `truncated`
    # block outgrows the room kept for it: the last fitting step then drops a hit, and `next`
    # must still start at the first hit not shown.
    rng = random.Random(budget)
    docs = {f"P{i:03d}": {"rank": i, "title": text(rng, rng.randint(2, 12)),
                          "body": text(rng, rng.choice([5, 40, 90, 200])),
                          "notes": text(rng, rng.randint(1, 60))} for i in range(90)}
    xerj.add_documents("pages", docs)
    runner: Runner = make_runner(url=xerj.url, budget=budget)
    args: dict[str, Any] = {"index": "pages", "query": {"match_all": {}}, "size": 40, "sort": [{"rank": "asc"}]}
    seen: list[str] = []
    nexts = 0
    for _ in range(200):
        payload = runner.payload("xerj_search", args)
        shown = [h["_id"] for h in payload["hits"]]
        assert shown, payload
        seen += shown
        nxt = payload.get("truncated", {}).get("next")
        if nxt is not None:
            nexts += 1
            assert nxt == {"from": args.get("from", 0) + len(shown)}
        elif len(shown) == args["size"]:
            nxt = {"from": args.get("from", 0) + len(shown)}  # a full page: the model asks for the next
        else:
            break
        args = {**args, **nxt}
    assert seen == sorted(docs)  # every hit, once, in order
    assert nexts > 0


def test_the_last_fitting_step_moves_next_with_the_hits_it_drops() -> None:
    from xerj_tools._message._budget import _guarantee

    hits = [{"_id": str(i), "_source": {"t": "x" * 100}} for i in range(10)]
    payload = {"ok": True, "hits": hits,
               "truncated": {"hits_omitted": 5, "next": {"from": 10}, "hint": "h"}}
    out = _guarantee(payload, 1000, next_page=lambda shown: {"from": shown})
    shown = len(out["hits"])
    assert 0 < shown < 10 and len(json.dumps(out, separators=(",", ":"))) <= 1000
    assert out["truncated"]["next"] == {"from": shown} and out["truncated"]["hits_omitted"] == 15 - shown
