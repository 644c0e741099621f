"""XERJ's wire contract, as the tools rely on it: one suite for the stand-in and a real node.

Every test states a behaviour read in XERJ's source (paths at commit e6e8e6a, 1.0.0-rc.4, or
the newer rerank stage where it says so) and checks it over HTTP. Each runs against two targets:

- ``stand-in``: `xerj_tools.testing.XerjStandIn` on 127.0.0.1, always (this is how CI runs it);
- ``node``: the XERJ node at ``XERJ_CONTRACT_URL`` (API key from ``XERJ_CONTRACT_API_KEY`` if it
  needs one), skipped when ``XERJ_CONTRACT_URL`` is unset. A variable of its own, not ``XERJ_URL``:
  the suite clears the caller's ``XERJ_*`` settings (tests/conftest.py), so that a shell with
  ``XERJ_URL`` exported runs the same suite as any other.

    XERJ_CONTRACT_URL=http://127.0.0.1:9200 pytest -m live -rP

On a node the suite creates one index and a few memory namespaces, all named under a unique
``contract-<uuid>`` prefix, and deletes them when it is done. ``xerj_tools/testing/CONTRACT.md``
maps each behaviour to the XERJ source and to the stand-in code.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from xerj_tools.testing import XerjStandIn

pytestmark = pytest.mark.live

STAND_IN_KEY = "contract-key"
PREFIX = f"contract-{uuid.uuid4().hex[:12]}"
INDEX = f"{PREFIX}-docs"
MAPPINGS = {
    "title": {"type": "text"},
    "body": {"type": "semantic_text"},
    "service": {"type": "keyword"},
    "priority": {"type": "integer"},
    "vec": {"type": "dense_vector", "dims": 3, "similarity": "cosine"},
}
DOCS = {
    "d1": {"title": "Checkout outage postmortem", "body": "Checkout search failed after a bad "
           "template rollout", "service": "checkout", "priority": 1, "vec": [1.0, 0.0, 0.0]},
    "d2": {"title": "VPN outage in the office", "body": "The VPN ran out of licences and "
           "refused tunnels", "service": "network", "priority": 2, "vec": [0.0, 1.0, 0.0]},
    "d3": {"title": "Rotate payment keys", "body": "Rotate the payment keys every quarter",
           "service": "payments", "priority": 3, "vec": [0.9, 0.1, 0.0]},
    "d4": {"title": "Restore a search index", "body": "Restore the search index from the latest "
           "snapshot", "service": "search", "priority": 5, "vec": [0.0, 0.0, 1.0]},
}  # fmt: skip


@dataclass
class Target:
    """Where the contract is checked: the stand-in or a live node, behind one HTTP client."""

    name: str
    client: httpx2.Client
    stand_in: XerjStandIn | None = None
    namespaces: list[str] = field(default_factory=list)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx2.Response:
        # Compact JSON whatever the httpx (0.27 put spaces after separators, 0.28 does not):
        # serde's error positions (line, column) depend on the exact bytes.
        if body is None:
            return self.client.post(path, **kwargs)
        content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.raw("POST", path, content, **kwargs)

    def raw(self, method: str, path: str, content: bytes, **kwargs: Any) -> httpx2.Response:
        headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
        return self.client.request(method, path, content=content, headers=headers, **kwargs)

    def search(self, body: Any, index: str = INDEX) -> httpx2.Response:
        return self.post(f"/{index}/_search", body)

    def namespace(self, tag: str) -> str:
        ns = f"{PREFIX}-{tag}"
        self.namespaces.append(ns)
        return ns

    def create_index(self) -> None:
        if self.stand_in is not None:
            semantic = tuple(f for f, m in MAPPINGS.items() if m["type"] == "semantic_text")
            self.stand_in.add_documents(INDEX, DOCS, semantic_fields=semantic, mappings={"properties": MAPPINGS})
            return
        answer = self.client.put(f"/{INDEX}", json={"mappings": {"properties": MAPPINGS}})
        assert answer.is_success, answer.text
        for doc_id, source in DOCS.items():
            answer = self.client.put(f"/{INDEX}/_doc/{doc_id}", json=source)
            assert answer.is_success, answer.text
        assert self.client.post(f"/{INDEX}/_refresh").is_success

    def clean_up(self) -> None:
        if self.stand_in is not None:
            return  # the stand-in is thrown away whole
        for ns in self.namespaces:
            self.client.delete(f"/_memory/{ns}")
        self.client.delete(f"/{INDEX}")


@pytest.fixture(scope="module", params=["stand-in", "node"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from targets(request.param)


def targets(param: str) -> Iterator[Target]:
    """The target a module's `target` fixture yields (test_contract_listing.py shares it)."""
    if param == "stand-in":
        with XerjStandIn(api_key=STAND_IN_KEY) as stand_in:
            headers = {"Authorization": f"ApiKey {STAND_IN_KEY}"}
            with httpx2.Client(base_url=stand_in.url, headers=headers, timeout=10) as client:
                yield from _prepared(Target("stand-in", client, stand_in))
        return
    url = os.environ.get("XERJ_CONTRACT_URL")
    if not url:
        pytest.skip("XERJ_CONTRACT_URL is not set: the live-node run is skipped "
                    "(XERJ_CONTRACT_URL=http://host:9200)")
    key = os.environ.get("XERJ_CONTRACT_API_KEY", "").strip()
    headers = {"Authorization": f"ApiKey {key}"} if key else {}
    with httpx2.Client(base_url=url.rstrip("/"), headers=headers, timeout=30) as client:
        yield from _prepared(Target("node", client))


