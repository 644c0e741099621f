"""Argument validation: decode what the model emitted, check schema and limits, list every problem."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._bounds import TooDeep, loads, may_hold_surrogate, may_overflow, value_problem
from .._problems import Check, Problem, ValidationResult, json_path, json_type
from ._explain import explainer_of
from ._explain import preview as _preview
from ._fastcheck import per_schema
from ._quick import quick_object
from ._repair import repair_arguments

if TYPE_CHECKING:  # jsonschema is imported when a call first fails its fast check
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["decode_arguments", "integral_numbers", "validate_arguments", "validate_decoded"]


def _schema_problem(error: ValidationError) -> Problem:
    parts = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.message, str):
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return Problem(json_path([*parts, missing]), "is required")
    if error.validator == "type":
        expected = error.validator_value
        names = " or ".join(expected) if isinstance(expected, list) else str(expected)
        got = json_type(error.instance)
        hint = ""
        if got == "string" and isinstance(error.instance, str):
            hint = f" {_preview(error.instance)}"
        return Problem(json_path(parts), f"expected {names}, got {got}{hint}")
    if error.validator == "enum":
        options = ", ".join(json.dumps(v) for v in error.validator_value or ())  # type: ignore[union-attr]
        return Problem(
            json_path(parts), f"must be one of {options}; got {_preview(error.instance)}"
        )
    return Problem(json_path(parts), error.message)


def decode_arguments(raw: object) -> tuple[Any, Problem | None]:
    """Decode a model's `arguments` string. Returns the value, or a problem at ``$``.

    An empty string counts as ``{}`` (models send it for calls without arguments). NaN and
    Infinity, which Python's json module would accept, are refused: they are not JSON. So is
    text nested deeper than `MAX_ARGUMENT_DEPTH`, measured before decoding. Arguments that are
    neither text nor an object (a number, a list) cannot be decoded either.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, Problem("$", "arguments are not UTF-8 text")
    if not isinstance(raw, str):
        return None, Problem(
            "$",
            f"arguments must be a JSON object encoded as a string, got {json_type(raw)}",
        )
    if not raw.strip():
        return {}, None
    try:
        return loads(raw), None
    except TooDeep as exc:
        return None, Problem("$", f"arguments are {exc}; flatten the query")
    except ValueError as exc:
        snippet = _preview(raw, 80)
        return None, Problem("$", f"arguments are not valid JSON ({exc}): {snippet}")


def bounds_problem(value: Any, *, decoded: bool = False) -> Problem | None:
    """Where decoded arguments break a structural limit (depth, a non-finite number), or None.
    `decoded`: `value` came from JSON text (so it holds JSON types only)."""
    found = value_problem(value, decoded=decoded)
    return None if found is None else Problem(json_path(found[0]), found[1])


def _problems(
    validator: Callable[[], Validator],
    value: dict[str, Any],
    checks: Sequence[Check],
    fast: Callable[[Any], bool] | None = None,
    explain: Callable[[Any], list[Problem] | None] | None = None,
) -> list[Problem]:
    problems: list[Problem] = []
    # The fast check only ever shortcuts "valid". What it refuses, the explainer compiled for
    # its schema explains (`_explain`: the same problems as jsonschema's), else jsonschema.
    if not (fast(value) if fast is not None else validator().is_valid(value)):
        found = explain(value) if explain is not None else None
        if found is None:
            found = [_schema_problem(e) for e in validator().iter_errors(value)]
        problems.extend(found)
    said = [problem for check in checks for problem in check(value)]
    if said and problems:
        # A tool's check that says more of a missing argument than "is required" replaces it.
        fuller = {p.path for p in said if p.message.startswith("is required")}
        problems = [p for p in problems if not (p.message == "is required" and p.path in fuller)]
    problems.extend(said)
    return sorted(set(problems)) if len(problems) > 1 else problems


def validate_arguments(
    validator: Callable[[], Validator],
    raw: object,
    checks: Sequence[Check] = (),
    *,
    repair: bool = False,
    fast: Callable[[Any], bool] | None = None,
    yes: Callable[[Any], bool] | None = None,
) -> ValidationResult:
    """Decode `raw` and check it against `validator` and `checks`, collecting every problem.

    `validator` returns the tool's compiled validator; it is called only when `fast` is None or
    says no, so that a valid call never needs jsonschema (nor its import). `yes` returns True
    only when `checks` find nothing (a tool's `ToolSpec.plan.admits`): where `fast` and it both say yes, the
    checks do not run.

    With `repair`, a call that fails is first repaired where the schema allows exactly one
    reading (see `xerj_tools._schema._repair`); the repairs are listed in the result either way.
    """
    # Text with nothing for the bounds to find decodes at once (`_quick`), else in full.
    quick = quick_object(raw) if type(raw) is str else None
    if quick is None:
        value, problem = decode_arguments(raw)
        if problem is not None:
            return ValidationResult(False, None, (problem,), decode_error=True)
        if not isinstance(value, dict):
            return ValidationResult(
                False,
                None,
                (Problem("$", f"arguments must be a JSON object, got {json_type(value)}"),),
                decode_error=True,
            )
        # Decoded text is no deeper than the limit already, but a number too large for a float
        # (1e400) decodes to inf, "\ud800" to a lone surrogate; a dict handed over may hold
        # anything. A walk checks all three; short text is first looked at for such a number or
        # escape, which is cheaper than the walk.
        text = isinstance(raw, (str, bytes))
        short = raw if isinstance(raw, str) and len(raw) <= 4096 else None
        if (short is None or may_overflow(short) or may_hold_surrogate(short)) and (
            problem := bounds_problem(value, decoded=text)
        ):
            return ValidationResult(False, None, (problem,))
    else:
        value = quick
    return validate_decoded(validator, value, checks, repair=repair, fast=fast, yes=yes)


