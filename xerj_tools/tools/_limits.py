"""A tool's limits beyond JSON Schema, each declared once in the three forms the library reads.

A `Limit` is one rule over a call's arguments:

- `problems`: the reference, in words: every problem it finds, as `Problem`s the model reads;
- `admits`: the quick yes: True only where `problems` finds nothing (it may say False to a fine
  call: `problems` then runs and decides; it must only read the arguments);
- `fragment`: what JSON Schema can state of it: where the tool's schema, every fragment and the
  Python rest (`ints`: each absent or a Python int, since JSON Schema counts 5.0 an integer;
  `vectors`: each no list or a list of finite sum) all hold, `admits` says yes.

`admits` None: the rule has no quick yes, its `problems` run on every call; `fragment` None:
JSON Schema cannot state it, the offline lane asks `admits` instead. A tool declares its limits
as a tuple (`Tool(limits=(...))`); the schema layer compiles them once per tool
(`xerj_tools._schema._plan`), and says there why a tool has no quick yes or no strict schema.

The kinds below build a `Limit` from a few words (`int_range("n", 1, 5)`); a rule of no kind is
a `Limit` written out, with as many of its forms as it has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._problems import Check, Problem
from ._checks import (
    _int_range,
    _non_empty_string,
    _number_range,
    hybrid_problems,
    recall_problems,
    search_problems,
    semantic_problems,
    store_problems,
    unknown_keys,
    vector_problems,
)
from ._fastyes import Yes, hybrid_yes, recall_yes, search_yes, semantic_yes, store_yes, vector_yes
from ._strict import HYBRID, RECALL, SEARCH, SEMANTIC, STORE, VECTOR

__all__ = [
    "HYBRID_LIMITS",
    "RECALL_LIMITS",
    "SEARCH_LIMITS",
    "SEMANTIC_LIMITS",
    "STORE_LIMITS",
    "VECTOR_LIMITS",
    "Limit",
    "Yes",
    "int_range",
    "known_arguments",
    "not_blank",
    "number_range",
]


@dataclass(frozen=True, kw_only=True)
class Limit:
    """One rule over a call's arguments, in its three forms (see the module's note).

    - `problems`: the rule's words (a `Check`): every problem it finds in the arguments.
    - `admits`: True only where `problems` finds nothing (None: no quick yes).
    - `fragment`: a JSON Schema that, with `ints` and `vectors` checked in Python, holds only
      where `admits` says yes (None: JSON Schema cannot state the rule).
    - `ints`: arguments the fragment types as integers, which must also be Python ints.
    - `vectors`: arguments the fragment leaves as lists whose finite sum Python checks.
    - `names`: for the unknown-argument rule only, the argument names it allows (the plan knows
      then that an argument the schema lists needs no second look).
    - `kind`: what the rule is, for `repr` and the plan's reasons.
    """

    problems: Check
    admits: Yes | None = field(default=None, repr=False)
    fragment: Mapping[str, Any] | None = field(default=None, repr=False, hash=False)
    ints: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()
    names: frozenset[str] | None = field(default=None, repr=False)
    kind: str = "custom"


def known_arguments(names: Sequence[str], hints: Mapping[str, str] | None = None) -> Limit:
    """Every argument is one of `names` (the schema's properties): an argument the handler
    would silently drop is refused, so the model never believes it ran; `hints` explain some."""
    allowed = frozenset(names)
    return Limit(
        problems=unknown_keys(tuple(names), hints),
        admits=lambda args: args.keys() <= allowed,
        fragment={"propertyNames": {"enum": sorted(allowed)}},
        names=allowed,
        kind="known arguments",
    )


def int_range(key: str, lo: int, hi: int | None = None) -> Limit:
    """`key`, where it is an integer, lies from `lo` to `hi` (no upper bound: None)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _int_range(args, key, lo, hi, "$")

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        return value is None or (type(value) is int and lo <= value and (hi is None or value <= hi))

    bounds = {"minimum": lo, **({} if hi is None else {"maximum": hi})}
    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"type": "integer", **bounds}}},
        ints=(key,),
        kind=f"int_range({key!r})",
    )


def number_range(key: str, lo: float, hi: float) -> Limit:
    """`key`, where it is a number, is finite and lies from `lo` to `hi`."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _number_range(args, key, lo, hi, "$")

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        if type(value) is int or type(value) is float:
            return bool(lo <= value <= hi)  # NaN compares False
        return not isinstance(value, (int, float)) or isinstance(value, bool)

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"minimum": lo, "maximum": hi}}},
        kind=f"number_range({key!r})",
    )


def not_blank(key: str, what: str = "string") -> Limit:
    """`key`, where it is text, holds more than white space (the message: "must be a non-empty
    {what}")."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _non_empty_string(args, key, what)

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        return not isinstance(value, str) or not (value == "" or value.isspace())

    # blank text holds no ASCII letter or digit; text without one goes the slow way
    # (`str.strip`'s white space is not the regex's `\s`)
    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"type": "string", "pattern": "[A-Za-z0-9]"}}},
        kind=f"not_blank({key!r})",
    )


# The library's own tools' limits: each tool's rules (`_checks`), their quick yes (`_fastyes`)
# and what JSON Schema states of them (`_strict`), bound together here and nowhere else.
SEARCH_LIMITS = (
    Limit(problems=search_problems, admits=search_yes, **SEARCH._asdict(), kind="search"),
)
SEMANTIC_LIMITS = (
    Limit(problems=semantic_problems, admits=semantic_yes, **SEMANTIC._asdict(), kind="semantic"),
)
VECTOR_LIMITS = (
    Limit(problems=vector_problems, admits=vector_yes, **VECTOR._asdict(), kind="vector"),
)
HYBRID_LIMITS = (
    Limit(problems=hybrid_problems, admits=hybrid_yes, **HYBRID._asdict(), kind="hybrid"),
)
STORE_LIMITS = (Limit(problems=store_problems, admits=store_yes, **STORE._asdict(), kind="store"),)
RECALL_LIMITS = (
    Limit(problems=recall_problems, admits=recall_yes, **RECALL._asdict(), kind="recall"),
)