def _prepared(target: Target) -> Iterator[Target]:
    target.create_index()
    try:
        yield target
    finally:
        target.clean_up()


def ids(answer: httpx2.Response | dict[str, Any]) -> list[str]:
    """The hits' ids of a search answer, or of its JSON body."""
    body = answer if isinstance(answer, dict) else answer.json()
    return [hit["_id"] for hit in body["hits"]["hits"]]


def ok(answer: httpx2.Response) -> dict[str, Any]:
    """The body of a 200."""
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def error(answer: httpx2.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == status
    return dict(body["error"])


# ── Node, routes and auth ─────────────────────────────────────────────────────


def test_node_identifies_itself(target: Target) -> None:
    """`GET /` is ES-shaped with a fixed 8.13.0 (responses.rs EsInfoResponse); `GET /_nodes`
    carries the real XERJ version as `jvm.vm_version` (es_compat.rs:20303-20307)."""
    info = target.client.get("/").json()
    assert info["cluster_name"] == "xerj" and info["version"]["number"] == "8.13.0"
    if target.stand_in is not None:
        return
    nodes = target.client.get("/_nodes").json()["nodes"]
    jvm = next(iter(nodes.values()))["jvm"]
    assert jvm["vm_name"] == "xerj-rs"
    print(f"XERJ {jvm['vm_version']} at {target.client.base_url}")


def test_health_is_plain_text_without_credentials(target: Target) -> None:
    """`/health/live` is exempt from auth and answers text `live` (auth.rs:23-33; native.rs:605)."""
    answer = httpx2.get(target.client.base_url.join("/health/live"))
    assert answer.status_code == 200 and answer.text == "live"
    assert answer.headers["content-type"].startswith("text/plain")


def test_missing_credentials_are_a_security_exception(target: Target) -> None:
    """401 body of auth.rs:196-222, with root_cause (skipped on a node run without auth)."""
    answer = httpx2.post(target.client.base_url.join(f"/{INDEX}/_search"), json={})
    if answer.status_code == 200:
        pytest.skip("this node runs without authentication")
    reason = "missing or invalid API key in Authorization header"
    cause = {"type": "security_exception", "reason": reason}
    assert answer.status_code == 401
    assert answer.json() == {"error": {"root_cause": [cause], **cause}, "status": 401}


def test_unknown_route_is_axums_empty_404(target: Target) -> None:
    """The ES-compat router has no fallback (router.rs:190-705): axum answers 404, no body."""
    answer = target.client.get(f"/{PREFIX}/no/such/route")
    assert answer.status_code == 404 and answer.content == b""


def test_wrong_method_on_a_route_is_axums_405(target: Target) -> None:
    """`/_memory/{ns}/_recall` takes POST only (router.rs:695): another method is a bare 405."""
    answer = target.client.get(f"/_memory/{PREFIX}-x/_recall")
    assert answer.status_code == 405 and answer.content == b""


# ── xerj_search ───────────────────────────────────────────────────────────────


def test_search_response_shape(target: Target) -> None:
    """The search tail (es_compat.rs:10356-10440): took, timed_out, _shards, hits.total/eq."""
    body = ok(target.search({"query": {"match": {"title": "outage"}}}))
    assert {"took", "timed_out", "_shards", "hits"} <= set(body)
    assert body["hits"]["total"] == {"value": 2, "relation": "eq"}
    assert sorted(ids(body)) == ["d1", "d2"]
    hit = body["hits"]["hits"][0]
    assert {"_index", "_id", "_score", "_source"} <= set(hit) and hit["_index"] == INDEX


def test_unknown_top_level_key_is_a_parsing_exception(target: Target) -> None:
    """The allow-list scan (es_compat.rs:2284-2318, 2465-2513): ES's message with line/col."""
    answer = target.raw("POST", f"/{INDEX}/_search", b'{"query":{},"bogus":{"a":1}}')
    err = error(answer, 400)
    reason = "Unknown key for a START_OBJECT in [bogus]."
    assert (err["type"], err["reason"], err["line"], err["col"]) == (
        "parsing_exception",
        reason,
        1,
        21,
    )
    assert err["root_cause"][0]["reason"] == reason


def test_size_null_is_serdes_parse_exception(target: Target) -> None:
    """`size` is a `usize` (es_compat.rs:2137-2141): null is a serde error, no root_cause."""
    err = error(target.raw("POST", f"/{INDEX}/_search", b'{"size":null}'), 400)
    assert err["type"] == "parse_exception" and "root_cause" not in err
    assert err["reason"] == (
        "malformed JSON in request body: invalid type: null, expected usize at line 1 column 12"
    )


def test_result_window_is_checked_by_the_parser(target: Target) -> None:
    """parser.rs:151-158, rendered with the parser's prefix (xerj-query error.rs:9)."""
    err = error(target.search({"size": 10_001}), 400)
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == "parse error: from + size must be <= 10000 (got 10001)"


def test_missing_index_is_a_decorated_404(target: Target) -> None:
    """error.rs:181-232: `no such index [x]` with resource.* and index_uuid `_na_`."""
    missing = f"{PREFIX}-missing"
    err = error(target.search({}, index=missing), 404)
    assert err["type"] == "index_not_found_exception"
    assert err["reason"] == f"no such index [{missing}]"
    assert (err["resource.id"], err["index_uuid"], err["index"]) == (missing, "_na_", missing)


def test_a_wildcard_selector_skips_missing_names(target: Target) -> None:
    """With a wildcard in the selector `allow_no_indices` defaults true and a missing concrete
    name is skipped, not a 404 (es_compat.rs:7366-7387)."""
    answer = target.search({"query": {"ids": {"values": ["d1"]}}},
                           index=f"{INDEX},{PREFIX}-missing,{PREFIX}-none-*")  # fmt: skip
    assert ids(ok(answer)) == ["d1"]


def test_track_total_hits_false_omits_the_total(target: Target) -> None:
    """es_compat.rs:10356-10430: `false` drops `hits.total`; it is not an approximation."""
    hits = target.search({"query": {}, "track_total_hits": False}).json()["hits"]
    assert "total" not in hits and len(hits["hits"]) == 4


def test_ids_query(target: Target) -> None:
    """parser.rs:1021-1055: `ids.values`; the score is the boost, 1.0 by default."""
    body = ok(target.search({"query": {"ids": {"values": ["d3", "d1", "nope"]}}}))
    assert sorted(ids(body)) == ["d1", "d3"]
    assert {hit["_score"] for hit in body["hits"]["hits"]} == {1.0}


def test_unknown_query_type_is_named(target: Target) -> None:
    """ParseError::UnknownQueryType (xerj-query error.rs:45-46) behind the parser's prefix."""
    err = error(target.search({"query": {"bogus": {}}}), 400)
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == (
        "parse error: unknown query type `bogus` — see https://xerj.io/docs/query-dsl for "
        "supported types"
    )


def test_stats_and_histogram_aggregations(target: Target) -> None:
    """aggs.rs:2090, 4852-4894 (stats) and 2096, 5590-5793 (histogram, gaps filled)."""
    aggs = {"s": {"stats": {"field": "priority"}},
            "h": {"histogram": {"field": "priority", "interval": 2}}}  # fmt: skip
    out = ok(target.search({"size": 0, "aggs": aggs}))["aggregations"]
    assert out["s"] == {"count": 4, "min": 1.0, "max": 5.0, "avg": 2.75, "sum": 11.0}
    assert out["h"]["buckets"] == [
        {"key": 0, "doc_count": 1},
        {"key": 2, "doc_count": 2},
        {"key": 4, "doc_count": 1},
    ]


def test_unknown_aggregation_type_is_reported_in_its_slot(target: Target) -> None:
    """aggs.rs:2172: an unsupported type is no 400; its slot carries the error, under 200."""
    aggs = {"x": {"bogus": {"field": "priority"}}}
    slot = ok(target.search({"size": 0, "aggs": aggs}))["aggregations"]["x"]
    assert slot == {"error": "unsupported aggregation type 'bogus'"}


# ── xerj_vector_search and xerj_semantic_search ───────────────────────────────


def test_knn_total_is_min_of_k_and_size(target: Target) -> None:
    """A pure kNN search returns and counts min(k, size) (es_compat.rs:5829-5848, 7960-7968);
    `_score` is (1 + cos) / 2 (index.rs:17212-17226)."""
    knn = {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "k": 3}
    body = target.search({"knn": knn, "size": 2}).json()
    assert body["hits"]["total"] == {"value": 2, "relation": "eq"}
    assert ids(body) == ["d1", "d3"]
    assert body["hits"]["hits"][0]["_score"] == pytest.approx(1.0)


def test_knn_k_defaults_to_num_candidates(target: Target) -> None:
    """No `k`: `num_candidates` stands in for it (parser.rs:2258-2267; es_compat.rs:5792-5804)."""
    knn = {"field": "vec", "query_vector": [1.0, 0.0, 0.0], "num_candidates": 2}
    body = target.search({"knn": knn, "size": 10}).json()
    assert body["hits"]["total"]["value"] == 2 and ids(body) == ["d1", "d3"]


def test_semantic_query_on_a_semantic_text_field(target: Target) -> None:
    """parser.rs:2324-2348: `k` caps the hits; `size` slices them (index.rs:4940-5035)."""
    query = {"semantic": {"field": "body", "query": "restore search index snapshot", "k": 2}}
    body = target.search({"query": query, "size": 10}).json()
    assert body["hits"]["total"]["value"] == 2 and ids(body)[0] == "d4"
    assert all(0.0 <= hit["_score"] <= 1.0 for hit in body["hits"]["hits"])


def test_semantic_query_on_a_plain_field_is_refused_without_prefix(target: Target) -> None:
    """The engine raises it (index.rs:5013-5023), so no "parse error: " prefix; only a node
    without an active embedding backend does (index.rs:4991-5012 embeds with one)."""
    response = target.search({"query": {"semantic": {"field": "title", "query": "x"}}})
    if target.stand_in is None and response.status_code == 200:
        pytest.skip("this node has an active embedding backend, which embeds any field")
    err = error(response, 400)
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"].startswith(
        "semantic query requires either a `semantic_text` field (auto-embedded with the "
        "built-in lexical embedder) or an active embedding backend"
    )


