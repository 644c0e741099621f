"""The valid lane of offline validation: a JSONL line holding one valid tool call, in any of the
one-call record shapes `validate` reads, is counted in a few microseconds, without the objects of
the full path.

`validate_lines` reads a file a block of lines at a time (`LaneLines`: 1 MiB chunks, split at
``\n``) and hands each block to `Lane.run`, one loop in one frame: per line (bytes) it decodes
the record with orjson and recognises its call as `_records.find_calls` would: a Chat tool call
``{"type": "function", "function": {"name", "arguments"}}`` first (the commonest), else
(`_read_record`) a Responses ``function_call`` or ``custom_tool_call`` item, an Anthropic
``tool_use`` block, a Gemini ``functionCall`` part or a plain ``{"name" (or "tool"),
"arguments"}`` record; never a Batch output line (``custom_id``) nor a fine-tuning example
(``messages``). Arguments written as text are decoded as `_quick.quick_object` decodes them
(inline, its bounds too: a call less per line); arguments the record holds as an object
(Anthropic's ``input``, Gemini's ``args``, a plain record's object) are taken as orjson read
them where `_quick.quick_bounds` finds nothing in the line for the bounds to refuse. Then the
tool's strict schema (`ToolSpec.plan.strict`: the schema with the limits' JSON Schema
fragments, one jsonschema-rs `is_valid`) and its Python rest; where the strict schema says no,
the schema check and the quick yes (`ToolSpec.plan.admits`; where a tool has none, its checks
themselves). A line passes only when the full path (`_offline._validate.line_calls` +
`validate_calls`) would count one valid call with nothing to report; any other goes to that path,
which writes the report it always wrote. So the lane changes the speed, never the report
(tests/offline/test_lane.py and tests/offline/test_lane_shapes.py compare both, with `ENABLED` off, on mixed
files, random files of each shape, a file of hostile lines, chunks of a few bytes).

What sends a line to the full path, each for the guarantee it keeps:
- text orjson refuses: not JSON, a UTF-8 BOM, NaN or Infinity, a number past a double, a lone
  surrogate escape, bytes that are not UTF-8 (the full path says each as it always did);
- a record of no shape above (a completion, a transcript, a list of calls: several calls, found
  by the full path's walk), or one that holds ``custom_id``, ``messages`` or more than
  `RECORD_DEPTH` brackets (`_bounds`' record depth limit; a count bounds the depth); a Chat
  ``custom`` call, a snake_case Gemini ``function_call`` part, a record with a ``role`` or
  another ``type``, a name that is no text: rare forms, read by the full path;
- arguments the quick decode refuses (more than `MAX_ARGUMENT_DEPTH` brackets, a run of 19
  digits: `_json`'s long integers, which orjson reads as floats; a lone surrogate, more than
  4,096 characters, blank, not a JSON object); arguments held as an object in a line with more
  than `MAX_ARGUMENT_DEPTH` brackets or a run of 19 digits; an Anthropic ``input`` or Gemini
  ``args`` that is no object (the full path says so); a Chat call's arguments that are no text;
- a tool the registry lacks or whose schema is not compiled, a schema check that says no, a
  quick yes that says no (the full path runs the checks and explains), or, for a tool without a
  quick yes, a check that finds a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._bounds import MAX_ARGUMENT_DEPTH, _finite_numbers
from .._schema._fastcheck import Predicate, compiled_backend
from .._schema._quick import _LONG, _MASK, MAX_QUICK, quick_bounds, quick_object
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


Held = tuple[str, Any, Any, dict[str, Any], "str | None"]
"""A refused call the lane decoded: its name, its arguments (text, or the object the record
holds), its id as the full path reports it, its arguments decoded (as `_quick.quick_object`
decodes text) and the wire shape it came in (`FoundCall.api`)."""

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
                    strict, plan.ints, plan.vectors, schema, plan.admits, plan.explain,
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
        validate with one registry), where the line refused is a call whose record the full
        path would read the same way (`_read_record`) and whose arguments were decoded (a JSON
        object within the bounds), ``held[0]`` is set to its `Held` (else left as it was)."""
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
            except ValueError:
                return at
            try:
                # a Chat tool call, the commonest record: a record that is no dict, a function
                # that is no dict, a key missing, a name that is no tool's raise here (cheaper
                # than asking each in turn), and the other shapes are read below
                function = record["function"]
                name, arguments = function["name"], function["arguments"]
                entry = tools[name]
                api: str | None = "chat"
            except (LookupError, TypeError):
                found = _read_record(record, line)
                if found is None:
                    return at
                name, arguments, call_id, api, usual = found
                if name not in tools:
                    return at
                entry = tools[name]
            else:
                if record.get("type") != "function" or type(arguments) is not str:
                    return at
                # the usual record: id (text), type, function (name, arguments)
                call_id = record.get("id", ())
                usual = len(record) == 3 and len(function) == 2 and type(call_id) is str
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
            if type(arguments) is str:
                # `_quick.quick_object`, inline (the hot loop's calls cost)
                if len(arguments) > MAX_QUICK:
                    return at
                try:
                    raw = arguments.encode()
                except UnicodeEncodeError:  # a lone surrogate
                    return at
                masked = raw.translate(_MASK)  # `_quick.quick_bounds`
                if masked.count(b"{") > MAX_ARGUMENT_DEPTH or (
                    masked.count(b"0") >= 19 and _LONG in masked  # (the count: cheaper)
                ):
                    return at  # maybe too deep, or an integer orjson reads as a float
                try:
                    value = loads(raw)
                except ValueError:
                    return at
                if type(value) is not dict:
                    return at
            elif type(arguments) is dict and quick_bounds(line):
                # arguments the record holds decoded (Anthropic's input, Gemini's args), as the
                # full path reads them: the line has no depth nor long integer for them to break
                value = arguments
            else:
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
                if value is None:  # full path starts from the object
                    if type(arguments) is not str:
                        return at  # (the record's own object, maybe changed: read afresh)
                    value = quick_object(arguments)
                    if value is None:  # (it decoded once already)
                        return at
                if api == "chat":
                    call_id = call_id or None  # (text, in the usual record)
                held[0] = (name, arguments, call_id, value, api)
            return at
        return end


