"""The JSON seam: with orjson (the `fast` extra) every tool message and every decoded answer is
exactly what the standard library alone makes."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xerj_tools import _json
from xerj_tools._http._models import Reply
from xerj_tools._message._fit_hits import clean_json
from xerj_tools.tools._hits import decode_search
from xerj_tools.tools._source_view import SourceView

orjson = pytest.importorskip("orjson")


@pytest.fixture
def stdlib_only() -> Iterator[None]:
    """The seam as it is without the `fast` extra."""
    saved = _json._orjson
    _json._orjson = False
    try:
        yield
    finally:
        _json._orjson = saved


def both(fn: Any, *args: Any) -> tuple[Any, Any]:
    saved = _json._orjson
    _json._load()
    fast = fn(*args)
    _json._orjson = False
    try:
        return fast, fn(*args)
    finally:
        _json._orjson = saved


def hit(i: int, **source: Any) -> dict[str, Any]:
    return {"_index": "docs", "_id": f"d-{i}", "_score": 3.2 - i * 0.1, "_source": source}


PAYLOADS = {
    "ten hits": {"ok": True, "total": 10, "hits": [
        hit(i, title=f"Postmortem {i}", year=2026, body="Checkout search failed " * 8) for i in range(10)]},
    "non-ASCII and escapes": {"ok": True, "hits": [hit(0, title="Zürich — 東京 🚀", body='say "hi"\\n\ttab\x00\x1f\x7f\u2028')]},
    "floats of every shape": {"scores": [0.1, 1.5, -0.0, 1e-05, 1e-7, 0.00012, 1e16, 1.2345678901234568e+17,
                                         123456.789, 5e-324, 1.7976931348623157e308, 2.5e-300, 100.0]},
    "big and small ints": {"n": [0, -1, 2**53, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, 2**70, -(2**80), 10**30]},
    "vectors": {"hits": [hit(i, body_vector=[math.sin(i * k) for k in range(384)]) for i in range(3)]},
    "empty and nested": {"a": {}, "b": [], "c": [[[{"d": [None, True, False]}]]], "": ""},
    "null scores": {"hits": [{"_id": "x", "_score": None, "sort": [1700000000000, "a"]}]},
    "text that looks like numbers": {"note": "1e-5 and 0.00001 and 12345678901234567890 and null"},
    "non-finite": {"x": float("nan"), "y": [float("inf"), -float("inf")]},
    "a str subclass": {"k": type("S", (str,), {})("v")},
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_a_tool_message_is_byte_identical_with_and_without_orjson(payload: dict[str, Any]) -> None:
    (fast_value, fast_text), (slow_value, slow_text) = both(lambda: clean_json(payload, plain=True))
    assert fast_text == slow_text
    assert json.dumps(fast_value, default=str) == json.dumps(slow_value, default=str)  # the payload too


def test_the_fast_path_is_taken_for_a_usual_answer() -> None:
    assert _json.fast_dumps(PAYLOADS["ten hits"]) is not None
    assert _json.fast_dumps(PAYLOADS["floats of every shape"]) is None  # left to `json`


def test_without_orjson_nothing_is_fast(stdlib_only: None) -> None:
    assert _json.fast_dumps({"a": 1}) is None and _json.fast_loads(b"{}") is NotImplemented


BODIES = {
    "ten hits": json.dumps({"took": 2, "hits": {"total": {"value": 10}, "hits": [
        hit(i, title=f"T {i}", body="b " * 50, year=2026, body_vector=[0.5] * 8) for i in range(10)]}}),
    "big ints": '{"hits": {"hits": [{"_id": "a", "_source": {"n": 1180591620717411303424, "m": -9223372036854775809}}]}}',
    "NaN and huge numbers": '{"hits": {"hits": [{"_id": "a", "_score": NaN, "_source": {"x": 1e400, "y": -Infinity}}]}}',
    "duplicate keys": '{"hits": {"hits": [{"_id": "a", "_source": {"t": 1, "u": 2, "t": 3}}]}}',
    "lone surrogate": '{"hits": {"hits": [{"_id": "a", "_source": {"t": "\\ud800"}}]}}',
    "nested ids": '{"hits": {"hits": [{"_id": "a", "_source": {"inner": {"_id": "b", "_source": {"body_vector": [1.0]}}}}]}}',
    "not an object": '[1, {"_id": 2}]',
    "a number": "5",
    "not JSON": "{nope",
}


@pytest.mark.parametrize("view", [SourceView(), SourceView(includes=("title", "n", "t", "inner")),
                                  SourceView(keep=False), SourceView(excludes=("body*",))],
                         ids=["no filter", "includes", "no source", "excludes"])
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_an_answer_decodes_to_the_same_values_with_and_without_orjson(body: str, view: SourceView) -> None:
    reply = Reply(200, httpx2.Headers(), body.encode("utf-8", "surrogatepass"), "http://n")
    fast, slow = both(decode_search, reply, view)
    assert repr(fast) == repr(slow)  # repr: the types too (an int stays an int), NaN compared as text


def test_utf16_and_bom_answers_fall_back() -> None:
    for body in ('{"a": 1}'.encode("utf-16"), b'\xef\xbb\xbf{"a": 1}'):
        reply = Reply(200, httpx2.Headers(), body, "http://n")
        fast, slow = both(decode_search, reply, SourceView())
        assert repr(fast) == repr(slow)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


# No deadline: Hypothesis's 200 ms per example is a timing assertion, which a busy machine fails.
@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=5))
def test_any_json_value_is_written_alike(value: dict[str, Any]) -> None:
    fast, slow = both(lambda: clean_json(value, plain=True)[1])
    assert fast == slow
    encoded = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert repr(both(_json.fast_loads, encoded)[0]) in (repr(json.loads(encoded)), "NotImplemented")