# ── xerj_hybrid_search ────────────────────────────────────────────────────────


def test_hybrid_rrf_fuses_and_counts_the_union(target: Target) -> None:
    """RRF k=60 (parser.rs:2350-2410; index.rs:5326-5420, 17490-17530): union total, eq."""
    queries = [{"query": {"match": {"title": "outage"}}},
               {"query": {"ids": {"values": ["d1", "d4"]}}}]  # fmt: skip
    body = target.search({"query": {"hybrid": {"queries": queries, "fusion": "rrf"}}}).json()
    assert body["hits"]["total"] == {"value": 3, "relation": "eq"}
    assert ids(body)[0] == "d1"  # first in one arm, first or second (a tie) in the other
    assert 1 / 61 + 1 / 62 - 1e-6 <= body["hits"]["hits"][0]["_score"] <= 2 / 61 + 1e-6


def test_hybrid_learned_fusion_is_refused(target: Target) -> None:
    """parser.rs:2392-2398."""
    hybrid = {"queries": [{"query": {"match_all": {}}}], "fusion": "learned"}
    err = error(target.search({"query": {"hybrid": hybrid}}), 400)
    reason = "parse error: hybrid fusion learned is not yet supported; use rrf or linear"
    assert err["reason"] == reason


def test_hybrid_with_aggs_is_the_engines_error(target: Target) -> None:
    """index.rs:5337-5343: raised by the engine, so without the parser's prefix."""
    hybrid = {"queries": [{"query": {"match_all": {}}}]}
    aggs = {"s": {"stats": {"field": "priority"}}}
    err = error(target.search({"query": {"hybrid": hybrid}, "aggs": aggs}), 400)
    assert err["type"] == "search_phase_execution_exception"
    assert err["reason"] == (
        "aggregations are not supported with hybrid/fusion queries; "
        "run the aggregation as a separate non-hybrid search"
    )


