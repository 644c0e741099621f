"""A tool's limits compiled once (`ToolSpec.plan`): explain, quick yes and strict schema.

`plan_of` reads a tool's `Limit`s (`xerj_tools.tools._limits`) with its schema's property names
and gives the three things the rest of the library asks of them:

- `Plan.checks`: each limit's `problems`, in the order declared: the words of a refused call;
  `Plan.explain` the same words as validation asks them: a limit's problems only where its
  `given` argument is present and its quick yes says no (where either holds, they find nothing);
- `Plan.admits`: one quick yes, True only where every check finds nothing (each limit's
  `admits` in turn), or None where a limit has none: then the checks run on every call;
- `Plan.within`: the same for arguments already known to be among the schema's properties (the
  unknown-argument look left out: the dispatcher's one pass, `_fused`, admits no other name);
- `Plan.strict`: the tool's schema with every limit's `fragment` and its argument names, compiled
  by jsonschema-rs (the offline lane), with `Plan.ints` and `Plan.vectors` its Python rest; None
  where a limit has no fragment.

`Plan.why` says in words why a tool has no quick yes or no strict schema (None: it has both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._problems import Check, Problem
from ..tools._limits import Limit, Yes
from ._fastcheck import _plain

__all__ = ["Plan", "plan_of"]


def _always(args: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class Plan:
    """A tool's limits, compiled (see the module's note)."""

    limits: tuple[Limit, ...]
    checks: tuple[Check, ...]
    explain: tuple[Check, ...]
    admits: Yes | None
    within: Yes | None
    fragment: Mapping[str, Any] | None
    ints: tuple[str, ...]
    vectors: tuple[str, ...]
    properties: frozenset[str]
    why: str | None

    def strict(
        self, schema: Any, validator_for: Callable[[Any], Any]
    ) -> Callable[[Any], bool] | None:
        """The `is_valid` of ``schema`` (the tool's, as its compiled check reads it) with every
        limit's fragment and the tool's argument names, compiled by `validator_for`
        (jsonschema-rs's, which the caller brings); where it and the Python rest (`ints`,
        `vectors`) say yes, `admits` says yes. None where a limit has no fragment, the tool lists
        no properties, or `validator_for` refuses the schema."""
        if self.fragment is None or not self.properties or not isinstance(schema, Mapping):
            return None
        root = _merged(_plain(schema), dict(self.fragment), self.properties)
        try:
            return validator_for(root).is_valid  # type: ignore[no-any-return]
        except Exception:  # a schema jsonschema-rs reads otherwise: the slow way
            return None


def plan_of(limits: Sequence[Limit], parameters: Mapping[str, Any]) -> Plan:
    """The `Plan` of `limits` for a tool whose JSON Schema is `parameters`."""
    limits = tuple(limits)
    found = parameters.get("properties")
    properties = frozenset(found) if isinstance(found, Mapping) else frozenset()
    lacking = [limit.kind for limit in limits if limit.admits is None]
    admits = None if lacking else _all(list(limits))
    within = None
    if admits is not None:
        # the unknown-argument look is done where every argument is a property it allows
        needed = [limit for limit in limits if limit.names is None or not limit.names >= properties]
        within = admits if len(needed) == len(limits) else _all(needed)
    unstated = [limit.kind for limit in limits if limit.fragment is None]
    fragment = None
    if not unstated:
        # the argument names are added by `strict` itself (the properties'): the unknown-argument
        # limit's own fragment says no more
        fragment = _combined([limit.fragment for limit in limits if limit.names is None])  # type: ignore[misc]
    why = [f"{kind} has no quick yes: its problems run on every call" for kind in lacking]
    why += [f"{kind} has no fragment: no strict schema" for kind in unstated]
    return Plan(
        limits=limits,
        checks=tuple(limit.problems for limit in limits),
        explain=_explain(limits),
        admits=admits,
        within=within,
        fragment=fragment,
        ints=tuple(dict.fromkeys(k for limit in limits for k in limit.ints)),
        vectors=tuple(dict.fromkeys(k for limit in limits for k in limit.vectors)),
        properties=properties,
        why="; ".join(why) or None,
    )


def _all(found: list[Limit]) -> Yes:
    """One quick yes for all of `found`: their `admits` in turn, each only where the arguments
    hold its `given` (the one itself where it is alone and always asked)."""
    if not found:
        return _always
    if len(found) == 1 and found[0].given is None:
        return found[0].admits  # type: ignore[return-value]
    steps = tuple((limit.given, limit.admits) for limit in found)

    def admits(args: Mapping[str, Any]) -> bool:
        for given, yes in steps:  # noqa: SIM110 (a loop: all() over a generator costs twice)
            if (given is None or given in args) and not yes(args):  # type: ignore[misc]
                return False
        return True

    return admits


def _explain(limits: tuple[Limit, ...]) -> tuple[Check, ...]:
    """Every limit's problems, in order, each asked only where the arguments hold its `given`
    and its quick yes (if any) says no: a failed call's words, without a generator per limit
    that would find nothing (tests/schema/test_limits.py holds each limit to both)."""
    if all(limit.given is None and limit.admits is None for limit in limits):
        return tuple(limit.problems for limit in limits)
    steps = tuple((limit.given, limit.admits, limit.problems) for limit in limits)

    def explain(args: Mapping[str, Any]) -> Iterator[Problem]:
        for given, admits, problems in steps:
            if given is not None and given not in args:
                continue
            if admits is not None:
                try:
                    if admits(args):
                        continue
                except Exception:  # a quick yes of yours may expect what the schema allows
                    pass  # (it is asked after the schema check elsewhere): the words decide
            yield from problems(args)

    return (explain,)


def _combined(fragments: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One fragment that holds where each of `fragments` does."""
    out: dict[str, Any] = {}
    for fragment in fragments:
        for key, value in fragment.items():
            if key == "properties":
                props = out.setdefault("properties", {})
                for name, sub in value.items():
                    props[name] = {"allOf": [props[name], sub]} if name in props else sub
            elif key == "required":
                out["required"] = sorted({*out.get("required", ()), *value})
            elif key == "allOf":
                out["allOf"] = [*out.get("allOf", ()), *value]
            elif key in out:
                out.setdefault("allOf", []).append({key: value})
            else:
                out[key] = value
    return out


# Keywords whose meaning depends on a sibling: a subschema holding one is never merged into.
_SIBLINGS = frozenset({
    "additionalProperties", "patternProperties", "unevaluatedProperties", "items",
    "prefixItems", "additionalItems", "unevaluatedItems", "contains", "if", "then", "else",
    "$ref", "$dynamicRef",
})  # fmt: skip


# Keywords both may hold and one schema still says: every name required by either, every
# subschema of either (the tool's schema requires its own names; a limit may require one more).
_JOINED = frozenset({"properties", "required", "allOf"})


def _merged(schema: dict[str, Any], fragment: dict[str, Any], names: frozenset[str]) -> Any:
    """``{"allOf": [schema, fragment, only these argument names]}``, as one schema where the
    keywords do not meet (a tenth of a microsecond less per call in jsonschema-rs)."""
    whole = {"allOf": [schema, fragment, {"propertyNames": {"enum": sorted(names)}}]}
    properties = schema.get("properties", {})
    if (
        not isinstance(properties, dict)
        or schema.keys() & _SIBLINGS
        or schema.keys() & (fragment.keys() - _JOINED)
        or not isinstance(schema.get("allOf", []), list)
        or not all(type(name) is str for name in schema.get("required", []))
    ):
        return whole
    merged = dict(properties)
    for key, sub in fragment.get("properties", {}).items():
        own = merged.get(key, True)
        if (
            isinstance(own, dict)
            and not own.keys() & _SIBLINGS
            and not sub.keys() & _SIBLINGS
            and all(own[k] == v for k, v in sub.items() if k in own)
        ):
            merged[key] = {**own, **sub}
        else:
            merged[key] = {"allOf": [own, sub]}
    for name in names:
        merged.setdefault(name, True)
    if not merged.keys() <= names:
        return whole
    joined = {
        key: [*dict.fromkeys([*schema[key], *fragment[key]])] if key == "required"
        else [*schema[key], *fragment[key]]
        for key in ("required", "allOf") if key in schema and key in fragment
    }  # fmt: skip
    return {**schema, **fragment, **joined, "properties": merged, "additionalProperties": False}
