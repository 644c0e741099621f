"""Recorded tool calls for the offline-validation benchmark: mixed over every tool, some invalid.

`write_calls(path, n)` writes `n` Chat Completions tool calls (`shape`: or plain {name,
arguments} records, Responses function_call items, Anthropic tool_use blocks, Gemini
functionCall parts), one JSONL record a line, spread
over the seven tools of the bundled registry with realistic arguments; one call in ten is
invalid in a way a model gets wrong (a negative `size`, a missing required argument, a wrong
type, an unknown argument, a bad namespace), so that the failure path (jsonschema's
explanation) is part of what is measured. The same `seed` gives the same file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

WORDS = ["checkout", "outage", "latency", "invoice", "refund", "tea", "deploy", "rollback", "cache",
         "index", "shard", "replica", "timeout", "quota", "billing", "login", "search", "vector"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _valid(rng: random.Random, tool: str) -> dict[str, Any]:
    if tool == "xerj_search":
        args: dict[str, Any] = {"index": "docs", "query": {"bool": {
            "must": [{"match": {"body": _text(rng, 2)}}], "filter": [{"term": {"kind": "postmortem"}}]}}}
        if rng.random() < 0.7:
            args.update(size=rng.randint(1, 50), sort=[{"_score": "desc"}], source=["title", "body", "year"])
        elif rng.random() < 0.3:
            args["rerank"] = {"query": _text(rng, 3), "window": 50}
        return args
    if tool == "xerj_semantic_search":
        return {"index": "docs", "field": "body", "query": _text(rng, 4), "k": rng.randint(1, 20)}
    if tool == "xerj_vector_search":
        return {"index": "docs", "field": "embedding",
                "query_vector": [round(rng.uniform(-1, 1), 4) for _ in range(16)], "k": 10}
    if tool == "xerj_hybrid_search":
        return {"index": "docs", "queries": [{"query": {"match": {"body": _text(rng, 2)}}, "weight": 1.0},
                                             {"query": {"semantic": {"body": {"query": _text(rng, 3)}}}}],
                "fusion": "rrf", "size": 10}
    if tool == "xerj_memory_store":
        return {"namespace": "agent", "text": _text(rng, 8), "metadata": {"source": "chat"}}
    if tool == "xerj_memory_recall":
        return {"namespace": "agent", "query": _text(rng, 3), "k": 5}
    return {"index": "docs", "id": f"doc-{rng.randint(1, 10_000)}"}


def _invalid(rng: random.Random, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    kind = rng.randrange(4)
    if kind == 0:
        args["size"] = -1  # a prose limit (or an argument the tool does not take)
    elif kind == 1:
        args.pop(next(iter(args)))  # a required argument missing
    elif kind == 2:
        key = next(iter(args))
        args[key] = 12  # a wrong type
    else:
        args["treshold"] = 0.5  # an argument no tool takes
    return args


TOOLS = ["xerj_search", "xerj_semantic_search", "xerj_vector_search", "xerj_hybrid_search",
         "xerj_memory_store", "xerj_memory_recall", "xerj_get_document"]
# How often each tool is called: searches most, then memory, then document reads.
WEIGHTS = [40, 12, 8, 8, 12, 12, 8]


SHAPES = ("chat", "plain", "responses", "anthropic", "gemini")
"""The record shapes a file can be written in (`record`)."""


def record(call_id: str, tool: str, args: dict[str, Any], shape: str = "chat") -> dict[str, Any]:
    """One call as a record of `shape`: a Chat Completions tool call, a plain {name, arguments}
    record, a Responses function_call item, an Anthropic tool_use block or a Gemini part."""
    if shape == "chat":
        return {"id": call_id, "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args)}}
    if shape == "plain":
        return {"id": call_id, "name": tool, "arguments": json.dumps(args)}
    if shape == "responses":
        return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": tool,
                "arguments": json.dumps(args), "status": "completed"}
    if shape == "anthropic":
        return {"type": "tool_use", "id": call_id, "name": tool, "input": args}
    if shape == "gemini":
        return {"functionCall": {"id": call_id, "name": tool, "args": args}}
    raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")


def records(n: int, seed: int = 7, invalid: float = 0.1, shape: str = "chat") -> list[str]:
    """`n` JSONL lines (without their newlines): tool calls as records of `shape`."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        tool = rng.choices(TOOLS, WEIGHTS)[0]
        args = _valid(rng, tool)
        if rng.random() < invalid:
            args = _invalid(rng, tool, args)
        lines.append(json.dumps(record(f"call_{i}", tool, args, shape)))
    return lines


def write_calls(path: Path, n: int, seed: int = 7, invalid: float = 0.1,
                shape: str = "chat") -> Path:
    """Write `n` calls to `path` in blocks (a large file is never held whole)."""
    block = 10_000
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, n, block):
            out.write("\n".join(records(min(block, n - start), seed + start, invalid, shape)) + "\n")
    return path
