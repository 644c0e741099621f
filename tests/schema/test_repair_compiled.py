"""The compiled repairs (`_repair.Repairer`) repair exactly what the plain walk below repairs:
the same arguments, the same repairs in the same order, the same refusal. The walk (the
package's `_repair.py` at commit 803c3bd) is kept here, unchanged but for its function's name,
as the reference; it lives only here."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import load_registry
from xerj_tools._bounds import TooDeep, loads, value_problem
from xerj_tools._problems import json_path
from xerj_tools._schema._fastcheck import KEPT_SCHEMAS, compile_check
from xerj_tools._schema._repair import repair_arguments, repairer

EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "100"))

# ---------------------------------------------------------------- the plain walk, the reference
# fmt: off
_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
# Keys a model puts inside `query` that are arguments of their own (and what they are called).
_NESTED = {
    "size": "size",
    "from": "from",
    "sort": "sort",
    "_source": "source",
    "source": "source",
    "aggs": "aggs",
}


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    return [t for t in declared if isinstance(t, str)] if isinstance(declared, list) else []


def _not_null(schema: Any) -> bool:
    """Whether `schema` declares types and null is none of them (nor an `enum` value): then a null
    has exactly one reading, "not given". A schema without a `type` may accept null; it is left."""
    types = _types(schema)
    enum = schema.get("enum") if isinstance(schema, Mapping) else None
    return bool(types) and "null" not in types and not (isinstance(enum, list) and None in enum)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _coerce(value: Any, schema: Any, path: list[str | int], repairs: list[str]) -> Any:
    types = _types(schema)
    if type(value) is int and types == ["string"]:
        # A document id of digits sent as a number: its decimal string is the one reading.
        repairs.append(f"{json_path(path)}: {value} → {json.dumps(str(value))}")
        return str(value)
    if isinstance(value, str) and types and "string" not in types:
        if ("integer" in types or "number" in types) and (
            _INTEGER.match(value) or ("number" in types and _NUMBER.match(value))
        ):
            number: int | float = int(value) if _INTEGER.match(value) else float(value)
            repairs.append(f"{json_path(path)}: {_show(value)} → {number}")
            return number
        if "object" in types or "array" in types:
            try:
                decoded = loads(value)
            except TooDeep as exc:  # the one reading is refused: say why, not "got string"
                raise TooDeep(exc.limit, json_path(path)) from None
            except ValueError:
                return value
            wanted = {"object": dict, "array": list}
            if any(isinstance(decoded, wanted[t]) for t in types if t in wanted):
                kind = "object" if isinstance(decoded, dict) else "array"
                repairs.append(f"{json_path(path)}: JSON string → {kind}")
                value = decoded
    if isinstance(value, dict) and isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            required = schema.get("required")
            required = required if isinstance(required, list) else []
            out = {}
            for k, v in value.items():
                if v is None and k in properties and k not in required and _not_null(properties[k]):
                    # MCP Inspector, strict-mode normalisation and several frameworks send null
                    # for an argument they mean to leave out; XERJ's own MCP server skips it
                    # (xerj-mcp main.rs:429-435 `copy_opt`). A null for a required one stays an error.
                    repairs.append(f"{json_path([*path, k])}: null → omitted")
                    continue
                out[k] = _coerce(v, properties[k], [*path, k], repairs) if k in properties else v
            return out
    if (
        isinstance(value, list)
        and isinstance(schema, Mapping)
        and isinstance(schema.get("items"), Mapping)
    ):
        return [_coerce(v, schema["items"], [*path, i], repairs) for i, v in enumerate(value)]
    return value


def _unnest_query(args: dict[str, Any], properties: Mapping[str, Any], repairs: list[str]) -> None:
    query = args.get("query")
    if not isinstance(query, dict) or len(query) < 2:
        return
    movable = [
        k for k in query if k in _NESTED and _NESTED[k] in properties and _NESTED[k] not in args
    ]
    if not movable or len(query) - len(movable) < 1:
        return  # nothing to move, or nothing would be left of the query: no single reading
    if len({_NESTED[k] for k in movable}) < len(movable):
        return  # both `_source` and `source` inside the query: two readings
    rest = dict(query)
    for key in movable:
        target = _NESTED[key]
        args[target] = rest.pop(key)
        repairs.append(f"$.query.{key} → $.{target}")
    args["query"] = rest


def _wrap_queries(args: dict[str, Any], properties: Mapping[str, Any], repairs: list[str]) -> None:
    queries = args.get("queries")
    if "array" not in _types(properties.get("queries")) or not isinstance(queries, dict):
        return
    if "query" in queries:
        args["queries"] = [queries]
        repairs.append("$.queries: one sub-query object → array of one")
    elif len(queries) == 1:
        args["queries"] = [{"query": queries}]
        repairs.append('$.queries: one query clause → [{"query": clause}]')


def old_repair_arguments(
    arguments: Mapping[str, Any], schema: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Return repaired arguments and a description of each repair (empty when none applied).

    Raises `TooDeep` (with its path) when a JSON string the schema wants decoded is nested
    deeper than `MAX_ARGUMENT_DEPTH`.
    """
    repairs: list[str] = []
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    args = _coerce(dict(arguments), schema, [], repairs)
    if "query" in properties and "object" in _types(properties["query"]):
        _unnest_query(args, properties, repairs)
    _wrap_queries(args, properties, repairs)
    if repairs:
        args = _coerce(args, schema, [], repairs)
    return args, repairs