# ── rerank: two generations ───────────────────────────────────────────────────


def test_an_unknown_rerank_field_is_refused_by_either_generation(target: Target) -> None:
    """1.0.0-rc.4 refuses the `rerank` key itself (es_compat.rs:2284-2318, 2497-2513); a newer
    node parses the block and refuses the field (xerj-rerank lib.rs `RerankConfig::from_json`)."""
    answer = target.search({"query": {"match": {"title": "outage"}}, "rerank": {"bogus": 1}})
    err = error(answer, 400)
    if err["type"] == "parsing_exception":
        assert err["reason"] == "Unknown key for a START_OBJECT in [rerank]."
    else:
        assert err["type"] == "illegal_argument_exception"
        assert err["reason"].startswith("invalid configuration: unknown `rerank` field `bogus`")


# ── memory ────────────────────────────────────────────────────────────────────


def test_store_and_recall_shapes(target: Target) -> None:
    """Store 201 (memory_api.rs:374-381); recall hits id/text/metadata/score (575-587)."""
    ns = target.namespace("shapes")
    stored = target.post(f"/_memory/{ns}", {"text": "The user prefers metric units",
                                              "metadata": {"kind": "preference"}})  # fmt: skip
    assert stored.status_code == 201, stored.text
    memory_id = stored.json()["id"]
    assert stored.json() == {"id": memory_id, "namespace": ns, "created": True}
    recalled = target.post(f"/_memory/{ns}/_recall", {"query": "metric units"})
    assert recalled.status_code == 200, recalled.text
    body = recalled.json()
    assert body["namespace"] == ns and len(body["hits"]) == 1
    hit = body["hits"][0]
    assert (hit["id"], hit["text"], hit["metadata"]) == (
        memory_id,
        "The user prefers metric units",
        {"kind": "preference"},
    )
    assert hit["score"] > 0