def validate_decoded(
    validator: Callable[[], Validator],
    value: dict[str, Any],
    checks: Sequence[Check] = (),
    *,
    repair: bool = False,
    fast: Callable[[Any], bool] | None = None,
    yes: Callable[[Any], bool] | None = None,
) -> ValidationResult:
    """`validate_arguments` from its decoded object on: `value` is a dict of JSON values within
    the bounds (as `quick_object` or the full decode and its walk leave it). The offline lane
    hands over what it decoded already (`_offline._lane`), so a failing line is decoded once."""
    schema_ok = fast(value) if fast is not None else None
    if schema_ok and yes is not None and yes(value):
        return ValidationResult(True, value)
    if schema_ok is False and repair:
        problems = []  # explained below only if no repair applies: a repaired call never is
    else:
        verdict = None if schema_ok is None else _yes if schema_ok else _no  # asked once only
        problems = _problems(validator, value, checks, verdict, explainer_of(fast))
        if not problems:
            return ValidationResult(True, value)
    if repair:
        # The schema as compiled for the fast check: no jsonschema needed to read it.
        schema: Mapping[str, Any] = getattr(fast, "schema", None) or validator().schema  # type: ignore[assignment]
        try:
            repaired, repairs = repair_arguments(value, schema, typed=schema_ok is True)
        except TooDeep as exc:
            return ValidationResult(False, None, (Problem(exc.path, f"is JSON text {exc}"),))
        explain = explainer_of(fast)
        if repairs:
            # A repair can decode a JSON string or a number ("1e400"), or put `queries` in an
            # array: bound the result again. (`value` is within the bounds here: otherwise it
            # was refused above; a repair that made no new value leaves it so.)
            if repairs.new_values and (problem := bounds_problem(repaired)) is not None:
                return ValidationResult(False, None, (problem,), tuple(repairs))
            problems = _problems(validator, repaired, checks, fast, explain)
            return ValidationResult(not problems, repaired, tuple(problems), tuple(repairs))
        if schema_ok is False:
            problems = _problems(validator, value, checks, _no, explain)  # (`fast` said no)
    return ValidationResult(False, value, tuple(problems))


def _yes(value: Any) -> bool:
    return True  # the fast check already said yes to this value


def _no(value: Any) -> bool:
    return False  # the fast check already said no: jsonschema explains


def _integer_only(schema: Any) -> bool:
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    types = [declared] if isinstance(declared, str) else declared
    return isinstance(types, list) and "integer" in types and "number" not in types


def integral_numbers(value: Any, schema: Any) -> Any:
    """`value` with each integral float that the schema types as an integer made an int.

    JSON Schema counts ``5000.0`` and ``5e3`` as integers, and Python decodes them as floats;
    every later decision (the operator's caps, the call's identity, the request body) must see
    the number 5000, so validated arguments are normalised once, here. Only what the schema
    describes is visited; a free-form object (a query) or a vector of numbers is left alone.
    """
    if type(value) is float:
        return int(value) if value.is_integer() and _integer_only(schema) else value
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        changed: dict[str, Any] = {}
        for key, sub, nested in _plan(schema):  # only the keys where a number can change
            if key in value:
                item = value[key]
                if nested or type(item) is float:
                    new = integral_numbers(item, sub)
                    if new is not item:
                        changed[key] = new
        return {**value, **changed} if changed else value
    items = schema.get("items")
    if (
        isinstance(value, list)
        and isinstance(items, Mapping)
        and (_integer_only(items) or "properties" in items or "items" in items)
    ):
        new_items = [integral_numbers(item, items) for item in value]
        return (
            new_items if any(a is not b for a, b in zip(new_items, value, strict=True)) else value
        )
    return value


def _plan_of(schema: Mapping[str, Any]) -> tuple[tuple[str, Mapping[str, Any], bool], ...]:
    """An object schema's properties where an integral float can be made an int (typed integer
    only) or that nest (properties or items), each (key, schema, nests)."""
    return tuple(
        (key, sub, "properties" in sub or "items" in sub)
        for key, sub in schema["properties"].items()
        if isinstance(sub, Mapping)
        and ("properties" in sub or "items" in sub or _integer_only(sub))
    )


_plan = per_schema(_plan_of, 1024)  # built once per schema
