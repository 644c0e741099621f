"""The valid lane of offline validation (issue 24): a JSONL line holding one plain, valid Chat
Completions tool call is counted in a few microseconds, without the objects of the full path.

`validate_lines` reads a file a block of lines at a time (`LaneLines`: 1 MiB chunks, split at
``\n``) and hands each block to `Lane.run`, one loop in one frame: per line (bytes) it decodes
the record with orjson, recognises the Chat tool-call record ``{"type": "function",
"function": {"name", "arguments"}}`` (no ``custom_id``, no ``messages``: never a Batch output
line nor a fine-tuning example), decodes the arguments as `_quick.quick_object` does, and asks
the tool's strict schema (`ToolSpec.plan.strict`: the schema with the limits' JSON Schema
fragments, one jsonschema-rs `is_valid`) and its Python rest; where the strict schema says no,
the schema check and the quick yes (`ToolSpec.plan.admits`; where a tool has none, its checks
themselves).
A line passes only when the full path (`_offline._validate.line_calls` + `validate_calls`) would count
one valid call with nothing to report; any other goes to that path, which writes the report it
always wrote. So the lane changes the speed, never the report (tests/test_lane.py compares
both, with `ENABLED` off, on mixed files, a file of hostile lines, chunks of a few bytes).

What sends a line to the full path, each for the guarantee it keeps:
- text orjson refuses: not JSON, a UTF-8 BOM, NaN or Infinity, a number past a double, a lone
  surrogate escape, bytes that are not UTF-8 (the full path says each as it always did);
- a record of another shape, or one with keys beyond ``id``, ``type``, ``function``, ``index``
  (or an ``id`` or ``index`` that is a list or an object) that holds ``custom_id`` (a Batch
  output line), ``messages`` (a fine-tuning example) or more than `RECORD_DEPTH` brackets
  (`_bounds`' record depth limit; a count bounds the depth);
- arguments that are not text, or that the quick decode refuses: more than
  `MAX_ARGUMENT_DEPTH` brackets, a run of 19 digits (`_json`'s long integers, which orjson reads
  as floats), a lone surrogate, more than 4,096 characters, blank, not a JSON object;
- a tool the registry lacks or whose schema is not compiled, a schema check that says no, a
  quick yes that says no (the full path runs the checks and explains), or, for a tool without a
  quick yes, a check that finds a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._bounds import MAX_ARGUMENT_DEPTH, _finite_numbers
from .._schema._fastcheck import Predicate, compiled_backend
from .._schema._quick import _LONG, _MASK, MAX_QUICK
from .._schema._registry import ToolRegistry, ToolSpec
from ._lines import LaneLines, blocks_of
from ._validate import (
    RECORD_DEPTH,
    CallReport,
    FoundCall,
    ValidationSummary,
    line_calls,
    tally,
    validate_calls,
)

__all__ = ["ENABLED", "Lane", "lane_for", "validate_lines"]

ENABLED = True
"""Internal switch: False sends every line to the full path (the tests compare the two)."""


# A record of only these keys (and a function of only name and arguments) is two levels deep:
# no bracket count needed for `RECORD_DEPTH`.
_RECORD_KEYS = frozenset({"id", "type", "function", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_FLAT = frozenset({str, int, float, bool, type(None)})


Held = tuple[str, str, "str | None", dict[str, Any]]
"""A refused call the lane decoded: its name, its arguments text, its id (None where empty) and
its arguments as `_quick.quick_object` decodes them."""

_Entry = tuple[
    "Predicate | None",
    tuple[str, ...],
    tuple[str, ...],
    Predicate,
    "Predicate | None",
    tuple[Any, ...],
    bool,
    bool,
]


class Lane:
    """The lane's verdict on lines, for one registry: `valid(line)`, and `run` over a block."""

    def __init__(self, registry: ToolRegistry) -> None:
        from .._json import _load

        self._orjson = _load() or None
        # name -> (strict schema check, its integer and vector arguments (`Strict`), schema
        # check, quick yes, checks, whether that quick yes is this library's own: it only reads
        # the value, where a check or a quick yes of yours may change it; whether a refused call
        # may be held: not where a subclass of yours validates in its own way)
        self.tools: dict[str, _Entry] = {}
        backend = compiled_backend()
        plain = getattr(type(registry), "validate", None) is ToolRegistry.validate
        for spec in registry:
            schema = _schema_yes(spec.fast_check)
            if schema is not None:
                plan = spec.plan
                fast = spec.fast_check
                strict = (
                    plan.strict(getattr(fast, "schema", None), backend.validator_for)
                    if backend and getattr(fast, "backend", None) == "jsonschema-rs"
                    else None
                )
                self.tools[spec.name] = (
                    strict, plan.ints, plan.vectors, schema, plan.admits, plan.checks,
                    strict is not None,
                    plain and getattr(type(spec), "validate", None) is ToolSpec.validate,
                )  # fmt: skip

    def valid(self, line: bytes) -> bool:
        """True only when `line` is one Chat tool call that the full path counts valid with
        nothing to report."""
        return self.run((line,), 0) == 1

    def run(self, lines: Sequence[bytes], start: int, held: list[Held | None] | None = None) -> int:
        """The position of the first of `lines` from `start` that `valid` would refuse, or
        ``len(lines)`` when it passes them all: the hot loop, one line a turn, in one frame.

        With `held` (a list of one item, the caller's own: a lane is shared by the threads that
        validate with one registry), where the line refused is a usual Chat tool call whose
        arguments were decoded (a JSON object within the bounds, as `_quick.quick_object` reads
        it), ``held[0]`` is set to its `Held` (else left as it was)."""
        end = len(lines)
        orjson = self._orjson
        if orjson is None:
            return start
        loads, tools = orjson.loads, self.tools
        for at in range(start, end):  # by index: a slice would copy the block at each stop
            line = lines[at]
            try:
                # orjson refuses a BOM, NaN, a number past a double, a lone surrogate, bytes
                # that are not UTF-8: each goes to the full path, which says it as it always did.
                record = loads(line)
                # a record that is no dict, a function that is no dict, a key missing, a name
                # that is no tool's: each raises here (cheaper than asking each in turn)
                function = record["function"]
                name, arguments = function["name"], function["arguments"]
                entry = tools[name]
            except (ValueError, LookupError, TypeError):
                return at
            if record.get("type") != "function" or type(arguments) is not str:
                return at
            # the usual record: id (text), type, function (name, arguments)
            usual = len(record) == 3 and len(function) == 2 and type(record.get("id", ())) is str
            if (
                not usual
                and not (
                    record.keys() <= _RECORD_KEYS
                    and function.keys() <= _FUNCTION_KEYS
                    and type(record.get("id")) in _FLAT
                    and type(record.get("index")) in _FLAT
                )
                and not _plain_record(record, line)
            ):
                return at  # a Batch output line, a fine-tuning example, or maybe too deep
            # `_quick.quick_object`, inline (tests/test_lane.py holds the lane to the full path)
            if len(arguments) > MAX_QUICK:
                return at
            try:
                raw = arguments.encode()
            except UnicodeEncodeError:  # a lone surrogate
                return at
            masked = raw.translate(_MASK)
            if masked.count(b"{") > MAX_ARGUMENT_DEPTH or (
                masked.count(b"0") >= 19 and _LONG in masked  # the count: cheaper than the search
            ):
                return at  # maybe too deep, or an integer orjson reads as a float
            try:
                value = loads(raw)
            except ValueError:
                return at
            if type(value) is not dict:
                return at
            strict, ints, vectors, schema, yes, checks, own, holds = entry
            try:
                # the strict schema (the tool's, with the limits it can state) and its Python
                # rest say yes only where the schema and the quick yes would (`_schema._plan`)
                if strict is not None and strict(value):
                    plain = True
                    for key in ints:  # 5.0 is no int here
                        plain = plain and type(value.get(key, 0)) is int
                    for key in vectors:
                        vector = value.get(key)
                        plain = plain and (type(vector) is not list or _finite_numbers(vector))
                    if plain:
                        continue
                if schema(value):
                    if yes is not None:  # where it says no, the checks run and explain
                        if yes(value):
                            continue
                    elif not any(True for check in checks for _ in check(value)):
                        continue  # no quick yes: the checks decide
                    if not own:  # a check or a quick yes of yours may have changed it: the
                        value = None  # full path decodes the text afresh, and so does this
            except Exception:  # a value the compiled check cannot read
                value = None
            if usual and holds and held is not None:  # what `line_calls` would find: the
                call_id = record["id"]  # full path starts from the object
                fresh = value if value is not None else loads(raw)
                held[0] = (name, arguments, call_id if call_id else None, fresh)
            return at
        return end


