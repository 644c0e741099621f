"""A fast yes/no check for the plain subset of JSON Schema that tool definitions use.

jsonschema's `is_valid` walks its keyword machinery on every call (about 23 µs for a typical
`xerj_search` call). Tool schemas mostly use `type`, `properties`, `required`, `items` and
`enum`; for such a schema this module compiles a closure that answers "valid?" in a few
microseconds. It is only ever a shortcut to "valid": when it says no, or when a schema uses any
other keyword, jsonschema decides and explains (a property test checks that both agree).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["compile_check"]

Predicate = Callable[[Any], bool]
"""Says whether one value is valid; yes/no, no explanation (jsonschema explains)."""
_IGNORED = frozenset({"description", "title", "examples", "$comment", "default"})
_SUPPORTED = (
    frozenset({"type", "properties", "required", "items", "enum", "additionalProperties"})
    | _IGNORED
)


def _type_check(name: str) -> Predicate | None:
    if name == "object":
        return lambda v: isinstance(v, dict)
    if name == "array":
        return lambda v: isinstance(v, list)
    if name == "string":
        return lambda v: isinstance(v, str)
    if name == "boolean":
        return lambda v: isinstance(v, bool)
    if name == "null":
        return lambda v: v is None
    if name == "number":
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if name == "integer":  # draft 4 and later count 5.0 as an integer
        return lambda v: (
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and v.is_integer())
        )
    return None


def compile_check(schema: Any) -> Predicate | None:
    """A closure that returns True only for instances `schema` accepts, or None when the schema
    steps outside the supported subset."""
    if schema is True or (isinstance(schema, Mapping) and not schema):
        return lambda v: True
    if not isinstance(schema, Mapping) or not set(schema) <= _SUPPORTED:
        return None
    checks: list[Predicate] = []
    declared = schema.get("type")
    if declared is not None:
        names = [declared] if isinstance(declared, str) else declared
        type_checks = [_type_check(n) for n in names] if isinstance(names, list) else [None]
        if any(c is None for c in type_checks):
            return None
        found = [c for c in type_checks if c is not None]
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