def test_store_without_text_is_serdes_parse_exception(target: Target) -> None:
    """`text` is a required String (memory_api.rs:221-224): serde refuses the body before the
    handler runs (extract.rs:80-103): parse_exception, not memory_error."""
    ns = target.namespace("no-text")
    err = error(target.post(f"/_memory/{ns}", {"metadata": {}}), 400)
    assert err["type"] == "parse_exception" and "root_cause" not in err
    assert err["reason"] == (
        "malformed JSON in request body: missing field `text` at line 1 column 15"
    )


def test_store_with_empty_text_and_no_vector(target: Target) -> None:
    """memory_api.rs:311-316."""
    err = error(target.post(f"/_memory/{target.namespace('empty')}", {"text": ""}), 400)
    reason = "a memory must have non-empty `text` or a `vector`"
    assert err == {"type": "memory_error", "reason": reason}


@pytest.mark.parametrize(
    ("namespace", "reason"),
    [
        ("Upper", "namespace must start with a lowercase letter or digit"),
        ("a%20b", "namespace contains illegal character ' ' (allowed: a-z 0-9 _ - .)"),
        ("a..b", "namespace must not contain '..'"),
        ("a" * 201, "namespace too long (max 200 chars)"),
    ],
)
def test_namespace_rule(target: Target, namespace: str, reason: str) -> None:
    """`validate_namespace`, in its order (memory_api.rs:101-124)."""
    err = error(target.post(f"/_memory/{namespace}", {"text": "x"}), 400)
    assert err == {"type": "memory_error", "reason": reason}


