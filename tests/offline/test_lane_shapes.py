"""The valid lane (`xerj_tools._offline._lane`) reads every one-call record shape `validate`
reads: Chat Completions tool calls, plain ``{"name", "arguments"}`` records, Responses
``function_call`` items, Anthropic ``tool_use`` blocks and Gemini ``functionCall`` parts.

For each shape, random files (valid, invalid and repairable calls, records with odd ids, extra
keys and odd bytes) get from the lane exactly the report the full path gives; and a file of the
benchmark's calls in each shape is read by the lane alone, the full path's reader never asked.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import _json, load_registry, validate_batch
from xerj_tools._offline import _lane
from xerj_tools._offline._records import FoundCall, find_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls
from support import nested

from argument_values import argument_values

REGISTRY = load_registry()
NAMES = [spec.name for spec in REGISTRY]
# (orjson reads an integer of 20 digits as a float, `json` keeps it an int)
NUMBERS = [-1, 0, 1, 5, 10, 5000, 10_001, 5000.0, 10.0, 0.5, 10**30, True, 2**63, -(10**19), 1e300]
TEXTS = ["", " ", "docs", "agent", "a,b", "logs-*", "..", "Bad NS", "rrf", "body", "x" * 300]


# (the arguments' depth limit is 64: a list of 62 levels inside them is within it, 63 past it)
LISTS = [[], [0.1, 0.2], [1, "a"], ["title"], [None], [{"_score": "desc"}], [1.0, 2], [[1.0]],
         nested(62), nested(63)]  # fmt: skip
CLAUSES = [{}, {"match": {"body": "tea"}}, {"term": {"a": 1}}, {"match": {}, "size": 3}]
_, value = argument_values([*NUMBERS, *TEXTS], LISTS, CLAUSES, ["query", "window", "bogus"], 3)

# Ids as a record may hold them: the full path reports a plain record's as it is, the shapes'
# only where they are text that is not empty.
IDS = [None, "", "c1", 7, 12345678901234567890123, ["x"], {"a": 1}]
# Keys a record may carry beside its call: some change which format reads it, or how.
EXTRA: list[dict[str, Any]] = [
    {},
    {"index": 0},
    {"status": "completed"},
    {"role": "assistant"},
    {"type": "text"},
    {"custom_id": "r1", "response": {"status_code": 200}},
    {"messages": []},
    {"meta": {"deep": [[[[1]]]]}},
    {"tool": "xerj_search"},
    {"thoughtSignature": "c2ln"},
]
SHAPES = calls.SHAPES


@pytest.fixture(autouse=True)
def _orjson() -> None:
    if not _json._load():
        pytest.skip("the lane reads with orjson (the `fast` extra)")


# The strategies a draw takes from, made once (making them in each draw costs more than drawing).
_NAMED = st.sampled_from([*NAMES, "xerj_nope"])
_KEYS = {
    name: st.sampled_from(
        [*(REGISTRY[name].parameters.get("properties", {}) if name in NAMES else ()), "x"]
    )
    for name in [*NAMES, "xerj_nope"]
}
_ANYTHING = {name: st.dictionaries(key, value, max_size=6) for name, key in _KEYS.items()}
_NO_OBJECT = st.sampled_from(["", "[1]", 3, None, "tea", [1]])


@st.composite
def arguments(draw: Any) -> tuple[str, Any]:
    name = draw(_NAMED)
    if name in NAMES and draw(st.booleans()):  # a recorded valid call, kept or changed
        args: Any = calls._valid(random.Random(draw(st.integers(0, 10_000))), name)
        for _ in range(draw(st.integers(0, 2))):
            args[draw(_KEYS[name])] = draw(value)
    else:
        args = draw(_ANYTHING[name])
    if draw(st.integers(0, 9)) == 0:  # arguments that are no object
        args = draw(_NO_OBJECT)
    return name, args


def _odd(text: str, how: int) -> str:
    """`text` (one JSON record) made odd in one of a few ways, or left as it is."""
    if how == 1:
        return "\ufeff" + text  # a BOM
    if how == 2:
        return text[: len(text) // 2]  # cut short
    if how == 3:
        return text.replace('"', '"\\ud800', 1)  # a lone surrogate, escaped, in the first key
    if how == 4:
        return text[:-1] + ', "n": NaN}'
    if how == 5:
        return text.replace("{", "[", 1)
    if how == 6:
        return text.replace("{", "{\"k\": " + "[" * 80 + "]" * 80 + ", ", 1)  # too deep
    return text


@st.composite
def record_lines(draw: Any, shape: str) -> list[bytes]:
    lines: list[bytes] = []
    for _ in range(draw(st.integers(1, 8))):
        name, args = draw(arguments())
        record = calls.record("c", name, {}, shape)
        text_args = shape in ("chat", "plain", "responses")
        # text where the shape writes text (mostly), an object where it holds one (mostly)
        as_text = isinstance(args, dict) and (draw(st.integers(0, 5)) > 0) == text_args
        payload = json.dumps(args) if as_text else args
        if shape == "chat":
            record["function"]["arguments"] = payload
        elif shape == "anthropic":
            record["input"] = payload
        elif shape == "gemini":
            record["functionCall"]["args"] = payload
            if draw(st.integers(0, 5)) == 0:
                del record["functionCall"]["args"]  # a call without parameters
        else:
            record["arguments"] = payload
        id_key = {"responses": "call_id", "gemini": None}.get(shape, "id")
        call_id = draw(st.sampled_from(IDS))
        target = record["functionCall"] if shape == "gemini" else record
        if call_id is None:
            target.pop(id_key or "id", None)
        else:
            target[id_key or "id"] = call_id
        record.update(draw(st.sampled_from(EXTRA)))
        if shape == "responses" and draw(st.integers(0, 7)) == 0:  # a custom tool's call
            record["type"] = "custom_tool_call"
            record["input"] = record.pop("arguments")
        text = json.dumps(record, ensure_ascii=draw(st.booleans()))
        text = _odd(text, draw(st.integers(0, 12)))
        lines.append(text.encode("utf-8", "surrogatepass"))
    return lines


def _both(lines: list[bytes], repair: bool) -> tuple[Any, Any]:
    lane = validate_batch(lines, REGISTRY, repair=repair)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_lane, "ENABLED", False)
        full = validate_batch(lines, REGISTRY, repair=repair)
    return lane, full


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=60)
@given(data=st.data(), repair=st.booleans())
def test_random_files_of_each_shape_get_the_full_paths_report(
    shape: str, data: Any, repair: bool
) -> None:
    lines = data.draw(record_lines(shape))
    lane, full = _both(lines, repair)
    assert lane == full


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_is_read_by_the_lane_not_the_full_paths_reader(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of the benchmark's calls (one in three invalid, some repairable) in each shape:
    the valid calls pass the lane and the others are handed over decoded, so the full path's
    reader (`line_calls`) reads no line; the report is the full path's all the same."""
    lines = [line.encode() for line in calls.records(600, seed=21, invalid=0.3, shape=shape)]
    read_in_full: list[int] = []
    original = _lane.line_calls

    def counted(number: int, line: Any) -> Any:
        read_in_full.append(number)
        return original(number, line)

    monkeypatch.setattr(_lane, "line_calls", counted)
    lane = validate_batch(lines, REGISTRY)
    assert read_in_full == []
    monkeypatch.setattr(_lane, "ENABLED", False)
    full = validate_batch(lines, REGISTRY)
    assert len(read_in_full) == 600
    assert lane == full and full["invalid"] > 100


