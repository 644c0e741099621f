"""The tool registry: loads a tools file, checks it once, and hands definitions to the model APIs."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._exceptions import ToolDefinitionError
from .._problems import Check, ValidationResult
from .._shapes import ANTHROPIC, CHAT, GEMINI, RESPONSES
from ..tools._limits import Limit
from . import _fused
from ._fastcheck import fast_check as _compiled_check
from ._fused import general_path
from ._plan import Plan, plan_of

# jsonschema is imported when a schema is first checked or a call fails. The openai SDK's types
# for `tools=` (openai 1.66 and newer) let a caller's type checker accept
# `create(tools=registry.chat_tools())`; neither is imported at run time.
if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.responses import FunctionToolParam

__all__ = ["ToolRegistry", "ToolSpec", "as_limits", "load_registry", "registry_from_definitions"]


def as_limits(given: Sequence[Limit | Check]) -> tuple[Limit, ...]:
    """`given` as limits: a plain check becomes ``Limit(problems=check)``, a Python-only rule."""
    return tuple(
        item if isinstance(item, Limit) else Limit(problems=item, kind=_name_of(item))
        for item in given
    )


def _name_of(check: Any) -> str:
    return str(getattr(check, "__qualname__", None) or type(check).__name__)


# The name rule of both OpenAI APIs (and of Anthropic's): letters, digits, `_` and `-`, 1-64.
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# "Given here as boolean; the XERJ API also accepts array, string." The published definitions
# declare one JSON type per parameter and name the others in prose; validation accepts them all.
_ALSO_ACCEPTS = re.compile(r"also accepts ([a-z]+(?:\s*,\s*[a-z]+)*)", re.IGNORECASE)
_JSON_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its definition as published, and the validator for its arguments.

    `schema` is the schema the arguments are validated against (`parameters`, widened where the
    descriptions promise more types); `validator`, jsonschema's compiled form of it, is built on
    first use: a valid call passes `fast_check` alone and never needs it.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    definition: Mapping[str, Any] = field(repr=False)
    schema: Mapping[str, Any] = field(repr=False, compare=False)
    # the limits beyond JSON Schema (`xerj_tools.tools._limits`), compiled once as `plan`
    limits: tuple[Limit, ...] = field(default=(), repr=False, compare=False)
    strict: bool | None = None
    fast_check: Callable[[Any], bool] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def validator(self) -> Validator:
        """jsonschema's validator for `schema` (its draft's class), compiled once."""
        return _validator_class(self.schema)(self.schema)

    def _validator(self) -> Validator:
        return self.validator

    @functools.cached_property
    def plan(self) -> Plan:
        """The tool's limits compiled once: their words, their quick yes, their strict schema
        (`xerj_tools._schema._plan`)."""
        return plan_of(self.limits, self.parameters)

    @functools.cached_property
    def quick_plan(self) -> _fused.Table | None:
        """The one pass the dispatcher gives the typical valid call (`_fused`), or None."""
        return _fused.quick_plan(self.schema, self.fast_check, self.plan.within)

    @property
    def checks(self) -> tuple[Check, ...]:
        """Each limit's `problems`, in order: what explains a refused call."""
        return self.plan.checks

    def validate(self, arguments: object, *, repair: bool = False) -> ValidationResult:
        """Validate what a model emitted for this tool (see `ToolRegistry.validate`)."""
        return general_path(self, arguments, None, repair)

    def _validate_decoded(self, value: dict[str, Any], *, repair: bool = False) -> ValidationResult:
        """`validate` of arguments already decoded as `validate` decodes text (internal: the
        offline lane hands over its decode). `value` must be what `_quick.quick_object` makes of
        the text, a dict of JSON values within the bounds, which are not looked at again; then
        the result is `validate`'s for the text (tests/offline/test_lane.py)."""
        return general_path(self, None, value, repair)

    def chat_tool(self) -> dict[str, Any]:
        """The nested Chat Completions form: ``{"type": "function", "function": {...}}``."""
        return CHAT.definition(self)

    def responses_tool(self) -> dict[str, Any]:
        """The flat Responses API form: ``{"type": "function", "name": ..., ...}``."""
        return RESPONSES.definition(self)

    def anthropic_tool(self) -> dict[str, Any]:
        """The Anthropic Messages form: ``{"name", "description", "input_schema"}``."""
        return ANTHROPIC.definition(self)