def test_recall_in_an_unknown_namespace_is_empty(target: Target) -> None:
    """memory_api.rs:493-495."""
    ns = target.namespace("never-stored")
    answer = target.post(f"/_memory/{ns}/_recall", {"query": "anything"})
    assert answer.status_code == 200 and answer.json() == {"hits": [], "namespace": ns}


def test_recall_refuses_vector_and_query_together(target: Target) -> None:
    """memory_api.rs:453-459."""
    ns = target.namespace("both")
    err = error(target.post(f"/_memory/{ns}/_recall", {"query": "x", "vector": [1.0]}), 400)
    reason = "supply exactly one of `vector` or `query`, not both"
    assert err == {"type": "memory_error", "reason": reason}


def test_recall_refuses_an_unknown_field(target: Target) -> None:
    """`deny_unknown_fields` (memory_api.rs:396): serde's parse_exception, not memory_error."""
    ns = target.namespace("unknown-field")
    err = error(target.raw("POST", f"/_memory/{ns}/_recall", b'{"query":"x","kk":1}'), 400)
    assert err["type"] == "parse_exception"
    assert err["reason"] == (
        "malformed JSON in request body: unknown field `kk`, expected one of `query`, `vector`, "
        "`semantic`, `k`, `filter`, `recency_weight` at line 1 column 17"
    )


def test_dedup_returns_the_existing_memory(target: Target) -> None:
    """memory_api.rs:323-344: the nearest neighbour's `_score` (1 + cos) / 2 ≥ threshold."""
    ns = target.namespace("dedup")
    first = target.post(f"/_memory/{ns}", {"text": "The deploy window is Tuesday"}).json()
    again = target.post(f"/_memory/{ns}", {"text": "The deploy window is Tuesday", "dedup": True})
    assert again.status_code == 200, again.text
    body = again.json()
    assert (body["id"], body["created"], body["deduplicated"]) == (first["id"], False, True)
    assert body["score"] >= 0.95


def test_recency_weight_reorders_by_stored_at(target: Target) -> None:
    """`blend_recency` (memory_api.rs:606-652): weight 1 is pure recency; `score` stays the
    relevance score. `stored_at` is the node's clock in milliseconds (memory_api.rs:350), so
    two stores can share one: each memory is stored again, same id (an overwrite,
    memory_api.rs:347-382), until its stamp is later than the one before."""
    ns = target.namespace("recency")
    made = [f"m{i}" for i in range(3)]
    stamps: list[int] = []
    for memory_id, text in zip(made, ("alpha beta gamma", "alpha beta", "alpha"), strict=True):
        for _ in range(10_000):  # a new millisecond comes long before this runs out
            body = {"id": memory_id, "text": text}
            assert target.post(f"/_memory/{ns}", body).status_code == 201
            stamp = stored_at(target, ns, memory_id)
            if not stamps or stamp > stamps[-1]:
                break
        stamps.append(stamp)
    assert stamps == sorted(set(stamps))
    plain = target.post(f"/_memory/{ns}/_recall", {"query": "alpha beta gamma"}).json()["hits"]
    assert plain[0]["id"] == made[0]
    recent = target.post(
        f"/_memory/{ns}/_recall", {"query": "alpha beta gamma", "recency_weight": 1.0}
    ).json()["hits"]
    assert [h["id"] for h in recent] == made[::-1]
    scores = {h["id"]: h["score"] for h in plain}
    assert all(h["score"] == scores[h["id"]] for h in recent)


def stored_at(target: Target, ns: str, memory_id: str) -> int:
    """A memory's `stored_at`, read from its backing index `.xerj-memory-<ns>` (memory_api.rs:72,
    346-356): the memory API itself never shows it."""
    answer = target.search({"query": {"ids": {"values": [memory_id]}}}, index=f".xerj-memory-{ns}")
    (hit,) = ok(answer)["hits"]["hits"]
    return int(hit["_source"]["stored_at"])