def _read_record(record: Any, line: bytes) -> tuple[str, Any, Any, str | None, bool] | None:
    """A record holding one call of another shape than Chat's, read as `_records.find_calls`
    reads it: ``(name, arguments, call id as the full path reports it, api, whether that id is
    exactly what the full path finds)``; None for any other record (the full path reads it).

    The shapes, in `find_calls`' order: a Responses ``function_call`` (or ``custom_tool_call``)
    item, an Anthropic ``tool_use`` block, a Gemini ``functionCall`` part, a plain ``{"name"
    (or "tool"), "arguments"}`` record. None of them for a record that holds ``custom_id`` (a
    Batch output line), ``messages`` (a fine-tuning example), ``function`` (Chat's), more than
    `RECORD_DEPTH` brackets, or a name that is no text."""
    if type(record) is not dict or not _plain_record(record, line) or "function" in record:
        return None
    kind = record.get("type")
    if kind == "function_call" or kind == "custom_tool_call":
        name, arguments, call_id = (
            record.get("name"),
            record.get("arguments" if kind == "function_call" else "input"),
            record.get("call_id"),
        )
        api: str | None = "responses"
    elif kind == "tool_use":
        name, arguments, call_id = record.get("name"), record.get("input"), record.get("id")
        api = "anthropic"
        if type(arguments) is not dict:
            return None  # the full path says the input must be an object
    elif "type" in record or "role" in record or "function_call" in record:
        return None  # another kind, a message, a legacy Chat call or a snake_case Gemini part
    elif "functionCall" in record:
        call = record["functionCall"]
        if type(call) is not dict:
            return None
        name, arguments, call_id = call.get("name"), call.get("args"), call.get("id")
        arguments = {} if arguments is None else arguments  # a call without parameters
        if type(arguments) is not dict:
            return None  # the full path says the args must be an object
        api = "gemini"
    elif "arguments" in record and ("name" in record or "tool" in record):
        name = record["name"] if "name" in record else record["tool"]
        call_id = record["id"] if "id" in record else record.get("call_id")
        if type(name) is not str:
            return None
        return name, record["arguments"], call_id, None, call_id is None or type(call_id) is str
    else:
        return None
    if type(name) is not str:
        return None
    return name, arguments, call_id if type(call_id) is str and call_id else None, api, True


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
    lines: LaneLines | Iterable[tuple[int, Any]],
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
                name, arguments, call_id, value, api = found_held
                at += 1
                index += 1
                summary.calls += passed + 1
                summary.valid += passed
                passed = 0
                call = FoundCall(name, arguments, call_id, number, index, api)
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
