"""A tool's limits beyond JSON Schema: the `Limit` value and its kinds, each one rule in the three
forms the library reads.

A `Limit` is one rule over a call's arguments:

- `problems`: the reference, in words: every problem it finds, as `Problem`s the model reads;
- `admits`: the quick yes: True only where `problems` finds nothing (it may say False to a fine
  call: `problems` then runs and decides; it must only read the arguments);
- `fragment`: what JSON Schema can state of it: where the tool's schema, every fragment and the
  Python rest (`ints`: each absent or a Python int, since JSON Schema counts 5.0 an integer;
  `vectors`: each no list or a list of finite sum) all hold, `admits` says yes. A fragment may
  be stricter than its quick yes (that call then takes the longer path), never looser.

`admits` None: the rule has no quick yes, its `problems` run on every call; `fragment` None:
JSON Schema cannot state it, the offline lane asks `admits` instead. A tool declares its limits
as a tuple (`Tool(limits=(...))`), in the order its problems are reported; the schema layer
compiles them once per tool (`xerj_tools._schema._plan`), and says there why a tool has no quick
yes or no strict schema.

The kinds below build a `Limit` from a few words (`int_range("n", 1, 5)`); a rule of no kind is
a `Limit` written out, with as many of its forms as it has. Every problem tolerates values of
the wrong type: the schema reports those, and the limits still run so that the model sees every
problem in one message. The rerank block's rules are a kind of their own (`_rerank`), and so are
the search tools' (`_search_limits`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .._bounds import _finite_numbers
from .._problems import Check, Problem
from ._paths import (
    _DOT_SEGMENTS,
    QUICK_ID_CHARS,
    _index_problem_of,
    _namespace_problem_of,
    document_id_problem,
    index_problem,
    namespace_problem,
)

__all__ = [
    "MAX_RESULT_WINDOW",
    "Limit",
    "Yes",
    "clause",
    "document_id",
    "finite_vector",
    "index_expression",
    "int_range",
    "known_arguments",
    "namespace",
    "not_blank",
    "number_range",
    "one_index",
    "required",
]

Yes = Callable[[Mapping[str, Any]], bool]
"""True only when a limit's problems find nothing in these arguments."""

# XERJ's parser refuses `from + size > 10000` (xerj-query/src/parser.rs:151-158); a kNN `k`
# feeds `size = max(size, k)` (xerj-api/src/es_compat.rs:5899), so the same bound applies to it.
MAX_RESULT_WINDOW = 10_000


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
    - `given`: the argument without which the rule holds: the plan asks `admits` only of
      arguments that hold it (a typical call gives few of a tool's arguments).
    - `kind`: what the rule is, for `repr` and the plan's reasons.
    """

    problems: Check
    admits: Yes | None = field(default=None, repr=False)
    fragment: Mapping[str, Any] | None = field(default=None, repr=False, hash=False)
    ints: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()
    names: frozenset[str] | None = field(default=None, repr=False)
    given: str | None = None
    kind: str = "custom"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_range(
    args: Mapping[str, Any], key: str, lo: int, hi: int | None, path: str = "$"
) -> Iterator[Problem]:
    value = args.get(key)
    if not (_is_int(value) or (isinstance(value, float) and value.is_integer())):
        return
    assert isinstance(value, (int, float))
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        yield Problem(f"{path}.{key}", f"must be {bound}; got {value}")


def _number_range(
    args: Mapping[str, Any], key: str, lo: float, hi: float, path: str = "$"
) -> Iterator[Problem]:
    value = args.get(key)
    if _is_number(value) and (not math.isfinite(value) or not lo <= value <= hi):
        yield Problem(f"{path}.{key}", f"must be a number from {lo:g} to {hi:g}; got {value}")


def _int_value(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if _is_int(value) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    return default


def _blank(value: Any) -> bool:
    """Text of nothing but white space (`str.strip`'s, which `str.isspace` names)."""
    return isinstance(value, str) and (value == "" or value.isspace())


def known_arguments(names: Sequence[str], hints: Mapping[str, str] | None = None) -> Limit:
    """Every argument is one of `names` (the schema's properties): an argument the handler
    would silently drop is refused, so the model never believes it ran; `hints` explain some."""
    allowed = frozenset(names)

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        for key in args:
            if key not in allowed:
                hint = (hints or {}).get(key, f"this tool takes: {', '.join(names)}")
                yield Problem(
                    f"$.{key}" if key.isidentifier() else f"$[{key!r}]", f"unknown argument; {hint}"
                )

    return Limit(
        problems=problems,
        admits=lambda args: args.keys() <= allowed,
        fragment={"propertyNames": {"enum": sorted(allowed)}},
        names=allowed,
        kind="known arguments",
    )


def int_range(key: str, lo: int, hi: int | None = None) -> Limit:
    """`key`, where it is an integer, lies from `lo` to `hi` (no upper bound: None)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _int_range(args, key, lo, hi)

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        return value is None or (type(value) is int and lo <= value and (hi is None or value <= hi))

    bounds = {"minimum": lo, **({} if hi is None else {"maximum": hi})}
    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"type": "integer", **bounds}}},
        ints=(key,),
        given=key,
        kind=f"int_range({key!r})",
    )


def number_range(key: str, lo: float, hi: float) -> Limit:
    """`key`, where it is a number, is finite and lies from `lo` to `hi`."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _number_range(args, key, lo, hi)

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        if type(value) is int or type(value) is float:
            return bool(lo <= value <= hi)  # NaN compares False
        return not isinstance(value, (int, float)) or isinstance(value, bool)

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"minimum": lo, "maximum": hi}}},
        given=key,
        kind=f"number_range({key!r})",
    )