# fmt: on


# ---------------------------------------------------------------- strategies

NAMES = [
    "index",
    "size",
    "k",
    "query",
    "queries",
    "id",
    "from",
    "sort",
    "source",
    "_source",
    "aggs",
    "weight",
    "a",
    "it's",
]
TYPES = ["object", "array", "string", "boolean", "null", "number", "integer"]
types = st.one_of(
    st.sampled_from(TYPES),
    st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
    st.sampled_from([["string", 5], [], 7, None]),  # what a hand-made schema may hold
)
leaves = st.one_of(
    st.just(True),
    st.just({}),
    st.builds(lambda t: {"type": t}, types),
    st.builds(lambda t, e: {"type": t, "enum": e}, types, st.sampled_from([["a", None], ["a"]])),
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=5)},
            optional={
                "type": st.sampled_from(["object", ["object", "null"], ["object", "string"]]),
                "required": st.one_of(
                    st.lists(st.sampled_from(NAMES), max_size=3, unique=True), st.just("index")
                ),
            },
        ),
        st.fixed_dictionaries(
            {"items": inner}, optional={"type": st.sampled_from(["array", ["array", "object"]])}
        ),
        st.just({"type": "object", "properties": "not a mapping", "items": {"type": "integer"}}),
    )


schemas = st.recursive(leaves, _extend, max_leaves=12)
top_schemas = st.one_of(
    schemas.filter(lambda s: isinstance(s, dict)),
    st.builds(  # a search's shape: `query` an object, `queries` an array, the movable ones
        lambda extra: {"type": "object", "required": ["index"], "properties": {
            "index": {"type": "string"}, "query": {"type": "object"}, "size": {"type": "integer"},
            "from": {"type": "integer"}, "sort": {"type": ["array", "object", "string"]},
            "source": {"type": ["boolean", "array", "string"]}, "aggs": {"type": "object"},
            "queries": {"type": ["array"], "items": {"type": "object", "properties": {
                "query": {"type": "object"}, "weight": {"type": "number"}}}},
            **extra}},
        st.dictionaries(st.sampled_from(NAMES), schemas, max_size=2),
    ),
)  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([2.5, 5.0, 1e300]),
    st.sampled_from(["10", "-3", "2.5", "1e5", "1e400", "9" * 400, " 10", "ten", "x", "",
                     '{"a": 1}', '{"match": {"a": 1}, "size": "2"}', "[1, 2]", '["0.5", 1]',
                     "[" * 70 + "]" * 70, '{"query": {"m": 1}}', "null", "true"]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=5)
    ),
    max_leaves=14,
)
arguments = st.dictionaries(st.sampled_from(NAMES), values, max_size=6)


def outcome(repair: Any, args: dict[str, Any], schema: Any) -> Any:
    try:
        repaired, repairs = repair(args, schema)
    except TooDeep as exc:
        return "TooDeep", exc.path, exc.limit
    return repaired, list(repairs)


# ---------------------------------------------------------------- properties


@settings(max_examples=EXAMPLES)
@given(schema=top_schemas, args=arguments)
def test_the_compiled_repairs_are_mains(schema: dict[str, Any], args: dict[str, Any]) -> None:
    before = copy.deepcopy(args)
    assert outcome(repair_arguments, args, schema) == outcome(old_repair_arguments, args, schema)
    assert args == before  # the arguments given are never changed