def _plain_record(record: dict[str, Any], line: bytes) -> bool:
    """A record of more keys (or an ``id`` or ``index`` that is no scalar): neither a Batch
    output line nor a fine-tuning example, and not too deep to decode (a count bounds it)."""
    return not (
        "custom_id" in record
        or "messages" in record
        or line.count(b"{") + line.count(b"[") > RECORD_DEPTH
    )


def _schema_yes(fast: Any) -> Predicate | None:
    """The compiled schema check, without its counting: jsonschema-rs's own `is_valid` where
    installed (`Lane.valid` sends a value it cannot read to the full path), else the closure."""
    if fast is None:
        return None
    if hasattr(fast, "compile_now"):
        fast.compile_now()
        is_valid = getattr(fast, "is_valid", None)
        return is_valid if is_valid is not None else fast.check  # type: ignore[no-any-return]
    return fast  # type: ignore[no-any-return]


_LANES: dict[int, tuple[ToolRegistry, Lane]] = {}


def lane_for(registry: ToolRegistry) -> Lane:
    """The lane of `registry`, made once (it compiles a strict schema per tool, about 1.6 ms):
    `--jobs` workers and Dask partitions validate many ranges with one registry. The last few
    registries' lanes are kept (each entry holds its registry, so an id is never reused)."""
    found = _LANES.get(id(registry))
    if found is not None and found[0] is registry:
        return found[1]
    if len(_LANES) >= 8:
        _LANES.pop(next(iter(_LANES)))
    lane = Lane(registry)
    _LANES[id(registry)] = (registry, lane)
    return lane


