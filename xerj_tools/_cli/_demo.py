"""The demo: realistic model tool calls dispatched to XERJ (or to the stand-in), turn by turn."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from .._dispatch._sync import Dispatcher

__all__ = ["demo_turns", "run_demo"]


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def demo_turns(index: str = "docs") -> list[tuple[str, list[dict[str, Any]]]]:
    """Tool calls as a model emits them (arguments are JSON strings), mistakes included."""
    return [
        (
            "The model orients itself first: which indices it may use, and the fields of two, "
            "with example values where XERJ autoindex's catalog (`autoindex-catalog`) has them.",
            [
                _call("call_0a", "xerj_list_indices", {}),
                _call("call_0b", "xerj_describe_index", {"index": index}),
                _call("call_0c", "xerj_describe_index", {"index": "tickets"}),
            ],
        ),
        (
            "Having learned that `body` is semantic_text and that `status` holds `open`, the "
            "model looks for the cause of a checkout incident, counts open tickets and saves a "
            "note.",
            [
                _call(
                    "call_1",
                    "xerj_semantic_search",
                    {
                        "index": index,
                        "field": "body",
                        "query": "why did checkout break",
                        "k": 3,
                        "size": 2,
                    },
                ),
                _call(
                    "call_2",
                    "xerj_search",
                    {
                        "index": "tickets",
                        "query": {"term": {"status": "open"}},
                        "size": 0,
                        "aggs": {"by_service": {"terms": {"field": "service"}}},
                    },
                ),
                _call(
                    "call_3",
                    "xerj_memory_store",
                    {
                        "namespace": "demo-agent",
                        "text": "The user is on the checkout team.",
                        "metadata": {"kind": "profile"},
                    },
                ),
            ],
        ),
        (
            "The model nests `size` inside `query` (repaired, and told so); then it sorts a reranked "
            "search, names a tool that does not exist and tries a path-escaping index: those are "
            "answered with what to fix, and nothing is sent for them.",
            [
                _call(
                    "call_4",
                    "xerj_search",
                    json.dumps(
                        {"index": index, "query": {"match": {"body": "restore index"}, "size": 3}}
                    ),
                ),
                _call(
                    "call_5",
                    "xerj_search",
                    {
                        "index": index,
                        "query": {"match": {"body": "restore"}},
                        "sort": [{"year": "desc"}],
                        "rerank": {},
                    },
                ),
                _call("call_5b", "xerj_lookup", '{"q": "restore"}'),
                _call("call_6", "xerj_search", '{"index": "../_cluster", "query": {}}'),
            ],
        ),
        (
            "The model corrects itself, asks for a reranked hybrid search and recalls its note.",
            [
                _call(
                    "call_7",
                    "xerj_hybrid_search",
                    {
                        "index": index,
                        "size": 3,
                        "queries": [
                            {"query": {"match": {"body": "restore search index"}}},
                            {
                                "query": {
                                    "semantic": {"field": "body", "query": "restore search index"}
                                }
                            },
                        ],
                        "rerank": {"query": "how do I restore a search index?"},
                    },
                ),
                _call(
                    "call_8",
                    "xerj_memory_recall",
                    {"namespace": "demo-agent", "query": "checkout team"},
                ),
            ],
        ),
    ]


def _summary(payload: dict[str, Any]) -> str:
    if not payload.get("ok"):
        error = payload["error"]
        problems = "; ".join(f"{p['path']}: {p['message']}" for p in error.get("problems", [])[:2])
        return f"ok=false code={error['code']} {problems or error['reason']}\n     hint: {error['hint']}"
    parts = ["ok=true"]
    for key in ("total", "ranked_by", "id", "created"):
        if key in payload:
            parts.append(f"{key}={payload[key]}")
    for repair in payload.get("repairs", []):
        parts.append(f"\n     repaired: {repair}")
    if "rerank" in payload:
        parts.append(f"rerank.applied={payload['rerank'].get('applied')}")
    text = " ".join(parts)
    for row in payload.get("indices", [])[:5]:
        text += f"\n     · {row['name']}  {row.get('docs')} docs"
        if row.get("role") == "catalog":
            text += "  (autoindex's catalog)"
        elif "formats" in row:
            text += f"  {'/'.join(row['formats'])}, {row.get('files')} file(s)"
            text += f", time {row['time_field']}" if "time_field" in row else ""
    for group, fields in (payload.get("fields") or {}).items():
        text += f"\n     · {group}: {', '.join(fields)}"
    for section in (payload.get("catalog") or {}).values():
        examples = [
            f"{name}={'|'.join(entry['examples'])}"
            for name, entry in (section.get("fields") or {}).items()
            if entry.get("examples") and len(entry["examples"][0]) <= 20
        ]
        text += f"\n     · examples: {', '.join(examples[:4])}"
        for query in section.get("queries", [])[:2]:
            text += f"\n     · ready: {query.get('tool')} {json.dumps(query.get('arguments'))[:80]}"
    for hit in payload.get("hits", [])[:3]:
        title = hit.get("_source", {}).get("title") if "_source" in hit else hit.get("text")
        text += f"\n     · {hit.get('_id', hit.get('id'))}  {title}"
    for name, agg in (payload.get("aggregations") or {}).items():
        buckets = ", ".join(f"{b['key']}={b['doc_count']}" for b in agg.get("buckets", []))
        text += f"\n     · {name}: {buckets}"
    return text


@contextmanager
def _target(url: str | None, out: TextIO) -> Iterator[str]:
    url = url or os.environ.get("XERJ_URL")
    if url:
        print(f"XERJ node: {url}", file=out)
        yield url
        return
    from ..testing import XerjStandIn

    with XerjStandIn(catalog=True) as stand_in:
        print(
            f"XERJ_URL is not set: using the built-in stand-in at {stand_in.url} "
            "(a test double with a small corpus and its autoindex catalog, not XERJ).",
            file=out,
        )
        yield stand_in.url


def run_demo(url: str | None = None, *, index: str = "docs", out: TextIO | None = None) -> int:
    """Run the demo; returns 0 (`run_many` answers every call with a tool message)."""
    import sys

    out = out or sys.stdout
    answered = 0
    with _target(url, out) as target, Dispatcher(url=target) as dispatcher:
        for number, (story, calls) in enumerate(demo_turns(index), start=1):
            print(f"\nTurn {number}. {story}", file=out)
            for call, result in zip(calls, dispatcher.run_many(calls), strict=True):
                arguments = call["function"]["arguments"]
                print(f"  → {call['function']['name']} {arguments[:110]}", file=out)
                print(f"  ← {_summary(dict(result.payload))}", file=out)
            answered += len(calls)
        print(
            f"\n{answered}/{answered} calls answered with a tool message the model can act on.",
            file=out,
        )
    return 0