class ToolRegistry:
    """The set of tools a model may call, each validated with a validator compiled once.

    Build one with `load_registry`. The registry is generic: any OpenAI-style tools file works,
    and checks beyond JSON Schema can be attached per tool name.
    """

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ToolDefinitionError(f"duplicate tool name {spec.name!r}", tool_name=spec.name)
            self._specs[spec.name] = spec

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._specs)!r})"

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    def with_limits(self, limits: Mapping[str, Sequence[Limit | Check]]) -> ToolRegistry:
        """This registry with the limits of the named tools replaced (the same validators); a
        plain check stands for ``Limit(problems=check)`` (no quick yes: it runs on every call)."""
        if not limits:
            return self
        return ToolRegistry(
            [
                replace(spec, limits=as_limits(limits[spec.name])) if spec.name in limits else spec
                for spec in self._specs.values()
            ]
        )

    def with_definitions(self, definitions: Sequence[Mapping[str, Any]]) -> ToolRegistry:
        """This registry with more tools: function definitions (nested or flat form), each
        schema checked; one of an existing name replaces it in place."""
        if not definitions:
            return self
        specs = dict(self._specs)
        for i, definition in enumerate(definitions):
            spec = _spec_from_definition(dict(definition), len(specs) + i, {})
            specs[spec.name] = spec
        return ToolRegistry(list(specs.values()))

    def chat_tools(self) -> list[ChatCompletionToolParam]:
        """Definitions to pass as ``tools=`` to ``client.chat.completions.create`` (plain dicts,
        typed as the openai SDK's ``ChatCompletionToolParam``)."""
        return cast("list[ChatCompletionToolParam]", CHAT.definitions(self))

    def responses_tools(self) -> list[FunctionToolParam]:
        """Definitions to pass as ``tools=`` to ``client.responses.create`` (plain dicts, typed
        as the openai SDK's ``FunctionToolParam``)."""
        return cast("list[FunctionToolParam]", RESPONSES.definitions(self))

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """Definitions to pass as ``tools=`` to Anthropic's ``client.messages.create``."""
        return ANTHROPIC.definitions(self)

    def gemini_tools(self) -> list[dict[str, Any]]:
        """``[{"functionDeclarations": [...]}]``: one Gemini tool holding every declaration, each
        with its whole JSON Schema as ``parametersJsonSchema``; pass as
        ``types.GenerateContentConfig(tools=...)`` (google-genai) or ``"tools"`` (REST)."""
        return [{"functionDeclarations": GEMINI.definitions(self)}]

    def validate(self, name: str, arguments: object, *, repair: bool = False) -> ValidationResult:
        """Validate what a model emitted for tool `name`: the raw JSON string or a decoded dict.

        Returns every problem at once, each with a JSON path. An unknown tool name is reported
        as a problem at ``$`` rather than raised. With `repair`, mistakes that have exactly one
        reading under the schema are repaired first, and listed in ``result.repairs``.
        """
        spec = self._specs.get(name)
        if spec is None:
            return ValidationResult.failure(
                "$", f"unknown tool {name!r}; known tools: {', '.join(self._specs)}"
            )
        return spec.validate(arguments, repair=repair)