def test_recency_weight_with_k_over_2500_fails_in_the_engine(target: Target) -> None:
    """Recall fetches max(4k, 50) (memory_api.rs:483-489) and the search refuses
    from + size > 10000 (parser.rs:151-158); the recall wraps it (memory_api.rs:565)."""
    ns = target.namespace("big-k")
    assert target.post(f"/_memory/{ns}", {"text": "alpha"}).status_code == 201
    answer = target.post(f"/_memory/{ns}/_recall", {"query": "alpha", "k": 2501,
                                                    "recency_weight": 0.5})  # fmt: skip
    err = error(answer, 400)
    assert err["type"] == "memory_error" and err["reason"].startswith("recall failed: {")
    assert "from + size must be <= 10000 (got 10004)" in err["reason"]


def test_vector_recall_with_a_filter(target: Target) -> None:
    """kNN over `vector` under a metadata pre-filter (memory_api.rs:507-524)."""
    ns = target.namespace("vectors")
    a = target.post(f"/_memory/{ns}", {"text": "east", "vector": [1.0, 0.0],
                                       "metadata": {"side": "a"}}).json()["id"]  # fmt: skip
    b = target.post(f"/_memory/{ns}", {"text": "north", "vector": [0.0, 1.0],
                                       "metadata": {"side": "b"}}).json()["id"]  # fmt: skip
    near = target.post(f"/_memory/{ns}/_recall", {"vector": [1.0, 0.1], "k": 1}).json()["hits"]
    assert [h["id"] for h in near] == [a] and 0.9 < near[0]["score"] <= 1.0
    body = {"vector": [1.0, 0.1], "k": 1, "filter": {"term": {"metadata.side": "b"}}}
    filtered = target.post(f"/_memory/{ns}/_recall", body).json()["hits"]
    assert [h["id"] for h in filtered] == [b]


# ── xerj_get_document ─────────────────────────────────────────────────────────


def dispatcher_for(target: Target) -> Any:
    from xerj_tools import Dispatcher

    key = STAND_IN_KEY if target.stand_in is not None else os.environ.get("XERJ_CONTRACT_API_KEY", "").strip() or None
    return Dispatcher(url=str(target.client.base_url).rstrip("/"), api_key=key)