# Text that must not be blank must hold an ASCII letter or digit in a fragment: blank text cannot,
# and text without one takes the longer path (`str.strip`'s white space is not the regex's `\s`).
_TEXT = {"type": "string", "pattern": "[A-Za-z0-9]"}


def not_blank(key: str, what: str = "string") -> Limit:
    """`key`, where it is text, holds more than white space (the message: "must be a non-empty
    {what}")."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        if _blank(args.get(key)):
            yield Problem(f"$.{key}", f"must be a non-empty {what}")

    return Limit(
        problems=problems,
        admits=lambda args: not _blank(args.get(key)),
        fragment={"properties": {key: _TEXT}},
        given=key,
        kind=f"not_blank({key!r})",
    )


def required(key: str, message: str) -> Limit:
    """`key` is given (`message` says what to send instead of leaving it out)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        if key not in args:
            yield Problem(f"$.{key}", message)

    return Limit(
        problems=problems,
        admits=lambda args: key in args,
        fragment={"required": [key]},
        kind=f"required({key!r})",
    )


def clause(key: str, path: str | None = None) -> Limit:
    """`key`, where it is an object, is one query clause: one key (a model often puts `size` or
    `sort` beside the clause, where XERJ would read them as clauses)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        return _clause_problems(args.get(key), path or f"$.{key}")

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        return not isinstance(value, dict) or len(value) <= 1

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"maxProperties": 1}}},
        given=key,
        kind=f"clause({key!r})",
    )


def _clause_problems(value: Any, path: str) -> Iterator[Problem]:
    if isinstance(value, dict) and len(value) > 1:
        keys = ", ".join(sorted(value))
        yield Problem(
            path,
            f"a query clause has exactly one key, got {len(value)} ({keys}); "
            "size, from, sort, aggs and source are arguments of their own",
        )


def finite_vector(key: str) -> Limit:
    """`key`, where it is a list, is not empty and holds no number that is not finite (its
    finite sum, `_bounds._finite_numbers`, is the fragment's Python rest: stated as bounds in
    the schema it costs ten times as much)."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        value = args.get(key)
        if isinstance(value, list):
            if not value:
                yield Problem(f"$.{key}", "must be a non-empty array of numbers")
            for i, item in enumerate(value):
                if _is_number(item) and not math.isfinite(item):
                    yield Problem(f"$.{key}[{i}]", f"must be a finite number; got {item}")

    def admits(args: Mapping[str, Any]) -> bool:
        value = args.get(key)
        return not isinstance(value, list) or (bool(value) and _finite_numbers(value))

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {key: {"minItems": 1}}},
        vectors=(key,),
        given=key,
        kind=f"finite_vector({key!r})",
    )


