"""A fast yes/no check for the plain subset of JSON Schema that tool definitions use.

jsonschema's `is_valid` walks its keyword machinery on every call (about 23 µs for a typical
`xerj_search` call). Tool schemas mostly use `type`, `properties`, `required`, `items` and
`enum`; for such a schema this module compiles a check that answers "valid?" in a microsecond
or a few. It is only ever a shortcut to "valid": when it says no, or when a schema uses any
other keyword, jsonschema decides and explains (property tests, and the JSON-Schema-Test-Suite's
cases for these keywords, check that all three agree).

Two compiled forms, chosen by measurement (docs/performance.md, "Offline validation"): with the
``fast`` extra, `jsonschema-rs` (a Rust validator: 0.4-0.8 µs for a typical `xerj_search` call,
against 5-7 µs for the Python closure below and 4.3 µs for fastjsonschema's generated code on the
same call); without it, the closure. jsonschema-rs costs 25-30 ms to import, so a check starts
as the closure and switches after `COMPILE_AFTER` calls: a process that validates a handful of
calls never pays the import, one that validates millions pays it once. Where jsonschema-rs says
no, or cannot read a value (a key that is not a string), the closure answers: the two agree on
every JSON value, and the closure also on what JSON cannot hold (an infinite float).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = [
    "COMPILE_AFTER", "KEPT_SCHEMAS", "FastCheck", "compile_check", "compiled_backend",
    "fast_check", "per_schema",
]  # fmt: skip

Predicate = Callable[[Any], bool]
"""Says whether one value is valid; yes/no, no explanation (jsonschema explains)."""
ANNOTATIONS = frozenset({"description", "title", "examples", "$comment", "default"})
_SUPPORTED = (
    frozenset({"type", "properties", "required", "items", "enum", "additionalProperties"})
    | ANNOTATIONS
)

# Drafts whose reading of the supported keywords the checks follow (6 and later: 1.0 is an
# integer; `items` one schema, or an array jsonschema reads).
_DRAFTS = frozenset(
    f"{base}{end}"
    for base in (
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema",
    )
    for end in ("", "#")
)


def _number(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


TYPES: dict[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _number,
    "integer": _integer,
}
"""Each `type` as jsonschema's type checker reads it (draft 4 and later: an integral float is an
integer; a `numbers.Number` that is no bool is a number)."""

EXACT_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}), "array": frozenset({list}), "string": frozenset({str}),
    "boolean": frozenset({bool}), "null": frozenset({type(None)}),
    "integer": frozenset({int}), "number": frozenset({int, float}),
}  # fmt: skip
"""A JSON type's values as decoded JSON holds them, by exact type, each passing its `TYPES` test
without a look at the value: a bool is no integer, nor a float (5.0 is one to JSON Schema)."""


def compile_check(schema: Any) -> Predicate | None:
    """A closure that returns True only for instances `schema` accepts, or None when the schema
    steps outside the supported subset."""
    if schema is True or (isinstance(schema, Mapping) and not schema):
        return lambda v: True
    if not isinstance(schema, Mapping) or not set(schema) - {"$schema"} <= _SUPPORTED:
        return None
    if "$schema" in schema and schema["$schema"] not in _DRAFTS:
        return None  # draft 4 counts 1.0 as no integer, say: jsonschema decides
    checks: list[Predicate] = []
    if "type" in schema:  # (a `"type": null` is no schema's: jsonschema decides)
        declared = schema["type"]
        names = [declared] if isinstance(declared, str) else declared
        if not isinstance(names, list) or not all(isinstance(n, str) and n in TYPES for n in names):
            return None
        found = [TYPES[n] for n in names]
        if len(found) == 1:
            checks.append(found[0])
        else:
            checks.append(lambda v: any(c(v) for c in found))
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            return None
        allowed = frozenset(options)
        checks.append(lambda v: isinstance(v, str) and v in allowed)
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return None
    compiled: dict[str, Predicate] = {}
    for key, sub in properties.items():
        check = compile_check(sub)
        if check is None:
            return None
        compiled[key] = check
    required = schema.get("required", [])
    if not isinstance(required, list):
        return None
    extra = schema.get("additionalProperties", True)
    extra_check = compile_check(extra) if extra is not False else None
    if extra is not False and extra_check is None:
        return None
    if compiled or required or extra is not True:

        def object_check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for key in required:
                if key not in v:
                    return False
            for key, value in v.items():
                check = compiled.get(key)
                if check is not None:
                    if not check(value):
                        return False
                elif extra is False or (extra_check is not None and not extra_check(value)):
                    return False
            return True

        checks.append(object_check)
    if "items" in schema:
        item_check = compile_check(schema["items"])
        if item_check is None:
            return None
        checks.append(lambda v: not isinstance(v, list) or all(item_check(i) for i in v))
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    return lambda v: all(c(v) for c in checks)


COMPILE_AFTER = 100
"""Calls of one check after which it switches to jsonschema-rs (when installed)."""


def compiled_backend() -> Any:
    """jsonschema-rs's module where it is installed (the ``fast`` extra) and not turned off with
    ``XERJ_TOOLS_FASTCHECK=python``, else None."""
    if os.environ.get("XERJ_TOOLS_FASTCHECK", "").lower() == "python":
        return None
    try:
        import jsonschema_rs
    except ImportError:
        return None
    return jsonschema_rs


class FastCheck:
    """A compiled check of one schema: the closure of `compile_check`, replaced by jsonschema-rs
    (where installed) after `COMPILE_AFTER` calls, or at once with `compile_now`."""

    __slots__ = ("_calls", "_compiled", "backend", "check", "is_valid", "pure", "schema")

    def __init__(self, schema: Mapping[str, Any], pure: Predicate) -> None:
        self.schema = schema
        self.pure = pure
        self.check: Predicate = self._counting
        self._calls = 0
        self._compiled = False
        self.backend = "python"
        self.is_valid: Predicate | None = None  # jsonschema-rs's own, once compiled

    def __call__(self, value: Any) -> bool:
        return self.check(value)

    def _counting(self, value: Any) -> bool:
        self._calls += 1
        if self._calls >= COMPILE_AFTER:
            self.compile_now()
        return self.pure(value)

    def compile_now(self) -> FastCheck:
        """Switch to jsonschema-rs now, where it is installed; the closure stays otherwise."""
        if self._compiled:
            return self
        self._compiled = True
        self.check = self.pure
        module = compiled_backend()
        if module is None:
            return self
        try:
            is_valid = module.validator_for(_plain(self.schema)).is_valid
        except Exception:  # a schema it reads otherwise: the closure stays
            return self
        pure = self.pure

        def check(value: Any) -> bool:
            try:
                if is_valid(value):
                    return True
            except Exception:  # a value it cannot convert (a key that is not a string)
                pass
            return pure(value)

        self.check = check
        self.is_valid = is_valid
        self.backend = "jsonschema-rs"
        return self


def _plain(schema: Any) -> Any:
    """`schema` as plain dicts and lists (jsonschema-rs reads no other mapping type)."""
    if isinstance(schema, Mapping):
        return {str(k): _plain(v) for k, v in schema.items()}
    if isinstance(schema, (list, tuple)):
        return [_plain(v) for v in schema]
    return schema


def fast_check(schema: Any) -> FastCheck | None:
    """`compile_check` of `schema` as a `FastCheck`, or None when the schema steps outside the
    supported subset."""
    pure = compile_check(schema)
    return None if pure is None else FastCheck(schema, pure)


_Built = TypeVar("_Built")

KEPT_SCHEMAS = 64
"""How many schemas' compiled forms `per_schema` keeps. Bounded: a process may build a registry
per input record (a fine-tuning file's examples each bring their tools)."""


def per_schema(build: Callable[[Any], _Built], most: int = KEPT_SCHEMAS) -> Callable[[Any], _Built]:
    """`build(schema)`, made on a schema's first call and kept for up to `most` schemas, by id
    (each entry holds its schema, so that the id is not another's)."""
    kept: dict[int, tuple[Any, _Built]] = {}

    def get(schema: Any) -> _Built:
        found = kept.get(id(schema))
        if found is None or found[0] is not schema:
            if len(kept) >= most:
                kept.clear()  # (one step, safe beside another thread's look-up)
            found = kept[id(schema)] = (schema, build(schema))
        return found[1]

    return get
