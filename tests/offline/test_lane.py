"""The valid lane (`xerj_tools._offline._lane`) and `--jobs N` by byte ranges (`xerj_tools._offline._ranges`)
change the speed of `xerj-tools validate`, never its report.

Each input is validated four ways, and the outputs compared byte for byte: the lane over the
file's bytes; the same with the lane turned off (`_lane.ENABLED`); the file on stdin, read as
text by the path that predates the lane; and `--jobs 2` over byte ranges cut small, so that
range boundaries fall next to invalid, unreadable and multi-call lines.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from xerj_tools import load_registry
from xerj_tools._cli._main import main
from xerj_tools._offline import _lane, _lines, _ranges
from xerj_tools._offline._records import FoundCall, find_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calls
from support import nested


def _call(name: str, arguments: Any, **extra: Any) -> str:
    function = {"name": name, "arguments": arguments}
    return json.dumps({"id": "c", "type": "function", "function": function, **extra})


SEARCH = {"index": "docs", "query": {"match": {"body": "tea"}}}
NASTY: list[str] = [
    _call("xerj_search", json.dumps(SEARCH)),
    "",
    "   ",
    "\x0c",  # blank to str.strip, not to bytes.strip
    "not json at all",
    "\ufeff" + _call("xerj_search", json.dumps(SEARCH)),  # a BOM
    _call("xerj_search", '{"index": "docs", "query": {}, "size": NaN}'),
    '{"id": "c", "type": "function", "n": Infinity, "function": {"name": "xerj_search", "arguments": "{}"}}',
    _call("xerj_search", '{"index": "docs", "query": {"term": {"n": 12345678901234567890123}}}'),
    _call("xerj_search", '{"index": "docs", "query": {"term": {"n": 1234567890123456789}}}'),
    _call("xerj_search", '{"index": "docs", "query": {}, "size": 12345678901234567890}'),
    '{"id": 12345678901234567890123, "type": "function", "function": {"name": "xerj_search", '
    '"arguments": "{\\"index\\": \\"docs\\", \\"query\\": {}}"}}',
    _call("xerj_search", '{"index": "docs", "query": {"term": {"n": 1e400}}}'),
    _call("xerj_search", '{"index": "docs", "query": {"term": {"n": 1e200}}}'),
    _call("xerj_search", '{"index": "docs", "query": {"term": {"t": "\\ud800"}}}'),  # escaped
    _call("xerj_search", '{"index": "docs", "query": {"term": {"t": "\\ud83d\\ude00"}}}'),
    '{"id": "c", "type": "function", "function": {"name": "xerj_search", "arguments": '
    '"{\\"index\\": \\"d\\ud800\\", \\"query\\": {}}"}}',  # a lone surrogate in the record
    _call("xerj_search", json.dumps({"index": "docs", "query": {"match": {"body": "thé 東京"}}})),
    _call(
        "xerj_search",
        json.dumps({"index": "docs", "query": {"match": {"body": "thé"}}}, ensure_ascii=False),
    ),
    _call("xerj_search", json.dumps({"index": "docs", "query": {"x": nested(62)}})),  # 64 levels
    _call("xerj_search", json.dumps({"index": "docs", "query": {"x": nested(63)}})),  # 65 levels
    _call("xerj_search", json.dumps(SEARCH), extra=nested(85)),  # the record too deep
    _call("xerj_search", json.dumps(SEARCH), extra=nested(40)),
    '{"id": "c", "type": "function", "function": {"name": "xerj_search", "arguments": '
    '"\\u007b\\"index\\": \\"docs\\", \\"query\\": \\u007b\\u007d\\u007d"}}',  # escaped brackets
    _call("xerj_search", ""),
    _call("xerj_search", "   "),
    _call("xerj_list_indices", ""),
    _call("xerj_search", SEARCH),  # arguments as an object
    _call("xerj_search", "[1]"),
    _call("xerj_search", "3"),
    _call("xerj_search", None),
    _call("xerj_nope", json.dumps(SEARCH)),
    _call(["xerj_search"], json.dumps(SEARCH)),  # type: ignore[arg-type]
    _call("xerj_search", '{"index": "a", "index": "docs", "query": {}}'),  # duplicate keys
    _call("xerj_search", '{"index": "docs", "query": {}, "size": 5000.0}'),
    _call("xerj_search", '{"index": "docs", "query": {}, "size": true}'),
    _call("xerj_search", '{"index": "docs", "query": {}, "size": "10"}'),  # repaired
    _call("xerj_search", '{"index": "docs", "query": {}, "from": 9995}'),
    _call("xerj_search", json.dumps({**SEARCH, "rerank": {"window": 50}})),
    _call("xerj_search", json.dumps({**SEARCH, "size": 60, "rerank": {"window": 50}})),
    _call("xerj_vector_search", '{"index": "d", "field": "f", "query_vector": [1, 2], "k": 10}'),
    _call("xerj_vector_search", '{"index": "d", "field": "f", "query_vector": [], "k": 10}'),
    _call("xerj_memory_recall", '{"namespace": "agent", "query": " "}'),
    _call("xerj_search", json.dumps(SEARCH), custom_id="r1"),  # custom_id without a response
    _call("xerj_search", json.dumps(SEARCH), custom_id="r1", response={"status_code": 200}),
    _call("xerj_search", json.dumps(SEARCH), messages=[], tools=[]),  # a fine-tuning example
    # orjson reads this as a float; `json` keeps the int, which the checks refuse
    _call(
        "xerj_search", '{"index": "docs", "query": {}, "track_total_hits": -12345678901234567890}'
    ),
    json.dumps(
        {
            "custom_id": "r2",
            "response": {
                "status_code": 200,
                "body": {
                    "choices": [
                        {
                            "message": {
                                "role": "assistant",
                                "tool_calls": [
                                    json.loads(
                                        _call(
                                            "xerj_search",
                                            '{"index": "docs", "query": {}, "size": -1}',
                                        )
                                    )
                                ],
                            }
                        }
                    ]
                },
            },
        }
    ),
    json.dumps(
        {
            "messages": [
                {"role": "assistant", "tool_calls": [json.loads(_call("mine", '{"q": 1}'))]}
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "mine",
                        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                    },
                }
            ],
        }
    ),
    json.dumps(
        {
            "type": "function_call",
            "call_id": "r",
            "name": "xerj_search",
            "arguments": json.dumps(SEARCH),
        }
    ),
    json.dumps({"type": "tool_use", "id": "t", "name": "xerj_search", "input": {"index": "docs"}}),
    json.dumps(
        [
            json.loads(_call("xerj_search", json.dumps(SEARCH))),
            json.loads(_call("xerj_search", "{}")),
        ]
    ),
    json.dumps({"name": "xerj_search", "arguments": json.dumps(SEARCH)}),
    # the other shapes the lane reads, each with what sends it to the full path
    json.dumps({"id": "", "name": "xerj_search", "arguments": json.dumps({**SEARCH, "size": -1})}),
    json.dumps({"call_id": 5, "tool": "xerj_search", "arguments": json.dumps(SEARCH)}),
    json.dumps({"name": "xerj_search", "arguments": SEARCH, "role": "assistant"}),
    json.dumps({"type": "function_call", "call_id": "", "name": "xerj_search", "arguments": "{}"}),
    json.dumps({"type": "function_call", "call_id": "r", "name": "xerj_search", "arguments": SEARCH}),
    json.dumps({"type": "custom_tool_call", "call_id": "r", "name": "xerj_search", "input": "{}"}),
    json.dumps({"type": "tool_use", "id": "t", "name": "xerj_search", "input": SEARCH}),
    json.dumps({"type": "tool_use", "id": "t", "name": "xerj_search", "input": json.dumps(SEARCH)}),
    json.dumps({"type": "tool_use", "id": "t", "name": "xerj_search",
                "input": {**SEARCH, "query": {"x": nested(63)}}}),
    json.dumps({"type": "tool_use", "id": "t", "name": "xerj_search",
                "input": {**SEARCH, "size": -12345678901234567890}}),
    json.dumps({"functionCall": {"name": "xerj_search", "args": SEARCH}}),
    json.dumps({"functionCall": {"id": "g", "name": "xerj_list_indices"}}),
    json.dumps({"functionCall": {"id": "g", "name": "xerj_search", "args": {"index": 5}}}),
    json.dumps({"function_call": {"name": "xerj_search", "args": SEARCH}}),
    json.dumps({"type": "web_search_call", "id": "w"}),
    _call("xerj_search", json.dumps(SEARCH)) + "\r" + _call("xerj_search", "{}"),  # a lone CR
    _call("xerj_search", json.dumps(SEARCH)) + "\r",
    _call("xerj_search", json.dumps({**SEARCH, "query": {"match": {"body": "x" * 5000}}})),  # long
    # the strict schemas (each limit kind's fragment): each at or past a limit it states
    _call("xerj_search", '{"index": "docs", "query": {}, "size": 5e3}'),  # an integer as a float
    _call("xerj_search", '{"index": "docs", "query": {}, "size": 10, "from": 5001}'),
    _call("xerj_search", '{"index": "-docs", "query": {}}'),
    _call("xerj_search", '{"index": "Docs", "query": {}}'),
    _call("xerj_hybrid_search", '{"index": "d", "queries": [{"query": {}}], "rrf_k": 2.0}'),
    _call(
        "xerj_hybrid_search",
        '{"index": "d", "queries": [{"query": {}}], "rrf_k": 12345678901234567890123}',
    ),
    _call("xerj_vector_search", '{"index": "d", "field": "f", "query_vector": [1e308, 1e308]}'),
    _call("xerj_vector_search", '{"index": "d", "field": "f", "query_vector": [0.5], "k": 1e1}'),
    _call("xerj_memory_store", '{"namespace": "agent-edges", "text": "t"}'),
    _call("xerj_memory_store", '{"namespace": "a.b", "text": "t", "id": "\\u001c"}'),
    _call("xerj_memory_recall", '{"namespace": "agent", "query": "\\u3000"}'),
    _call("xerj_get_document", '{"index": "docs", "id": ".."}'),
    '{"id": 7, "type": "function", "function": {"name": "xerj_get_document", '
    '"arguments": "{\\"index\\": \\"docs\\", \\"id\\": \\"1\\"}"}}',  # an id that is no text
]


def _file(tmp_path: Path, name: str, lines: list[str], newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(newline.join(lines).encode("utf-8", "surrogatepass") + newline.encode())
    return path


def _run(argv: list[str], stdin: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _four_ways(
    path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> list[tuple[int, str, str]]:
    argv = ["validate", str(path), *extra]
    lane = _run(argv)
    monkeypatch.setattr(_lane, "ENABLED", False)
    off = _run(argv)
    monkeypatch.setattr(_lane, "ENABLED", True)
    with path.open(encoding="utf-8") as stdin:  # the text path that predates the lane
        text = _run(["validate", "-", *extra], stdin)
    monkeypatch.setattr(_ranges, "CHUNK_BYTES", 700)
    jobs = _run([*argv, "--jobs", "2"])
    return [lane, off, text, jobs]


@pytest.mark.parametrize("format", ["json", "text"])
def test_hostile_lines_get_the_report_of_the_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format: str
) -> None:
    lane, off, text, jobs = _four_ways(
        _file(tmp_path, "nasty.jsonl", NASTY), monkeypatch, "--format", format
    )
    assert lane == off == text == jobs
    if format == "json":
        report = json.loads(lane[1])
        assert report["calls"] > 40 and report["invalid"] > 15 and report["unreadable_lines"] >= 3


def test_a_mixed_file_gets_the_same_report_every_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = calls.records(1500, seed=3, invalid=0.2)
    for i in range(0, 1500, 97):  # unreadable and hostile lines scattered across range boundaries
        lines.insert(i, NASTY[i % len(NASTY)])
    path = _file(tmp_path, "mixed.jsonl", lines)
    lane, off, text, jobs = _four_ways(path, monkeypatch, "--format", "json")
    assert lane == off == text == jobs
    assert json.loads(lane[1])["valid"] > 1000


def test_crlf_lines_get_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, "crlf.jsonl", calls.records(300, seed=5, invalid=0.3), newline="\r\n")
    lane, off, text, jobs = _four_ways(path, monkeypatch, "--format", "json")
    assert lane == off == text == jobs


def test_the_lane_says_yes_to_valid_calls_only() -> None:
    pytest.importorskip("orjson")  # without the `fast` extra the lane passes nothing on
    lane = _lane.Lane(load_registry())
    valid = [line.encode() for line in calls.records(400, seed=11, invalid=0.0)]
    assert sum(map(lane.valid, valid)) >= 380  # the rest are repaired calls: reported
    for line in NASTY:
        raw = line.encode("utf-8", "surrogatepass")
        if lane.valid(raw):  # what the lane passes, the full path finds valid with nothing to say
            [found] = find_calls(json.loads(line))
            assert isinstance(found, FoundCall)
            result = load_registry().validate(found.name, found.arguments, repair=True)
            assert result.ok and not result.repairs, line


def test_a_file_that_is_not_utf8_is_refused_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        _call("xerj_search", json.dumps(SEARCH)).encode() + b"\n" + "thé".encode("latin-1") + b"\n"
    )
    for jobs in ("1", "2"):
        code, _, err = _run(["validate", str(path), "--jobs", jobs])
        assert code == 2 and "not UTF-8" in err


def test_ranges_cover_the_file_on_line_starts(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.jsonl", ["a" * n for n in range(1, 60)])
    data = path.read_bytes()
    bounds = list(_ranges.chunk_bounds(str(path), 100))
    assert bounds[0][0] == 0 and bounds[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(data[start - 1 : start] == b"\n" for start, _ in bounds[1:])


@pytest.mark.slow
def test_ranges_in_spawned_workers_give_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the process holds threads, the workers are spawned: the same report."""
    path = _file(tmp_path, "spawned.jsonl", [*calls.records(200, seed=9, invalid=0.3), *NASTY[:12]])
    one = _run(["validate", str(path), "--format", "json"])
    monkeypatch.setattr(_ranges, "start_method", lambda: "spawn")
    monkeypatch.setattr(_ranges, "CHUNK_BYTES", 4000)
    assert _run(["validate", str(path), "--format", "json", "--jobs", "2"]) == one


