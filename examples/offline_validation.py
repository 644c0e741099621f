"""Offline validation: check recorded model tool calls against the schemas, no XERJ, no model.

Run: python examples/offline_validation.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from xerj_tools import load_registry
from xerj_tools._cli._main import main as cli

registry = load_registry()

# One call at a time, from the raw JSON string a model emitted.
for raw in ['{"index": "docs", "query": {"match": {"body": "vpn"}}, "size": 5}',
            '{"index": "docs", "query": {"match": {"body": "vpn"}, "size": 5}}',
            '{"index": "../_cluster", "query": {}, "size": -1}']:
    result = registry.validate("xerj_search", raw, repair=True)
    verdict = "valid" if result.ok else "invalid"
    print(f"{verdict:8} {raw}")
    for problem in result.problems:
        print(f"         {problem}")
    for repair in result.repairs:
        print(f"         repaired {repair}")

# A recorded conversation, as the command line sees it (xerj-tools validate FILE).
recorded = [
    {"role": "user", "content": "find the vpn postmortem"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "xerj_semantic_search",
                                                          "arguments": '{"index": "docs", "field": "body", "k": 0}'}}]},
]
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "conversation.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in recorded) + "\n")
    print(f"\n$ xerj-tools validate {path.name}")
    status = cli(["validate", str(path)])
    print(f"(exit status {status})")