def test_the_lane_passes_the_same_calls_whatever_their_shape() -> None:
    """The same calls written in each shape: the lane says yes to the same lines, and to no line
    the full path has anything to say about."""
    lane = _lane.Lane(REGISTRY)
    passed = {}
    for shape in SHAPES:
        lines = calls.records(400, seed=11, invalid=0.2, shape=shape)
        passed[shape] = [n for n, line in enumerate(lines) if lane.valid(line.encode())]
        for n in passed[shape]:
            [found] = find_calls(json.loads(lines[n]))
            assert isinstance(found, FoundCall)
            result = REGISTRY.validate(found.name, found.arguments, repair=True)
            assert result.ok and not result.repairs, lines[n]
    assert len(passed["chat"]) > 280
    assert all(found == passed["chat"] for found in passed.values()), {
        shape: len(found) for shape, found in passed.items()
    }


def test_a_refused_call_of_each_shape_is_held_as_the_full_path_finds_it() -> None:
    lane = _lane.Lane(REGISTRY)
    bad = {"index": "docs", "query": {}, "size": -1}
    text = json.dumps(bad)
    want = {
        "plain": ("xerj_search", text, "c", bad, None),
        "responses": ("xerj_search", text, "c", bad, "responses"),
        "anthropic": ("xerj_search", bad, "c", bad, "anthropic"),
        "gemini": ("xerj_search", bad, "c", bad, "gemini"),
    }
    for shape, held in want.items():
        box: list[Any] = [None]
        line = json.dumps(calls.record("c", "xerj_search", bad, shape)).encode()
        assert lane.run([line], 0, box) == 0 and box[0] == held, shape
    # a plain record's id is reported as it is: "" stays "" (the shapes' empty ids are None)
    box = [None]
    plain = {"id": "", "name": "xerj_search", "arguments": text}
    assert lane.run([json.dumps(plain).encode()], 0, box) == 0
    assert box[0] == ("xerj_search", text, "", bad, None)
    box = [None]
    tool_use = {"type": "tool_use", "id": "", "name": "xerj_search", "input": bad}
    assert lane.run([json.dumps(tool_use).encode()], 0, box) == 0
    assert box[0] == ("xerj_search", bad, None, bad, "anthropic")