def test_small_chunks_get_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file read in chunks of a few bytes: lines cut across chunks, CRs and CRLFs at the
    cuts, a last line without its newline."""
    lines = [*calls.records(120, seed=13, invalid=0.3), *NASTY]
    for newline in ("\n", "\r\n"):
        path = tmp_path / "chunks.jsonl"
        path.write_bytes(newline.join(lines).encode("utf-8", "surrogatepass"))  # no last newline
        want = _run(["validate", str(path), "--format", "json"])
        for size in (1, 7, 97):
            monkeypatch.setattr(_lines, "CHUNK", size)
            assert _run(["validate", str(path), "--format", "json"]) == want, (newline, size)
        monkeypatch.setattr(_lane, "ENABLED", False)
        assert _run(["validate", str(path), "--format", "json"]) == want
        monkeypatch.undo()


def test_a_workers_rendered_report_is_the_report_line_moved_on() -> None:
    # --jobs --format json: a worker writes each call's report line itself (`Rendered`), the
    # parent moves its numbers on; the line is the one the plain form gives, numbers moved.
    from xerj_tools._offline._records import FoundCall
    from xerj_tools._offline._report import _json_line, render, shifted
    from xerj_tools._offline._validate import CallReport
    from xerj_tools._problems import Problem

    call = FoundCall("xerj_search", "{}", 'id "ü\x1b', line=3, index=2)
    report = CallReport(call, False, (Problem("$.size", "must be \x07 ≥ 0"),), ("$.k: '5' → 5",))
    rendered = render(report)
    assert rendered is not None and rendered.text() == _json_line(report.as_dict())
    [plain] = shifted([report.as_dict()], 100, 40)
    assert (plain["line"], plain["index"]) == (103, 42)
    assert rendered.text(100, 40) == _json_line(plain)


def test_threads_sharing_a_registry_get_their_own_reports() -> None:
    """`lane_for` gives the threads that validate with one registry one lane: what it holds of a
    refused call stays with the thread that asked (Dask's threaded workers validate so)."""
    import threading

    from xerj_tools._offline._lines import LaneLines
    from xerj_tools._offline._validate import CallReport

    registry = load_registry()
    inputs = [
        "\n".join(calls.records(300, seed=seed, invalid=0.5)).encode() + b"\n" for seed in range(4)
    ]

    def run(data: bytes) -> tuple[Any, list[dict[str, Any]]]:
        reports: list[CallReport] = []
        summary = _lane.validate_lines(registry, LaneLines(io.BytesIO(data)), on_report=reports.append)
        return (summary.calls, summary.valid, summary.invalid), [r.as_dict() for r in reports]

    alone = [run(data) for data in inputs]
    got: dict[int, Any] = {}
    start = threading.Barrier(len(inputs))

    def worker(i: int) -> None:
        start.wait()
        got[i] = [run(inputs[i]) for _ in range(3)]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for i, want in enumerate(alone):
        assert want[0][2] > 50  # many refused calls, each held by the lane
        assert got[i] == [want] * 3


def test_a_refused_call_is_held_in_the_callers_box_not_in_the_lane() -> None:
    pytest.importorskip("orjson")  # the lane reads with orjson (the `fast` extra)
    lane = _lane.Lane(load_registry())
    before = dict(vars(lane))
    good = _call("xerj_search", json.dumps(SEARCH)).encode()
    bad = json.dumps(
        {"id": "c9", "type": "function",
         "function": {"name": "xerj_search", "arguments": json.dumps({**SEARCH, "size": -1})}}
    ).encode()  # fmt: skip
    box: list[Any] = [None]
    assert lane.run([good, bad, good], 0, box) == 1
    assert box[0] == (
        "xerj_search", json.dumps({**SEARCH, "size": -1}), "c9", {**SEARCH, "size": -1}, "chat"
    )  # fmt: skip
    box[0] = None
    assert lane.run([b"not json", bad], 0, box) == 0 and box[0] is None  # nothing decoded
    unusual = json.dumps({"id": "c", "type": "function", "index": 0, "function": {
        "name": "xerj_search", "arguments": json.dumps({**SEARCH, "size": -1})}}).encode()
    assert lane.run([unusual], 0, box) == 0 and box[0] is None  # not the usual record
    assert lane.run([bad], 0) == 0  # without a box, nothing is held
    assert {k: v for k, v in vars(lane).items()} == before  # a run changes nothing in the lane


def test_a_check_that_tidies_the_arguments_it_is_given_gets_the_same_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check of yours that changes the arguments it judges (here it strips the query it then
    complains about): the full path decodes the call afresh for its report, so the lane, which
    ran the check on its own decode first, hands the call over decoded again, never the object
    the check changed (that one the check would now find nothing in: counted valid)."""
    from xerj_tools import validate_batch
    from xerj_tools._problems import Problem

    def trimmed(args: Any) -> Any:
        query = args.get("query")
        if isinstance(query, str) and query != query.strip():
            args["query"] = query.strip()
            yield Problem("$.query", "has spaces around it")

    registry = load_registry().with_limits({"xerj_memory_recall": [trimmed]})
    recall = {"namespace": "agent", "query": " tea "}
    lines = [
        _call("xerj_memory_recall", json.dumps(recall)),
        _call("xerj_search", json.dumps(SEARCH)),
    ]
    got = [validate_batch(batch, registry) for batch in (lines, [line.encode() for line in lines])]
    monkeypatch.setattr(_lane, "ENABLED", False)
    want = validate_batch(lines, registry)
    assert want["invalid"] == 1 and want["results"][0]["problems"][0]["path"] == "$.query"
    assert got == [want, want]


def test_a_registry_or_tool_that_validates_in_its_own_way_is_asked_for_each_refused_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A subclass of `ToolRegistry` or `ToolSpec` of yours whose `validate` does more (here it
    counts the calls it is asked about) is asked about each call the lane refuses, as the full
    path asks it: the lane holds no decoded call for such a registry or tool."""
    pytest.importorskip("orjson")  # the lane reads with orjson (the `fast` extra)
    import dataclasses

    from xerj_tools import ToolRegistry, ToolSpec, validate_batch

    asked: list[str] = []

    class Counting(ToolRegistry):
        def validate(self, name: str, arguments: object, *, repair: bool = False) -> Any:
            asked.append(name)
            return super().validate(name, arguments, repair=repair)

    @dataclasses.dataclass(frozen=True)
    class CountingSpec(ToolSpec):
        def validate(self, arguments: object, *, repair: bool = False) -> Any:
            asked.append("spec " + self.name)
            return super().validate(arguments, repair=repair)

    specs = list(load_registry())
    search = next(spec for spec in specs if spec.name == "xerj_search")
    fields = {f.name: getattr(search, f.name) for f in dataclasses.fields(search)}
    mixed = [CountingSpec(**fields) if s is search else s for s in specs]
    bad = json.dumps({**SEARCH, "size": -1})
    lines = [_call("xerj_search", json.dumps(SEARCH)), _call("xerj_search", bad)] * 2
    for registry in (Counting(specs), ToolRegistry(mixed)):
        monkeypatch.setattr(_lane, "ENABLED", False)
        want = validate_batch(lines, registry)
        monkeypatch.setattr(_lane, "ENABLED", True)
        asked.clear()
        assert validate_batch(lines, registry) == want and want["invalid"] == 2
        assert len(asked) == 2  # the refused calls, each asked once (the valid ones pass the lane)


@pytest.mark.parametrize("repair", [True, False])
def test_validating_the_quick_decode_is_validating_the_text(repair: bool) -> None:
    """`ToolSpec._validate_decoded` (what the lane hands a refused call's decode to) answers as
    `validate` does for the text, on every call of a file half of whose calls are invalid."""
    pytest.importorskip("orjson")  # the quick decode is orjson's (the `fast` extra)
    from xerj_tools._schema._quick import quick_object

    registry = load_registry()
    seen = 0
    for line in calls.records(600, seed=11, invalid=0.5):
        function = json.loads(line)["function"]
        spec, text = registry[function["name"]], function["arguments"]
        value = quick_object(text)
        assert value is not None  # (the benchmark's calls decode quickly)
        want = spec.validate(text, repair=repair)
        assert spec._validate_decoded(value, repair=repair) == want
        seen += not want.ok or bool(want.repairs)
    assert seen > 200  # most of the invalid half: refused, or repaired
