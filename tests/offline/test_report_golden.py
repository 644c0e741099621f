"""`xerj-tools validate`'s reports are byte for byte the reference's: the compiled explainer, the
compiled repairs and the reused JSON encoder change no message.

The expected outputs in tests/fixtures/report-golden/ were written by the reference (the package
at commit 803c3bd: jsonschema's explanations, the plain repair walk, a fresh encoder), then
written again where a message was changed on purpose (a search without `query`, `source` as an
object: the decompressed outputs differ in those lines alone), running this module as a script
with that code first on the path:

    PYTHONPATH=/path/to/reference-checkout python tests/offline/test_report_golden.py

It builds the two inputs below (the bundled tools, and a tools file of its own whose schemas
forbid unexpected properties and name keys with quotes and spaces), validates each in JSON and
in text, with and without repair, and writes the outputs gzipped. Nothing in them is written by
hand; the test builds the same inputs and compares the current outputs with them.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parents[1] / "fixtures" / "report-golden"

QUERY = {"bool": {"must": [{"match": {"body": "cache outage"}}], "filter": [{"term": {"k": "p"}}]}}
VALID: dict[str, dict[str, Any]] = {
    "xerj_search": {"index": "docs", "query": QUERY, "size": 10, "sort": [{"_score": "desc"}],
                    "source": ["title", "body"]},
    "xerj_semantic_search": {"index": "docs", "field": "body", "query": "tea refund", "k": 5},
    "xerj_vector_search": {"index": "docs", "field": "embedding",
                           "query_vector": [0.25, -0.5, 0.125, 1.0, 0.0, -1.0, 0.5, 0.75, 0.3],
                           "k": 10},
    "xerj_hybrid_search": {"index": "docs", "fusion": "rrf", "size": 10, "queries": [
        {"query": {"match": {"body": "latency"}}, "weight": 1.0},
        {"query": {"semantic": {"body": {"query": "slow pages"}}}}]},
    "xerj_memory_store": {"namespace": "agent", "text": "the user likes tea", "metadata": {"s": 1}},
    "xerj_memory_recall": {"namespace": "agent", "query": "drinks", "k": 5},
    "xerj_get_document": {"index": "docs", "id": "doc-7"},
}  # fmt: skip

# What a model gets wrong, each applied to each tool's valid arguments (see `_mutated`).
MUTATIONS = [
    "valid", "negative size", "drop first", "drop all", "first is 12", "first is null",
    "unknown argument", "first is a long string", "first is a list", "size as text",
    "size as float text", "size as huge text", "size 1e400 text", "null optional",
    "JSON text query", "nested size", "controls", "non-ASCII", "float integral",
]  # fmt: skip

# Lines of their own: repairs of every kind, nested problems, enums, unreadable input.
EXTRA: list[tuple[str, Any, str]] = [
    ("xerj_hybrid_search", {"index": "d", "queries": {"query": {"match": {"a": "b"}}, "weight": 2}}, "h1"),
    ("xerj_hybrid_search", {"index": "d", "queries": {"match": {"a": "b"}}}, "h2"),
    ("xerj_hybrid_search", {"index": "d", "queries": json.dumps([{"query": {"m": 1}, "weight": "2"}])}, "h3"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {"m": 1}, "weight": "x"}, {"weight": 1}]}, "h4"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": "match all"}], "fusion": "learned"}, "h5"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {"m": 1}}], "fusion": 5}, "h6"),
    ("xerj_hybrid_search", {"index": "d", "queries": [{"query": {"m": 1}}], "fusion": "rrf\u202e"}, "h7"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": ["0.5", 1, True, None, "x"]}, "v1"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": "[0.1, 0.2]"}, "v2"),
    ("xerj_vector_search", {"index": "d", "field": "v", "query_vector": ["9" * 400]}, "v3"),
    ("xerj_search", {"index": "docs", "query": {"match": {"a": 1}, "size": "2", "_source": ["t"]}}, "s1"),
    ("xerj_search", {"index": "docs", "query": json.dumps({"match": {"a": 1}, "size": "2"})}, "s2"),
    ("xerj_search", {"index": "docs", "query": "[[[[" + "[" * 80 + "]" * 84}, "s3"),
    ("xerj_search", {"index": ["a", "b"], "query": 5, "size": True, "sort": 5, "source": {"a": 1}}, "s4"),
    ("xerj_search", {"index": "docs", "query": {"match": {"a": 1}}, "from": "-3"}, "s5"),
    ("xerj_memory_store", {"namespace": None, "text": None, "id": None, "dedup": "yes"}, "m1"),
    ("xerj_memory_recall", {"namespace": "n", "k": "3", "recency_weight": "0.25"}, "m2"),
    ("xerj_get_document", {"index": "docs", "id": 42}, "g1"),
    ("xerj_get_document", {}, "g2"),
    ("xerj_nope", {"index": "docs"}, "u1"),
    ("xerj_search", {"index": "docs", "query": {"m": 1}, "size": "ten\x7f"}, "del\x7f"),  # ASCII
]  # fmt: skip
RAW_ARGUMENTS = [
    ("xerj_search", "{not json", "r1"), ("xerj_search", "[1, 2]", "r2"), ("xerj_search", "", "r3"),
    ("xerj_search", '{"index": "d", "query": {"m": 1e400}}', "r4"),
    ("xerj_search", '{"index": "d\\ud800", "query": {"m": 1}}', "r5"),
    ("xerj_get_document", '{"index": "docs", "id": 12345678901234567890123}', "r6"),
]  # fmt: skip

# A tools file of its own: closed objects, keys with quotes and spaces, enums, type lists, an
# `additionalProperties` schema, and one schema outside the compiled subset (jsonschema's).
CUSTOM_TOOLS = [
    {"type": "function", "function": {"name": "closed", "parameters": {
        "type": "object", "additionalProperties": False, "required": ["it's", "a b", "mode"],
        "properties": {
            "it's": {"type": "string"}, "a b": {"type": ["integer", "null"]},
            "mode": {"type": "string", "enum": ["fast", "slow", "it's"]},
            "tags": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                "required": ["k"], "properties": {"k": {"type": "string"}}}},
            "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
            "free": True, "note": {"description": "anything"},
        }}}},
    {"type": "function", "function": {"name": "bounded", "parameters": {
        "type": "object", "required": ["n"],
        "properties": {"n": {"type": "integer", "minimum": 1}, "s": {"type": "string", "pattern": "^a"}},
    }}},
]  # fmt: skip
CUSTOM_ARGUMENTS: list[dict[str, Any]] = [
    {"it's": "x", "a b": 1, "mode": "fast"},
    {"it's": "x", "a b": None, "mode": "it's", "tags": [{"k": "v"}], "extra": {"p": 1}},
    {},
    {"it's": 5, "a b": "7", "mode": "medium", "zz": 1, "aa": 2, "b c": 3, "it'ss": 4},
    {"it's": "x", "a b": 1.5, "mode": "fast", "tags": [{"k": 1, "q": 2}, {}, "t", {"k": "\x1b"}]},
    {"it's": "x", "a b": 2.0, "mode": "slow", "extra": {"p": "one", "q": 2.5, "r": True}},
    {"it's": ["x"], "a b": {}, "mode": None, "tags": {"k": "v"}, "extra": [], "free": {"a": [1]}},
    {"it's": "x" * 400, "a b": 1, "mode": "slow\u2028", "unexpected \u202e": 1},
    {"it's": "x", "a b": 1, "mode": "fast", "note": [1, {"z": None}], "\x7f": 0},
]  # fmt: skip
CUSTOM_BOUNDED = [{"n": 0, "s": "b"}, {"n": "3"}, {}, {"n": 2, "s": "abc", "t": 1}, {"n": 1.0}]


def _mutated(tool: str, mutation: str) -> Any:
    args = json.loads(json.dumps(VALID[tool]))
    first = next(iter(args))
    if mutation == "negative size":
        args["size"] = -1
    elif mutation == "drop first":
        args.pop(first)
    elif mutation == "drop all":
        args = {}
    elif mutation == "first is 12":
        args[first] = 12
    elif mutation == "first is null":
        args[first] = None
    elif mutation == "unknown argument":
        args["treshold"] = 0.5
    elif mutation == "first is a long string":
        args[list(args)[-1]] = "long " * 80
    elif mutation == "first is a list":
        args[first] = [first, 1]
    elif mutation == "size as text":
        args["size"] = "10"
    elif mutation == "size as float text":
        args["size"] = "2.5"
    elif mutation == "size as huge text":
        args["size"] = "9" * 30
    elif mutation == "size 1e400 text":
        args["k"] = "1e400"
    elif mutation == "null optional":
        args.update(size=None, k=None, filter=None, metadata=None)
    elif mutation == "JSON text query":
        if isinstance(args.get("query"), dict):
            args["query"] = json.dumps(args["query"])
        args["filter"] = '{"term": {"k": "v"}}'
    elif mutation == "nested size":
        args["query"] = {"match": {"a": 1}, "size": 3, "from": "4", "sort": [{"a": "asc"}]}
    elif mutation == "controls":
        args[first] = "a\x1b[31mred\x07\x7f\x9b\u200b\u202e"
    elif mutation == "non-ASCII":
        args[first] = "café ☕ 𝄞"
    elif mutation == "float integral":
        args.update(size=5.0, k=3.0)
    return args


def _record(name: str, arguments: Any, call_id: str) -> str:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return json.dumps(
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
    )


def bundled_lines() -> list[str]:
    lines = [
        _record(tool, _mutated(tool, mutation), f"call_{i}")
        for i, (tool, mutation) in enumerate(itertools.product(VALID, MUTATIONS))
    ]
    lines += [_record(name, args, call_id) for name, args, call_id in EXTRA]
    lines += [_record(name, raw, call_id) for name, raw, call_id in RAW_ARGUMENTS]
    lines.insert(7, "this line is not JSON")
    lines.insert(9, "")
    lines.append(
        json.dumps(
            {
                "id": "call_\x1b]0;title\x07",
                "type": "function",
                "function": {
                    "name": "xerj_get_document",
                    "arguments": json.dumps({"index": 5, "id": 6}),
                },
            }
        )
    )
    return lines


def custom_lines() -> list[str]:
    lines = [_record("closed", args, f"c{i}") for i, args in enumerate(CUSTOM_ARGUMENTS)]
    lines += [_record("bounded", args, f"b{i}") for i, args in enumerate(CUSTOM_BOUNDED)]
    return lines


def outputs(directory: Path) -> dict[str, bytes]:
    """Every output of `xerj-tools validate` over the two inputs, by name."""
    from xerj_tools._cli._main import main

    bundled = directory / "bundled.jsonl"
    bundled.write_text("\n".join(bundled_lines()) + "\n", encoding="utf-8")
    custom = directory / "custom.jsonl"
    custom.write_text("\n".join(custom_lines()) + "\n", encoding="utf-8")
    tools = directory / "tools.json"
    tools.write_text(json.dumps(CUSTOM_TOOLS), encoding="utf-8")
    found = {}
    runs = {"bundled": [str(bundled)], "custom": [str(custom), "--tools-file", str(tools)]}
    for (name, argv), format, strict in itertools.product(
        runs.items(), ("json", "text"), (False, True)
    ):
        out, err = io.StringIO(), io.StringIO()
        flags = ["--format", format] + (["--strict"] if strict else [])
        code = main(["validate", *argv, *flags], stdin=io.StringIO(), stdout=out, stderr=err)
        key = f"{name}{'-strict' if strict else ''}.{format}"
        found[key] = f"exit {code}\n{out.getvalue()}".encode()
    return found


def test_reports_are_the_bytes_main_wrote(tmp_path: Path) -> None:
    expected = {
        path.name.removesuffix(".gz"): gzip.decompress(path.read_bytes())
        for path in GOLDEN.glob("*.gz")
    }
    assert len(expected) == 8
    found = outputs(tmp_path)
    assert found.keys() == expected.keys()
    for key, text in found.items():
        assert text.splitlines() == expected[key].splitlines(), key
        assert text == expected[key], key
    # The inputs hold what they are for: reports of both kinds, jsonschema's own failures.
    assert (
        b'"ok": true' in found["bundled.json"] and b"Additional properties" in found["custom.json"]
    )


if __name__ == "__main__":  # write the golden outputs (see the module's docstring)
    import tempfile

    import xerj_tools

    print("writing with", xerj_tools.__file__, file=sys.stderr)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for key, text in outputs(Path(folder)).items():
            (GOLDEN / f"{key}.gz").write_bytes(gzip.compress(text, mtime=0))
