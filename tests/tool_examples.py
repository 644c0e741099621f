"""Plain valid arguments for any tool of the registry, made from its schema, so that tests can
be parametrised over the registry's tools (a new tool is covered without a new table entry)."""

from __future__ import annotations

from typing import Any

from xerj_tools import ToolRegistry

# Values for argument names the XERJ tools share; any other argument gets one by its JSON type.
BY_NAME: dict[str, dict[str, Any]] = {
    "index": {"string": "docs"},
    "query": {"string": "restore an index", "object": {"match": {"body": "checkout"}}},
    "field": {"string": "body"},
    "query_vector": {"array": [0.1, 0.2, 0.3]},
    "queries": {"array": [{"query": {"match": {"body": "checkout"}}}]},
    "namespace": {"string": "agent"},
    "text": {"string": "the user prefers tea"},
    "id": {"string": "pm-101"},
}
BY_TYPE: dict[str, Any] = {"string": "x", "integer": 1, "number": 0.5, "boolean": True, "array": [], "object": {}}


def _value(name: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    kind = kind[0] if isinstance(kind, list) else kind
    return BY_NAME.get(name, {}).get(kind, BY_TYPE.get(kind, "x"))


def example_arguments(registry: ToolRegistry, tool: str) -> dict[str, Any]:
    """Required arguments, plus the optional ones named in `BY_NAME` (a recall needs a query)."""
    parameters = registry[tool].parameters
    properties = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    args = {k: _value(k, v) for k, v in properties.items() if k in required or k in BY_NAME}
    result = registry.validate(tool, args)
    assert result.ok, f"no plain example for {tool}: {result.summary()}; extend tests/tool_examples.py"
    return args


def random_valid_arguments(name: str, seed: int) -> dict[str, Any]:
    """A valid call of `name` drawn as the benchmark draws its calls (`benchmarks/calls.py`), seeded;
    the discovery tools, which the benchmark does not draw, get one fixed call each."""
    import random
    import sys
    from pathlib import Path

    if name == "xerj_list_indices":
        return {"pattern": "logs-*"}
    if name == "xerj_describe_index":
        return {"index": "docs"}
    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if benchmarks not in sys.path:
        sys.path.insert(0, benchmarks)
    import calls

    return calls._valid(random.Random(seed), name)