def _known_good(problem_of: Callable[[Any, str], Any], path: str) -> Callable[[Any], bool]:
    """A name's check (`_paths`' index or namespace rule) with its verdict on the names it
    passed kept (a few distinct names come again and again: up to 4,096 of them, then forgotten
    at once): a non-string is the schema's business; a name of more than 256 characters is
    always asked."""
    good: set[str] = set()

    def ok(value: Any) -> bool:
        if type(value) is not str:
            return not isinstance(value, str)
        if value in good:
            return True
        if len(value) > 256 or problem_of(value, path) is not None:
            return False
        if len(good) >= 4096:
            good.clear()
        good.add(value)
        return True

    return ok


# Names in a fragment by a pattern: a subset of what `_paths` allows (lower-case letters, digits,
# `_`, `-`, `*`, no dot, not starting with `_`, `-` or `+`; an index also a comma list). Other
# names (`_all`, `.hidden`, upper case, Unicode) take the longer path.
_NAME = "[a-z0-9*][a-z0-9_*-]{0,199}"
_INDEX = {"pattern": f"^{_NAME}(?:,{_NAME})*$", "maxLength": 1024}
_index_ok = _known_good(_index_problem_of, "$.index")
_namespace_ok = _known_good(_namespace_problem_of, "$.namespace")


def _problem_of(rule: Callable[[Any], Problem | None], key: str) -> Check:
    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        if (problem := rule(args.get(key))) is not None:
            yield problem

    return problems


def index_expression() -> Limit:
    """`index` is an index expression: a name, a comma list or a pattern (`_paths`: it guards
    the URL path segment)."""
    return Limit(
        problems=_problem_of(index_problem, "index"),
        admits=lambda args: _index_ok(args.get("index")),
        fragment={"properties": {"index": _INDEX}},
        given="index",
        kind="index_expression()",
    )


def one_index() -> Limit:
    """`index` names one index or alias: an index expression with no pattern, list or `_all`."""

    def problems(args: Mapping[str, Any]) -> Iterator[Problem]:
        index = args.get("index")
        if (problem := index_problem(index)) is not None:
            yield problem
        elif isinstance(index, str) and (index == "_all" or any(c in index for c in ",*")):
            yield Problem("$.index", "must name one index (or alias): no pattern, list or _all")

    def admits(args: Mapping[str, Any]) -> bool:
        index = args.get("index")
        if not _index_ok(index):
            return False
        return type(index) is not str or not (index == "_all" or "," in index or "*" in index)

    return Limit(
        problems=problems,
        admits=admits,
        fragment={"properties": {"index": {**_INDEX, "not": {"pattern": "[,*]"}}}},
        given="index",
        kind="one_index()",
    )


def namespace() -> Limit:
    """`namespace` is a memory namespace (memory_api.rs:101-124, in `_paths`)."""
    return Limit(
        problems=_problem_of(namespace_problem, "namespace"),
        admits=lambda args: _namespace_ok(args.get("namespace")),
        fragment={
            "properties": {
                "namespace": {
                    "pattern": "^[a-z0-9][a-z0-9_-]{0,199}$",  # no dot: the longer path
                    "not": {"pattern": "-edges$"},
                }
            }
        },
        given="namespace",
        kind="namespace()",
    )


def document_id() -> Limit:
    """`id` is a document id one URL path segment can carry (`_paths.document_id_problem`)."""

    def admits(args: Mapping[str, Any]) -> bool:
        doc_id = args.get("id")
        if type(doc_id) is not str:
            return not isinstance(doc_id, str)
        return bool(doc_id) and len(doc_id) <= QUICK_ID_CHARS and doc_id not in _DOT_SEGMENTS

    return Limit(
        problems=_problem_of(document_id_problem, "id"),
        admits=admits,
        fragment={
            "properties": {
                "id": {"minLength": 1, "maxLength": QUICK_ID_CHARS, "not": {"enum": [".", ".."]}}
            }
        },
        given="id",
        kind="document_id()",
    )
