"""Benchmarks of the budget: what fitting a result costs, and what the model reads.

Run:  .venv/bin/python benchmarks/fitting.py [--quick]   (prints the table; benchmarks/run.py
      includes these cases in its own report through `results`).

Cost cases are ratios against a baseline measured in the same process, interleaved round by
round (as benchmarks/run.py does): fitting 10 and 50 hits against one raw ``httpx`` post to the
benchmark's loopback server, and shaping a 1,000-hit response against ``json.loads`` of its body
(time, and peak memory by tracemalloc). Size cases compare the tool message with the raw XERJ
body, in characters and in tokens: with tiktoken's o200k_base when tiktoken is installed and its
encoding is already in its local cache (nothing is downloaded: a network read is refused), else
with the dispatcher's own estimate (`xerj_tools._message._tokens.estimate_tokens`), said as such.
"""

from __future__ import annotations

import json
import random
import statistics
import struct
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from xerj_tools import Dispatcher, load_registry  # noqa: E402
from xerj_tools._dispatch._core import DispatchCore, Prepared  # noqa: E402
from xerj_tools._http._models import Reply  # noqa: E402
from xerj_tools._shapes import ToolCall  # noqa: E402

WORDS = ("checkout search outage index latency rollback snapshot alias pool cache region deploy "
         "template canary payment vpn licence tunnel timeline incident monitor report the a of "
         "and to in was after before during because customers engineers").split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def f32(rng: random.Random) -> float:
    # XERJ computes embeddings in f32 and writes them as f64 (index.rs:5276, at e6e8e6a), so
    # each number prints with the digits of the widened float, e.g. 0.05123456567525864.
    return float(struct.unpack("f", struct.pack("f", rng.uniform(-0.2, 0.2)))[0])


def embedding(rng: random.Random) -> list[float]:
    return [f32(rng) for _ in range(384)]  # DEFAULT_DIMS: engine/crates/xerj-ai/src/local.rs:29


def envelope(hits: list[dict[str, Any]], total: int, **extra: Any) -> dict[str, Any]:
    return {"took": 7, "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": total, "relation": "eq"},
                     "max_score": hits[0]["_score"] if hits else None, "hits": hits}, **extra}