def _widen(schema: Any) -> Any:
    """Return a copy of `schema` whose properties accept the types their descriptions promise."""
    if isinstance(schema, list):
        return [_widen(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _widen(value) for key, value in schema.items()}
    description = schema.get("description")
    declared = schema.get("type")
    if isinstance(description, str) and isinstance(declared, str):
        match = _ALSO_ACCEPTS.search(description)
        if match:
            extra = [t.strip().lower() for t in match.group(1).split(",")]
            types = [declared] + [t for t in extra if t in _JSON_TYPES and t != declared]
            # The items of a widened array (`source` field names, `sort` clauses) are checked
            # by the tool's own checks, which know what each one means.
            out["type"] = types
    return out


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    import jsonschema

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def check_schema(name: str, schema: dict[str, Any]) -> None:
    """Raise `ToolDefinitionError` if `schema` is no valid JSON Schema of its draft."""
    import jsonschema

    try:
        _validator_class(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: invalid JSON Schema: {exc.message}", tool_name=name
        ) from None


def _spec_from_definition(
    definition: Any,
    index: int,
    checks: Mapping[str, Sequence[Limit | Check]],
    *,
    trusted: bool = False,
) -> ToolSpec:
    if not isinstance(definition, dict):
        raise ToolDefinitionError(f"tool #{index} is not an object")
    if definition.get("type") == "function" and isinstance(definition.get("function"), dict):
        function = definition["function"]
    elif definition.get("type") == "function" and "name" in definition:
        # The flat Responses form is accepted too; it is stored in the nested form.
        function = {k: v for k, v in definition.items() if k != "type"}
        definition = {"type": "function", "function": function}
    else:
        raise ToolDefinitionError(
            f"tool #{index} is not a function tool ({{'type': 'function', 'function': {{...}}}})"
        )
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise ToolDefinitionError(
            f"tool #{index} has an invalid name {name!r}: names match ^[a-zA-Z0-9_-]{{1,64}}$",
            tool_name=name if isinstance(name, str) else None,
        )
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, dict):
        raise ToolDefinitionError(f"tool {name!r}: parameters must be an object", tool_name=name)
    widened = _widen(parameters)
    if not trusted:
        check_schema(name, widened)
    description = function.get("description", "")
    strict = function.get("strict")
    return ToolSpec(
        name=name,
        description=description if isinstance(description, str) else "",
        parameters=parameters,
        definition=definition,
        schema=widened,
        limits=as_limits(checks.get(name, ())),
        strict=strict if isinstance(strict, bool) else None,
        fast_check=_compiled_check(widened),
    )


def load_registry(
    path: str | PathLike[str] | None = None,
    *,
    checks: Mapping[str, Sequence[Limit | Check]] | None = None,
) -> ToolRegistry:
    """Load a tools file (the bundled ``tools.json`` by default) into a `ToolRegistry`.

    Every schema of your file is checked here, once; a bad file raises `ToolDefinitionError`.
    The bundled file's schemas are not re-checked in each process: a test holds them valid.
    `checks` adds per-tool limits beyond JSON Schema (each a `Limit`, or a plain check that
    runs on every call: `ToolSpec.plan.why` says so); the library's own tools' limits
    (`xerj_tools.tools`) are attached by default, and a tool of the same name in your own file
    gets them too.
    """
    if path is None and checks is None:
        return _bundled_registry()
    return _load(path, checks)


@functools.cache
def _bundled_registry() -> ToolRegistry:
    # The bundled file never changes while the process runs and a registry is never mutated
    # (definitions are handed out as copies), so it is read and its schemas checked once.
    return _load(None, None)


def _load(
    path: str | PathLike[str] | None, checks: Mapping[str, Sequence[Limit | Check]] | None
) -> ToolRegistry:
    if path is None:
        from importlib import resources  # only for the bundled file; ~10 ms to import

        text = resources.files("xerj_tools").joinpath("tools.json").read_text("utf-8")
        source = "bundled tools.json"
    else:
        text = Path(path).read_text("utf-8")
        source = str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolDefinitionError(f"{source} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        raise ToolDefinitionError(f"{source} must hold a JSON array of tool definitions")
    return _registry_of(data, checks, trusted=path is None)


def registry_from_definitions(definitions: Sequence[Any]) -> ToolRegistry:
    """A registry of tool definitions given as data (a fine-tuning example's ``tools``), checked
    as a tools file is; the XERJ tools' own checks are attached to tools of their names."""
    return _registry_of(list(definitions), None, trusted=False)


def _registry_of(
    data: list[Any], checks: Mapping[str, Sequence[Limit | Check]] | None, *, trusted: bool
) -> ToolRegistry:
    from ..tools import XERJ_TOOLS

    specs = [_spec_from_definition(d, i, checks or {}, trusted=trusted) for i, d in enumerate(data)]
    return ToolRegistry(
        [
            replace(
                spec,
                limits=XERJ_TOOLS[spec.name].limits_for(spec.parameters),
            )
            if spec.name in XERJ_TOOLS and spec.name not in (checks or {})
            else spec
            for spec in specs
        ]
    )