REGISTRY = load_registry()


@settings(max_examples=EXAMPLES)
@given(tool=st.sampled_from(REGISTRY.names), args=arguments, data=st.data())
def test_the_bundled_tools_repairs_are_mains(tool: str, args: dict[str, Any], data: Any) -> None:
    schema = REGISTRY[tool].schema
    args = {
        **args,
        **data.draw(st.dictionaries(st.sampled_from(list(schema["properties"])), values)),
    }
    assert outcome(repair_arguments, args, schema) == outcome(old_repair_arguments, args, schema)


@settings(max_examples=EXAMPLES // 2)
@given(schema=top_schemas, args=arguments)
def test_what_the_schema_accepts_needs_no_walk(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    """`typed=True` (a `FastCheck` of the schema said yes) repairs as the full walk does."""
    if compile_check(schema) is None or not jsonschema.Draft202012Validator(schema).is_valid(args):
        return
    try:
        typed = repair_arguments(args, schema, typed=True)
    except TooDeep:  # pragma: no cover - a walk that decodes would have found a type error
        raise AssertionError("the typed repair decoded a string") from None
    assert (typed[0], list(typed[1])) == outcome(old_repair_arguments, args, schema)


@settings(max_examples=EXAMPLES // 2)
@given(schema=top_schemas, args=arguments)
def test_repairs_that_make_no_new_value_keep_the_bounds(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    """Where `new_values` is false, arguments within the bounds stay within them (so that
    `validate_arguments` need not walk them again)."""
    if value_problem(args, decoded=True) is not None:
        return
    try:
        repaired, repairs = repair_arguments(args, schema)
    except TooDeep:
        return
    if not repairs.new_values:
        assert value_problem(repaired) is None


def _tools(tmp_path: Path, properties: dict[str, Any]) -> Any:
    """A registry of one tool `t` of these properties, without checks of its own."""
    path = tmp_path / "tools.json"
    schema = {"type": "object", "properties": properties}
    path.write_text(
        json.dumps([{"type": "function", "function": {"name": "t", "parameters": schema}}])
    )
    return load_registry(str(path))


def test_a_value_a_repair_makes_is_bounded_again(tmp_path: Path) -> None:
    """A number read from text can be infinite, or too large to send; a JSON string decoded,
    or `queries` put in an array, can nest too deep: each is refused as before."""
    registry = _tools(tmp_path, {
        "x": {"type": "number"}, "n": {"type": "integer"}, "o": {"type": "object"},
        "queries": {"type": "array", "items": {"type": "object"}},
    })  # fmt: skip
    cases = {
        "x": ("1e400", "$.x", "must be a finite number; got inf"),
        "n": ("9" * 400, "$.n", "is too large a number to send"),
        "o": ('{"a": "\\ud800"}', "$.o.a", "holds a lone surrogate"),
    }
    for key, (text, path, message) in cases.items():
        result = registry.validate("t", {key: text}, repair=True)
        assert not result.ok and result.arguments is None and len(result.repairs) == 1, key
        assert result.problems[0].path == path and result.problems[0].message.startswith(message)
    deep: Any = {}
    for _ in range(61):  # the arguments, `queries`, 61 levels and `{}`: 64, the limit
        deep = {"d": deep}
    assert value_problem({"queries": {"query": deep}}) is None
    result = registry.validate("t", {"queries": {"query": deep}}, repair=True)
    assert result.repairs == ("$.queries: one sub-query object → array of one",)
    assert not result.ok and result.arguments is None
    assert result.problems[0].message == "is nested deeper than 64 levels"


def test_the_repairs_of_a_schema_are_compiled_once_and_kept_bounded() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    kept = repairer(schema)
    assert repairer(schema) is kept
    assert repair_arguments({"n": "3"}, schema) == ({"n": 3}, ['$.n: "3" → 3'])
    others = [{"type": "object"} for _ in range(KEPT_SCHEMAS)]  # (held: no id is reused)
    for other in others:
        repairer(other)
    assert repairer(schema) is not kept  # forgotten, and compiled again


def test_a_schema_that_holds_itself_is_walked_as_deep_as_the_value() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    schema["properties"]["child"] = schema
    args = {"child": {"child": {"n": "4"}}, "n": "1"}
    assert repair_arguments(args, schema) == old_repair_arguments(args, schema)