def chunk_count(text: str, size: int = 512, overlap: int = 64) -> int:
    """How many passages XERJ embeds `text` as: its chunker (xerj-ai chunker.rs:72-143, with
    the sentence and word breaks of chunker.rs:165-190) at the auto-embed sizes, 512 characters
    with 64 of overlap (xerj-engine index.rs:24748-24755)."""
    n = len(text)
    if n <= size:
        return 1
    count, start = 0, 0
    while start < n:
        end = min(start + size, n)
        if end >= n:
            return count + 1
        window = range(end - 1, max(end - size // 4, 0) - 1, -1)
        cut = next((i + 2 for i in window if i + 1 < n and text[i] in ".!?" and text[i + 1] in " \n"), None)
        cut = cut or next((i + 1 for i in window if text[i].isspace()), None) or end
        count += bool(text[start:cut].strip())
        start = max(cut - overlap, start + 1)
    return count


def vector_hit(rng: random.Random, i: int, body_words: int = 120) -> dict[str, Any]:
    """A hit as XERJ returns it from a semantic_text field: the text, its pooled embedding
    (`body_vector`) and, for a text longer than one chunk, one embedding per chunk
    (`body_vector_chunks`, absent for a one-chunk text): index.rs:5077, 5277-5289."""
    body = words(rng, body_words)
    source: dict[str, Any] = {"title": words(rng, 7), "service": rng.choice(["checkout", "search", "vpn"]),
                              "year": 2020 + i % 6, "body": body, "body_vector": embedding(rng)}
    chunks = chunk_count(body)
    if chunks > 1:
        source["body_vector_chunks"] = [embedding(rng) for _ in range(chunks)]
    return {"_index": "postmortems", "_id": f"pm-{i:04d}", "_score": round(12.5 - i * 0.11, 6),
            "_version": 3, "_seq_no": 100 + i, "_primary_term": 1, "_source": source,
            "highlight": {"body": [f"…the <em>checkout</em> {words(rng, 12)}",
                                   f"…<em>outage</em> {words(rng, 10)}"]}}


def aggregations() -> dict[str, Any]:
    return {"by_service": {"doc_count_error_upper_bound": 0, "sum_other_doc_count": 0,
                           "buckets": [{"key": s, "doc_count": 40 - 7 * n}
                                       for n, s in enumerate(["checkout", "search", "vpn", "cache"])]},
            "per_year": {"buckets": [{"key_as_string": str(2020 + y), "key": 1577836800000 + y * 31536000000,
                                      "doc_count": 10 + y} for y in range(6)]}}


def model_cases() -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """name -> (tool, arguments, raw XERJ body)."""
    rng = random.Random(14)
    search = {"index": "postmortems", "query": {"match": {"body": "checkout outage"}},
              "aggs": {"by_service": {"terms": {"field": "service"}},
                       "per_year": {"date_histogram": {"field": "date", "calendar_interval": "year"}}}}
    hybrid_hits = []
    for i in range(10):
        h = vector_hit(rng, i)
        h.pop("highlight")
        hybrid_hits.append(h)
    return {
        "10 hits, text + vectors, highlights, aggregations": (
            "xerj_search", {**search, "size": 10},
            envelope([vector_hit(rng, i) for i in range(10)], 214, aggregations=aggregations())),
        "50 hits, text + vectors, highlights, aggregations": (
            "xerj_search", {**search, "size": 50},
            envelope([vector_hit(rng, i) for i in range(50)], 214, aggregations=aggregations())),
        "semantic search, 10 hits with vectors": (
            "xerj_semantic_search", {"index": "postmortems", "field": "body", "query": "checkout outage"},
            envelope([{k: v for k, v in vector_hit(rng, i).items() if k != "highlight"} for i in range(10)], 10)),
        "hybrid search, 10 hits with vectors": (
            "xerj_hybrid_search", {"index": "postmortems", "size": 10, "queries": [
                {"query": {"match": {"body": "checkout outage"}}},
                {"query": {"semantic": {"field": "body", "query": "checkout outage"}}}]},
            envelope(hybrid_hits, 37)),
        # XERJ's recall answer: {"hits": [...], "namespace": ...} (engine/crates/xerj-api/src/
        # memory_api.rs:572), each hit id, text, metadata, score (memory_api.rs:576-587)
        "memory recall, 10 memories": (
            "xerj_memory_recall", {"namespace": "agent", "query": "checkout outage", "k": 10},
            {"hits": [{"id": f"m-{i}", "text": words(rng, 40 + 5 * i),
                       "metadata": {"kind": "note", "session": f"s-{i % 3}"}, "score": round(4.2 - i * 0.3, 6)}
                      for i in range(10)], "namespace": "agent"}),
    }


_BOOKKEEPING = ("took", "timed_out", "_shards", "_version", "_seq_no", "_primary_term", "max_score")


def without_bookkeeping(value: Any) -> Any:
    """The raw body less what no reader needs: timings, shard counts, versions, max_score."""
    if isinstance(value, dict):
        return {k: without_bookkeeping(v) for k, v in value.items() if k not in _BOOKKEEPING}
    if isinstance(value, list):
        return [without_bookkeeping(v) for v in value]
    return value


def token_counter() -> tuple[Callable[[str], int], str]:
    """tiktoken's o200k_base when it loads from the local cache alone; else the estimate."""
    try:
        import tiktoken
        import tiktoken.load

        def refuse(blobpath: str) -> bytes:
            raise OSError(f"not downloading {blobpath}: offline benchmark")

        tiktoken.load.read_file = refuse  # only the local cache may be read
        encoding = tiktoken.get_encoding("o200k_base")
        return (lambda text: len(encoding.encode(text, disallowed_special=()))), "tiktoken o200k_base"
    except Exception:
        from xerj_tools._message._tokens import estimate_tokens

        return estimate_tokens, "the estimate (tiktoken's encodings are not available offline here)"


# XERJ's `_resolve/index/*` answer (es_compat.rs:15816-15863) naming the index these cases search
LISTING = json.dumps({"indices": [{"name": "postmortems", "attributes": ["open"]}], "aliases": [],
                      "data_streams": []}).encode()


def dispatch_canned(tool: str, arguments: dict[str, Any], body: bytes, **options: Any) -> str:
    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/_resolve/index/*":  # the listing the names are resolved against
            return httpx2.Response(200, content=LISTING)
        return httpx2.Response(200, content=body)

    transport = httpx2.MockTransport(answer)
    with httpx2.Client(transport=transport) as client, \
            Dispatcher(url="http://xerj.test", client=client, **options) as dispatcher:
        call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
        return dispatcher.run(call).content


def bench_model_reads() -> list[dict[str, Any]]:
    count, how = token_counter()
    out = []
    for name, (tool, arguments, data) in model_cases().items():
        raw = json.dumps(data, separators=(",", ":"))
        useful = json.dumps(without_bookkeeping(data), separators=(",", ":"))
        content = dispatch_canned(tool, arguments, raw.encode())
        assert content.startswith('{"ok":true'), content[:300]
        vectors = "_vector" in raw
        targets = {"≤ raw body minus bookkeeping": len(content) <= len(useful)}
        if vectors:
            targets["≥ 10× smaller than raw"] = len(raw) >= 10 * len(content)
        tokens = {"message": count(content), "raw": count(raw), "raw less bookkeeping": count(useful)}
        out.append({"case": f"what the model reads: {name} (raw less bookkeeping {len(useful):,} chars; "
                            f"tokens: message {tokens['message']:,}, raw {tokens['raw']:,}, raw less "
                            f"bookkeeping {tokens['raw less bookkeeping']:,}, by {how})",
                    "unit": "characters", "ours": len(content), "baseline": len(raw), "ratio": len(raw) / len(content),
                    "tokens": {**tokens, "counted by": how}, "raw_less_bookkeeping": len(useful),
                    "targets": targets})
    return out


# ---------------------------------------------------------------- cost

def _core_and_prepared(arguments: dict[str, Any], tool: str = "xerj_search") -> tuple[DispatchCore, Prepared]:
    core = DispatchCore(load_registry(), None, rerank_fallback=True, rerank_memory_seconds=0)
    prepared = core.prepare(ToolCall("c", tool, json.dumps(arguments)))
    assert isinstance(prepared, Prepared)
    return core, prepared


def prose_hits(n: int, body_words: int = 150) -> bytes:
    rng = random.Random(n)
    hits = [{"_index": "docs", "_id": f"d-{i}", "_score": 9.5 - i * 0.01,
             "_source": {"title": words(rng, 8), "year": 2020 + i % 6, "body": words(rng, body_words)},
             "highlight": {"body": [words(rng, 25)]}} for i in range(n)]
    return json.dumps(envelope(hits, 500)).encode()


def per_call(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bench_fit_cost(url: str, post_body: bytes, rounds: int, scale: float) -> list[dict[str, Any]]:
    """`DispatchCore._shape` (the fitting step of a dispatch) on N hits of 150-word bodies that
    do not fit the default budget, against one raw post of a 10-hit search to the loopback
    server."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    out = []
    for n in (10, 50):
        arguments = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": n}
        core, prepared = _core_and_prepared(arguments)
        payload = core.payload_for(prepared.tool, prepared.request, Reply(200, {}, prose_hits(n), "bench"), 1, None)
        shaped, content = core._shape("xerj_search", payload, prepared)
        assert "truncated" in shaped and len(content) <= core.budget, "the case must need fitting"
        calls = max(2, int(60 * scale))
        ours, raw, ratios = [], [], []
        with httpx2.Client() as client:
            client.post(url + "/docs/_search", content=post_body, headers=headers)
            for _ in range(rounds):
                a = b = 0.0
                for _ in range(10):  # fine interleaving: both sides see the same machine noise
                    a += per_call(lambda: core._shape("xerj_search", payload, prepared), calls) * 1e6 / 10  # noqa: B023
                    b += per_call(lambda: client.post(url + "/docs/_search", content=post_body, headers=headers),
                                  calls) * 1e6 / 10
                ours.append(a), raw.append(b), ratios.append(a / b)
        out.append({"case": f"fitting {n} hits of 150-word bodies ({len(dumps_len(payload)):,} chars) "
                            f"to {core.budget:,}", "unit": "µs per call", "ours": summary(ours),
                    "baseline": summary(raw), "ratio": summary(ratios),
                    "targets": {"≤ 0.5× a raw post": statistics.median(ratios) <= 0.5} if n == 50 else {}})
    return out


def dumps_len(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def big_response() -> bytes:
    hits = [{"_index": "docs", "_id": f"d-{i}", "_score": 10 - i / 1000, "_version": 1,
             "_source": {"title": f"Document {i}", "year": 2026, "body": ("word " * 900) + str(i),
                         "body_vector": [0.01] * 16}} for i in range(1000)]
    return json.dumps({"took": 5, "timed_out": False, "hits": {"total": {"value": 1000, "relation": "eq"},
                                                              "hits": hits}}).encode()


def bench_big_response(rounds: int) -> dict[str, Any]:
    """From the body's bytes to the tool message (decode, shape, fit, serialise) against
    `json.loads` of the same bytes: time and peak memory."""
    body = big_response()
    arguments = {"index": "docs", "query": {"match_all": {}}, "size": 1000}
    core, prepared = _core_and_prepared(arguments)
    call = ToolCall("c", "xerj_search", "{}")

    def shape() -> int:
        payload = core.payload_for(prepared.tool, prepared.request, Reply(200, {}, body, "bench"), 1, None)
        return len(core.result(call, payload, 1, 0.0, prepared).content)

    def loads() -> Any:
        return json.loads(body)

    assert shape() <= core.budget
    ours, base = [], []
    for _ in range(max(rounds, 3)):
        a = b = 0.0
        for _ in range(5):  # fine interleaving: both sides see the same machine noise
            a += per_call(shape, 1) * 1e3 / 5
            b += per_call(loads, 1) * 1e3 / 5
        ours.append(a), base.append(b)
    memory = {}
    for name, fn in (("ours", shape), ("json.loads", loads)):
        tracemalloc.start()
        fn()
        memory[name] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    ratios = [a / b for a, b in zip(ours, base, strict=True)]
    return {"case": f"shaping a 1,000-hit, {len(body) / 2**20:.1f} MiB response to {core.budget:,} chars",
            "unit": "ms", "ours": summary(ours), "baseline": summary(base), "ratio": summary(ratios),
            "peak_memory_mib": memory,
            "targets": {"≤ 1.5× json.loads": statistics.median(ratios) <= 1.5,
                        "peak memory ≤ json.loads's": memory["ours"] <= memory["json.loads"]}}


def results(url: str, post_body: bytes, rounds: int = 7, scale: float = 1.0) -> list[dict[str, Any]]:
    """Every case, for benchmarks/run.py: `url` is its loopback server, `post_body` the raw post."""
    return [*bench_fit_cost(url, post_body, rounds, scale), bench_big_response(rounds), *bench_model_reads()]


def main() -> None:
    import _common as run  # the loopback server and the table's formatting

    quick = "--quick" in sys.argv
    rounds, scale = (2, 0.05) if quick else (7, 1.0)
    post = json.dumps({"query": run.TYPICAL["query"], "size": 10}).encode()
    with run.MinimalServer(run.ten_hits()) as server:
        cases = results(server.url, post, rounds, scale)
    for r in cases:
        ratio = r.get("ratio")
        targets = "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in r["targets"].items())
        memory = r.get("peak_memory_mib")
        extra = f" — peak MiB: {', '.join(f'{k} {v:.1f}' for k, v in memory.items())}" if memory else ""
        print(f"| {r['case']}{extra} | {r['unit']} | {run.fmt(r['ours'])} | {run.fmt(r['baseline'])} | "
              f"{run.fmt(ratio) if ratio else ''} | {targets} |")

if __name__ == "__main__":
    main()
