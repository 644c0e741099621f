"""Lint a tools file, report what blocks strict mode per target, and convert definitions."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._schema._registry import TOOL_NAME, ToolRegistry, _validator_class
from .._shapes import SHAPES, shape_named

__all__ = ["TARGETS", "Finding", "convert", "lint_tools", "strict_blockers"]

# Each wire shape's definitions, Gemini's OpenAPI subset, and MCP's.
_SHAPE_NAMES = tuple(sorted(shape.name for shape in SHAPES))
TARGETS: tuple[str, ...] = (*_SHAPE_NAMES, "gemini-subset", "mcp")
# The targets with a strict mode (OpenAI's structured outputs, Anthropic's strict tool use).
_STRICT = tuple(name for name in _SHAPE_NAMES if name != "gemini")


@dataclass(frozen=True)
class Finding:
    level: Literal["error", "warning", "strict"]
    tool: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.tool}: {self.message}"


def _function(definition: Any) -> Mapping[str, Any] | None:
    if not isinstance(definition, Mapping) or definition.get("type") != "function":
        return None
    inner = definition.get("function")
    if isinstance(inner, Mapping):
        return inner
    return definition if "name" in definition else None


def strict_blockers(schema: Any, path: str = "$") -> Iterator[str]:
    """Why `schema` cannot be sent with ``strict: true`` to OpenAI's structured outputs.

    Every object needs ``additionalProperties: false`` and declared `properties`, each of them
    listed in `required`; every array needs `items`.
    """
    if not isinstance(schema, Mapping):
        return
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    if "object" in types:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            if path != "$":
                yield f"{path}: a free-form object (no properties) cannot be strict"
        else:
            if schema.get("additionalProperties") is not False:
                yield f"{path}: needs additionalProperties: false"
            required = set(schema.get("required") or [])
            optional = [k for k in properties if k not in required]
            if optional:
                yield f"{path}: optional properties must become required (nullable): {', '.join(optional)}"
            for key, sub in properties.items():
                yield from strict_blockers(sub, f"{path}.{key}")
    if "array" in types:
        if not isinstance(schema.get("items"), Mapping):
            yield f"{path}: an array needs `items`"
        else:
            yield from strict_blockers(schema["items"], f"{path}[]")


def lint_tools(data: Any, handlers: Iterable[str] = (), *, source: str = "<data>") -> list[Finding]:
    """Every problem of a tools file at once: shape, names, duplicates, schemas, handlers,
    and (as ``strict`` findings) what keeps each tool from strict mode, per target. A problem of
    the whole file is named by `source` (the command line gives the file's path, or
    ``<stdin>``)."""
    known = set(handlers)
    if isinstance(data, Mapping) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        return [Finding("error", source, "the file must hold a JSON array of tool definitions")]
    findings: list[Finding] = []
    seen: set[str] = set()
    for i, definition in enumerate(data):
        function = _function(definition)
        if function is None:
            shape = "not a function tool ({'type': 'function', 'function': {...}})"
            findings.append(Finding("error", f"#{i}", shape))
            continue
        name = function.get("name")
        label = name if isinstance(name, str) else f"#{i}"
        said: list[tuple[Any, str]] = []  # (level, message) of this tool
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            said.append(("error", "the name must match ^[a-zA-Z0-9_-]{1,64}$"))
        elif name in seen:
            said.append(("error", "duplicate name"))
        seen.add(label)
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if isinstance(parameters, Mapping):
            cls = _validator_class(parameters)
            for error in cls(cls.META_SCHEMA).iter_errors(parameters):
                where = "/".join(str(p) for p in error.absolute_path) or "(root)"
                said.append(("error", f"invalid JSON Schema at {where}: {error.message}"))
        else:
            said.append(("error", "parameters must be a JSON Schema object"))
        if not function.get("description"):
            said.append(("warning", "no description: the model has only the name to go on"))
        if isinstance(name, str) and name not in known:
            said.append(
                ("warning", "no built-in handler: pass handlers={name: ...} to the dispatcher")
            )
        blockers = list(strict_blockers(parameters)) if isinstance(parameters, Mapping) else []
        said += [("strict", f"[{target}] {reason}") for target in _STRICT for reason in blockers]
        findings += [Finding(level, label, message) for level, message in said]
        findings += _gemini_findings(label, parameters)
        mcp = "[mcp] MCP has no strict mode; the schema is sent as inputSchema"
        findings.append(Finding("strict", label, mcp))
    return findings


def _gemini_findings(label: str, parameters: Any) -> list[Finding]:
    """Gemini has no strict mode; its declarations carry the whole schema
    (``parametersJsonSchema``), and what the OpenAPI subset (``parameters``) would lose."""
    from .._shapes._gemini_schema import gemini_subset

    found = [
        Finding(
            "strict",
            label,
            "[gemini] Gemini has no strict mode; the schema is sent whole as parametersJsonSchema",
        )
    ]
    if isinstance(parameters, Mapping):
        found += [
            Finding("strict", label, f"[gemini-subset] {note}")
            for note in gemini_subset(parameters)[1]
        ]
    return found


def convert(registry: ToolRegistry, target: str) -> list[dict[str, Any]]:
    """The definitions in the form `target` expects (Gemini: the function declarations, to
    go in ``[{"functionDeclarations": [...]}]``)."""
    if target == "gemini-subset":
        from .._shapes import GEMINI

        return [GEMINI.subset_definition(spec) for spec in registry]
    if target != "mcp":
        return shape_named(target).definitions(registry)
    # MCP is not a wire shape of calls here (the MCP server answers through its own SDK).
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": copy.deepcopy(dict(spec.parameters)),
        }
        for spec in registry
    ]