def validate_lines(
    registry: ToolRegistry,
    lines: Iterable[tuple[int, Any]],
    *,
    repair: bool = True,
    progress: Callable[[int], None] | None = None,
    on_report: Callable[[CallReport], None] | None = None,
) -> ValidationSummary:
    """`validate_calls(registry, jsonl_calls(lines))`, with each line the lane says yes to
    counted valid at once. Lines are bytes (the lane's), text, decoded records or None; a
    `LaneLines` is read a block at a time."""
    summary = ValidationSummary()
    report = on_report if on_report is not None else summary.reports.append
    lane = lane_for(registry) if ENABLED else None
    box: list[Held | None] = [None]  # the call the lane held where it stopped (`Lane.run`)
    blocks = lines.blocks() if isinstance(lines, LaneLines) else blocks_of(lines)
    index = passed = 0  # calls numbered so far; lane calls not yet in `summary`
    for first, block, ending, originals in blocks:
        at, end = 0, len(block)
        while at < end:
            if lane is not None:
                stop = lane.run(block, at, box)  # the lane passes block[at:stop]
                if stop > at:
                    before = summary.calls + passed
                    index += stop - at
                    passed += stop - at
                    if progress is not None and before // 10_000 < (before + stop - at) // 10_000:
                        progress((before + stop - at) // 10_000 * 10_000)
                    at = stop
                    if at == end:
                        break
            number = first + at
            found_held, box[0] = box[0], None
            if found_held is not None:  # one call, decoded: `validate_calls` of it, inline
                name, arguments, call_id, value = found_held
                at += 1
                index += 1
                summary.calls += passed + 1
                summary.valid += passed
                passed = 0
                call = FoundCall(name, arguments, call_id, number, index, "chat")
                result = registry[name]._validate_decoded(value, repair=repair)
                tally(summary, call, result, report, progress)
                continue
            line = block[at] + ending if originals is None else originals[at]
            at += 1
            found: list[Any] = []
            for item in line_calls(number, line):
                if isinstance(item, FoundCall):
                    index += 1
                    item = FoundCall(
                        item.name, item.arguments, item.call_id, number, index, item.api,
                        item.registry,
                    )  # fmt: skip
                found.append(item)
            if found:
                summary.calls += passed
                summary.valid += passed
                passed = 0
                validate_calls(
                    registry, found, repair=repair, progress=progress, on_report=on_report,
                    summary=summary,
                )  # fmt: skip
    summary.calls += passed
    summary.valid += passed
    return summary
