"""A large search answer's long arrays of numbers are counted, not read: the hits the model
reads are the same as decoding every number would give, at a fraction of the cost."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from xerj_tools._http._models import Reply
from xerj_tools.tools._hits import FAST_BODY, _hit_hook, _narrow, decode_search
from xerj_tools.tools._number_runs import Counted, count_runs
from xerj_tools.tools._source_view import LONG_ARRAY, SourceView


def _every_number_read(body: bytes, view: SourceView) -> Any:
    """The answer as decoding each number gives it: `json` with the hit hook, then the view."""
    try:
        data = json.loads(body, parse_constant=lambda _: None, object_hook=_hit_hook(view))
    except (ValueError, RecursionError):
        return None
    _narrow(data, view)
    return data


def _vector(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.uniform(-1, 1), 7) for _ in range(n)]


def _padded(body: dict[str, Any]) -> bytes:
    """`body` as JSON larger than FAST_BODY (so `json` decodes it, not orjson)."""
    body = {**body, "pad": "p" * FAST_BODY}
    return json.dumps(body).encode()


def _hit(i: int, source: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"_index": "docs", "_id": str(i), "_score": 1.0, "_source": source, **more}


def _answer(*hits: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": list(hits)}, **more}


V = _vector(LONG_ARRAY + 1, 1)  # the shortest array read as an embedding
LONG = _vector(1536, 2)
CASES: dict[str, tuple[bytes, SourceView]] = {
    "an embedding in each hit": (
        _padded(_answer(*(_hit(i, {"t": "x", "embedding": LONG}) for i in range(20)))),
        SourceView(),
    ),
    "lists of vectors, 2 and 3 deep, and ints": (
        _padded(_answer(_hit(0, {"v": [V] * 30, "w": [[V, V]] * 3, "n": list(range(100))}))),
        SourceView(),
    ),
    "a named embedding is read whole": (
        _padded(_answer(_hit(0, {"t": "x", "embedding": LONG, "other": V}))),
        SourceView(includes=("t", "embedding")),
    ),
    "excludes": (
        _padded(_answer(_hit(0, {"t": "x", "embedding": LONG, "gone": V}))),
        SourceView(excludes=("gone",)),
    ),
    "XERJ's own companions are dropped": (
        _padded(_answer(_hit(0, {"t": "x", "t_vector": V, "t_vector_chunks": [V, V]}))),
        SourceView(),
    ),
    "long arrays outside _source are kept whole": (
        _padded(
            _answer(
                _hit(0, {"t": "x"}, fields={"embedding": LONG}, sort=list(range(70))),
                aggregations={"h": {"values": V}},
            )
        ),
        SourceView(),
    ),
    "an array inside a string stays text": (
        _padded(_answer(_hit(0, {"t": json.dumps(V), "u": 'a \\" [' + ",".join(["1"] * 80) + "]"}))),
        SourceView(),
    ),
    "an escaped quote and backslashes before an array": (
        _padded(_answer(_hit(0, {"q": 'say \\"hi\\" \\\\', "e": LONG, "r": '\\\\"'}))),
        SourceView(),
    ),
    "NaN, null and a string among the numbers": (
        (b'{"hits":{"hits":[{"_id":"0","_source":{"a":[NaN,'
        + ",".join(map(str, V)).encode()
        + b'],"b":[null,'
        + ",".join(map(str, V)).encode()
        + b'],"c":["x",'
        + ",".join(map(str, V)).encode()
        + b']}}]},"pad":"'
        + b"p" * FAST_BODY
        + b'"}'),
        SourceView(),
    ),
    "1e400, -0.0 and whitespace": (
        (b'{"hits":{"hits":[{"_id":"0","_source":{"e":[1e400, -0.0,\n\t'
        + b" , ".join(b"0.5" for _ in range(100))
        + b' ]}}]},"kept":[ '
        + b",".join(b"1E+2" for _ in range(100))
        + b'],"pad":"'
        + b"p" * FAST_BODY
        + b'"}'),
        SourceView(),
    ),
    "an answer that is one long array": (b"[" + b",".join(b"7" for _ in range(FAST_BODY)) + b"]", SourceView()),
    "a hit without an _id keeps its array for the reader": (
        _padded(_answer({"_index": "docs", "_source": {"e": LONG}})),
        SourceView(),
    ),
    "no source at all": (_padded(_answer(_hit(0, {"e": LONG}))), SourceView(keep=False)),
}


@pytest.mark.parametrize("case", CASES)
def test_counting_long_arrays_reads_as_decoding_every_number(case: str) -> None:
    body, view = CASES[case]
    assert len(body) > FAST_BODY
    # arrays inside strings, or holding anything but numbers, are decoded as they are
    uncounted = ("an array inside a string stays text", "NaN, null and a string among the numbers")
    assert (count_runs(body) is None) == (case in uncounted)
    assert decode_search(Reply(200, {}, body), view) == _every_number_read(body, view)


def test_long_arrays_are_counted_only_outside_strings() -> None:
    inside = json.dumps({"s": json.dumps(V), "t": "\\" + json.dumps(V)}).encode()
    assert count_runs(inside) is None
    outside = json.dumps({"s": '"', "v": V, "w": ["\\", V]}).encode()
    counted = count_runs(outside)
    assert counted is not None and counted.text.count(b"[") == 3  # two stand-ins and the list
    assert counted.restored(json.loads(counted.text)) == json.loads(outside)


@pytest.mark.parametrize("broken", [b"1..5", b"--1", b"1,,2", b"01"])
def test_a_malformed_array_that_is_read_makes_the_answer_unreadable(broken: bytes) -> None:
    numbers = b",".join([b"1"] * 80).replace(b"1,1", b"1," + broken, 1)
    body = b'{"hits":{"hits":[]},"kept":[' + numbers + b'],"pad":"' + b"p" * FAST_BODY + b'"}'
    assert _every_number_read(body, SourceView()) is None
    assert decode_search(Reply(200, {}, body), SourceView()) is None


def test_ten_hits_of_ten_thousand_small_vectors_are_counted_not_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The long arrays stand in for themselves in the text that is decoded, and an embedding the
    hits leave out is never decoded at all; the hits read as decoding every number reads them.
    (What that saves is measured by benchmarks, not here: docs/performance.md.)"""
    source = '{"t":"x","v":[' + ",".join("[" + ",".join(["0.5"] * 65) + "]" for _ in range(2000)) + "]}"
    hits = ",".join(f'{{"_index":"d","_id":"{i}","_score":1,"_source":{source}}}' for i in range(10))
    body = ('{"hits":{"hits":[' + hits + "]}}").encode()
    reply, view = Reply(200, {}, body), SourceView()
    counted = count_runs(body)
    # each array of 65 numbers stands in as three (a tag, its place, its length)
    assert counted is not None and len(counted.text) * 5 < len(body)
    decoded: list[Any] = []
    original = Counted._original
    monkeypatch.setattr(Counted, "_original", lambda self, s: decoded.append(s) or original(self, s))
    assert decode_search(reply, view) == _every_number_read(body, view)
    assert decoded == []  # no array was decoded: every one was left out of the hits