def ask(dispatcher: Any, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    """What the model reads of one call of the tool `name`."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = dispatcher.dispatch({"id": "c1", "type": "function", "function": {"name": name, "arguments": raw}})
    return dict(json.loads(message["content"]))


def get_document(target: Target, arguments: str) -> dict[str, Any]:
    with dispatcher_for(target) as dispatcher:
        return ask(dispatcher, "xerj_get_document", arguments)


def test_get_document_found_missing_and_no_index(target: Target) -> None:
    """`GET /{index}/_doc/{id}` (es_compat.rs:1972-2008; responses.rs:177-222): 200 with the
    metadata and `_source`, 404 with exactly `{_index, _id, found: false}`, and the decorated
    404 for a missing index (api error.rs:181-232)."""
    found = target.client.get(f"/{INDEX}/_doc/d1")
    assert found.status_code == 200, found.text
    body = found.json()
    assert {"_index", "_id", "_version", "_seq_no", "_primary_term", "found", "_source"} <= set(
        body
    )
    assert body["found"] is True and body["_id"] == "d1" and body["_index"] == INDEX
    missing = target.client.get(f"/{INDEX}/_doc/nope")
    assert missing.status_code == 404 and missing.json() == {
        "_index": INDEX,
        "_id": "nope",
        "found": False,
    }
    assert (
        error(target.client.get(f"/{PREFIX}-none/_doc/d1"), 404)["type"]
        == "index_not_found_exception"
    )


def test_get_document_tool(target: Target) -> None:
    """The tool end to end: a found document, a miss, and a numeric id repaired to its string."""
    payload = get_document(target, json.dumps({"index": INDEX, "id": "d2"}))
    assert (
        payload["ok"]
        and payload["found"] is True
        and payload["_source"]["title"] == DOCS["d2"]["title"]
    )
    payload = get_document(target, json.dumps({"index": INDEX, "id": "nope"}))
    assert payload["ok"] and payload["found"] is False
    payload = get_document(target, f'{{"index": "{INDEX}", "id": 4}}')
    assert payload["ok"] and payload["found"] is False and payload["repairs"] == ['$.id: 4 → "4"']


def test_get_document_through_an_alias_over_two_indices(target: Target) -> None:
    """XERJ's GET on an alias reads its first index only (engine.rs:956-967); the tool asks the
    alias's other indices (`_resolve/index`, es_compat.rs:15816-15863) and finds the document."""
    if target.stand_in is not None:
        pytest.skip("the stand-in has no aliases")
    second, alias = f"{PREFIX}-docs2", f"{PREFIX}-alias"
    assert target.client.put(
        f"/{second}/_doc/late", json={"title": "in the second index"}
    ).is_success
    try:
        actions = [
            {"add": {"index": INDEX, "alias": alias}},
            {"add": {"index": second, "alias": alias}},
        ]
        assert target.post("/_aliases", {"actions": actions}).is_success
        assert target.client.get(f"/{alias}/_doc/late").status_code == 404  # the first index only
        payload = get_document(target, json.dumps({"index": alias, "id": "late"}))
        assert payload["found"] is True and payload["_index"] == second
        assert get_document(target, json.dumps({"index": alias, "id": "d1"}))["found"] is True
    finally:
        target.client.delete(f"/{second}")


# ── Discovery: `_cat/indices/{pattern}` and `_mapping` (xerj_list_indices, xerj_describe_index) ──


def test_discovery_cat_indices_narrowed_by_a_pattern(target: Target) -> None:
    """es_compat.rs:403-488: the `_cat/indices` text rows, narrowed; column 3 the name, 7 the count."""
    answer = target.client.get(f"/_cat/indices/{PREFIX}-*")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert [(row.split()[2], row.split()[6]) for row in answer.text.splitlines()] == [(INDEX, "4")]


def test_discovery_cat_indices_of_a_missing_name_is_a_404_and_of_no_match_empty(target: Target) -> None:
    """es_compat.rs:418-427: a concrete name matching nothing is index_not_found, a wildcard an empty 200."""
    assert error(target.client.get(f"/_cat/indices/{PREFIX}-missing"), 404)["type"] == "index_not_found_exception"
    answer = target.client.get(f"/_cat/indices/{PREFIX}-none-*")
    assert (answer.status_code, answer.text) == (200, "")


def test_discovery_mapping_as_the_index_was_created(target: Target) -> None:
    """es_compat.rs:1458-1497: the stored mapping, under the index's name."""
    properties = ok(target.client.get(f"/{INDEX}/_mapping"))[INDEX]["mappings"]["properties"]
    assert (properties["vec"]["type"], properties["vec"]["dims"]) == ("dense_vector", 3)
    assert properties["body"]["type"] == "semantic_text" and properties["service"]["type"] == "keyword"


def test_discovery_mapping_of_a_missing_name_is_empty_and_of_no_match_a_404(target: Target) -> None:
    """es_compat.rs:1462-1473, 14131-14162: an exact name is kept then skipped (200 `{}`); a
    wildcard that selects nothing is index_not_found."""
    answer = target.client.get(f"/{PREFIX}-missing/_mapping")
    assert (answer.status_code, answer.json()) == (200, {})
    assert error(target.client.get(f"/{PREFIX}-none-*/_mapping"), 404)["type"] == "index_not_found_exception"


def test_discovery_tools_over_the_dispatcher(target: Target) -> None:
    """The two tools end to end: what the model reads of this index."""
    with dispatcher_for(target) as dispatcher:
        listing = ask(dispatcher, "xerj_list_indices", {"pattern": f"{PREFIX}-*"})
        assert listing["indices"] == [{"name": INDEX, "docs": 4}], listing
        described = ask(dispatcher, "xerj_describe_index", {"index": INDEX})
        assert described["search_with"] == {"xerj_semantic_search": ["body"], "xerj_vector_search": {"vec": 3}}
        assert described["fields"]["keyword"] == ["service"] and "title" in described["fields"]["text"]
        # the described vector field is left out of what a search reads, though it has 3 numbers
        hit = ask(dispatcher, "xerj_search", {"index": INDEX, "query": {"ids": {"values": ["d1"]}}})["hits"][0]
        assert hit["_source"]["vec"] == "<3 numbers omitted>"
