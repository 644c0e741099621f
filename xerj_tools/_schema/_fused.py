"""The dispatcher's one pass over the typical valid call: decoded, checked, normalised.

Between one dispatch and the next the HTTP stack evicts the validation code and data from the
CPU caches, so there each Python call and each object touched costs more than in a loop. The
general path (`validate_arguments`, then `integral_numbers`) asks the fast schema check (a
`FastCheck`, jsonschema-rs after 100 calls), then the tool's quick yes, then makes a
`ValidationResult`, then walks the arguments again for integral numbers. For a tool whose schema
is an object of plain typed properties, `quick_plan` compiles all of that into one table and
`checked_arguments` does it in one pass: each argument's exact Python type against the types its
property allows, the required ones present, then the tool's quick yes (the same function the
general path asks), and returns the decoded dict itself.

It only ever shortcuts "valid": anything the table does not settle at a glance (an unknown
argument, a float for an integer, a type the table does not hold, a quick yes that says no, text
the quick decode leaves to the full one) goes to the general path, which decides and explains,
with the quick decode handed on rather than done again. So where `checked_arguments` answers, the
general path answers the same arguments with no problem and no repair
(tests/schema/test_fused.py holds the two to that on random and mutated arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._problems import ValidationResult
from . import _plan
from ._fastcheck import ANNOTATIONS, EXACT_TYPES, Predicate, compile_check
from ._quick import quick_object
from ._validation import _integer_only, integral_numbers, validate_arguments, validate_decoded

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["Table", "Spec", "checked_arguments", "general_path", "quick_plan"]


# Table: (required names, {name: exact types allowed}, {name: its check}, the properties whose
# integral numbers can change, quick yes). A property in the second table has a plain `type` (no
# other keyword that constrains); in the third, its compiled check (`compile_check`); where its
# schema types something as an integer within (a nested `items` or `properties`), it is also in
# the fourth, (name, schema), and `integral_numbers` visits it after the quick yes.
Table = tuple[
    frozenset[str],
    dict[str, frozenset[type]],
    dict[str, Predicate],
    tuple[tuple[str, Mapping[str, Any]], ...],
    Predicate,
]


class Spec(Protocol):
    """What `checked_arguments` reads of a `ToolSpec` (`_registry` imports this module)."""

    @property
    def schema(self) -> Mapping[str, Any]: ...
    @property
    def fast_check(self) -> Predicate | None: ...
    @property
    def plan(self) -> _plan.Plan: ...
    @property
    def quick_plan(self) -> Table | None: ...
    def _validator(self) -> Validator: ...


# What the object's own schema may hold (an unknown argument is left to the general path anyway,
# so `additionalProperties` changes nothing here; `$schema` is a draft `fast` reads as the plan).
_OBJECT = ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}


def quick_plan(
    schema: Mapping[str, Any], fast: Predicate | None, yes: Predicate | None
) -> Table | None:
    """The one-pass table of a tool, or None where the general path must always run: no compiled
    schema check (`fast` None: the schema steps outside its subset), no quick yes (`yes` None:
    the checks always run), or a schema that is no object of named properties. `yes` is asked
    of arguments the table found among the schema's properties (`_plan.Table.within`)."""
    if fast is None or yes is None or schema.get("type") != "object":
        return None
    if not set(schema) <= _OBJECT:
        return None  # an `enum` or the like on the object itself: the general path decides
    properties = schema.get("properties")
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) and name in properties for name in required):
        return None  # a required name no property describes: the general path explains
    flat: dict[str, frozenset[type]] = {}
    nested: dict[str, Predicate] = {}
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            return None
        declared = sub.get("type")
        names = [declared] if isinstance(declared, str) else declared
        plain = set(sub) - {"type"} <= ANNOTATIONS
        if plain and isinstance(names, list) and names and all(_plain_type(n) for n in names):
            flat[name] = frozenset().union(*(EXACT_TYPES[n] for n in names))
            continue
        check = compile_check(sub)
        if check is None:
            return None
        nested[name] = check
    changing = tuple(
        (name, sub)
        for name, sub in properties.items()
        if name in nested and (_integer_only(sub) or _holds_integer(sub))
    )
    return frozenset(required), flat, nested, changing, yes


def _holds_integer(schema: Any) -> bool:
    """Whether `integral_numbers` can change a value of `schema` nested in an object: where
    something within it (not itself: an integer property takes no float here) is an integer."""
    if not isinstance(schema, Mapping):
        return False
    properties = schema.get("properties")
    inner = [*properties.values()] if isinstance(properties, Mapping) else []
    if isinstance(schema.get("items"), Mapping):
        inner.append(schema["items"])
    return any(_integer_only(sub) or _holds_integer(sub) for sub in inner)


def _plain_type(name: object) -> bool:
    return isinstance(name, str) and name in EXACT_TYPES


def checked_arguments(
    spec: Spec, raw: object, repair: bool
) -> tuple[dict[str, Any], tuple[str, ...]] | ValidationResult:
    """The validated arguments of a call (integral numbers made ints) and the repairs made, or
    the `ValidationResult` that says what is wrong. The typical valid call is settled by the
    tool's `Table` in one pass; any other by `validate_arguments` and `integral_numbers`."""
    value = quick_object(raw) if type(raw) is str else None
    plan = spec.quick_plan
    if value is not None and plan is not None:
        required, flat, nested, changing, yes = plan
        if value.keys() >= required:
            for name, item in value.items():
                kinds = flat.get(name)
                if kinds is None:
                    check = nested.get(name)
                    if check is None or not check(item):
                        break
                elif type(item) not in kinds:
                    break
            else:
                if yes(value):
                    return (_integral(value, changing) if changing else value), ()
    result = general_path(spec, raw, value, repair)
    if not result.ok or result.arguments is None:
        return result
    # 5e3 is a valid integer to JSON Schema: make it 5000 before any cap or handler looks.
    return integral_numbers(result.arguments, spec.schema), result.repairs


def general_path(
    spec: Spec, raw: object, value: dict[str, Any] | None, repair: bool
) -> ValidationResult:
    """`validate_arguments` of `raw`, with `value`, its quick decode, handed on (None: not
    decoded quickly, the full decode decides)."""
    plan = spec.plan
    if value is not None:
        return validate_decoded(
            spec._validator,
            value,
            plan.explain,
            repair=repair,
            fast=spec.fast_check,
            yes=plan.admits,
        )
    return validate_arguments(
        spec._validator, raw, plan.explain, repair=repair, fast=spec.fast_check, yes=plan.admits
    )


def _integral(
    value: dict[str, Any], changing: tuple[tuple[str, Mapping[str, Any]], ...]
) -> dict[str, Any]:
    """`integral_numbers` of `value` where only the `changing` properties can change (an integer
    property of the object itself holds an int here already)."""
    changed: dict[str, Any] = {}
    for name, sub in changing:
        if name in value:
            item = value[name]
            new = integral_numbers(item, sub)
            if new is not item:
                changed[name] = new
    return {**value, **changed} if changed else value
