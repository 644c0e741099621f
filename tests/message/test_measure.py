"""Measuring hits by counting: the counted length is the written length, edge by edge (strings at
the cut boundary, non-ASCII text, escapes, numbers orjson writes otherwise), and the fitted message
orjson writes is the message `json` writes."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import _json
from xerj_tools._message._budget import fit_message, fit_result
from xerj_tools._message._fit_hits import MIN_CUT, Measured, cut_strings, size, surely_longer
from xerj_tools._message._format import dumps
from xerj_tools._message._measure import measure

EXAMPLES = int(os.environ.get("XERJ_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def written(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


# Text made of what changes a JSON length: non-ASCII (one character, several UTF-8 bytes), an
# astral character, what JSON escapes (quote, backslash, control characters), what it does not
# escape though unprintable (DEL, LINE SEPARATOR), and brackets.
EDGY = "aé東🚀\"\\\n\x00\x1f\x7f\u2028 [{0"
edgy_text = st.text(alphabet=st.sampled_from(EDGY), min_size=MIN_CUT - 5, max_size=MIN_CUT + 40)
at_the_boundary = st.sampled_from([MIN_CUT - 1, MIN_CUT, MIN_CUT + 1, MIN_CUT + 10, MIN_CUT + 11, MIN_CUT + 12])
boundary_text = st.builds(lambda n, c: c * n, at_the_boundary, st.sampled_from(["x", "é", "🚀", '"', "\n"]))
numbers = st.one_of(st.integers(), st.floats(), st.sampled_from([1e-05, 9.99e-05, 1e-07, 1e16, 1.5e300, -0.0, 2**64]))
leaf = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=30), edgy_text, boundary_text,
                 st.text(alphabet=st.characters(), min_size=MIN_CUT, max_size=600))
value = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                 st.dictionaries(st.text(max_size=8), inner, max_size=5)),
                     max_leaves=16)
hit = st.fixed_dictionaries({"_id": st.text(max_size=10), "_score": numbers},
                            optional={"_source": st.dictionaries(st.text(max_size=8), value, max_size=5),
                                      "highlight": st.dictionaries(st.text(max_size=6),
                                                                   st.lists(edgy_text, max_size=3), max_size=2)})


@SETTINGS
@given(hits=st.lists(st.one_of(hit, value), min_size=1, max_size=6),
       cap=st.one_of(st.none(), st.just(0), st.integers(min_value=MIN_CUT, max_value=260)))
def test_a_counted_size_is_the_written_size_at_every_edge(hits: list[Any], cap: int | None) -> None:
    measured = Measured(hits)
    for i, original in enumerate(hits):
        measured.size(i, None)
        shown = measured.hits[i]  # cleaned (NaN made null) once measured
        if cap == 0:  # a lower bound of every cut at MIN_CUT or more
            assert all(measured.size(i, 0) <= size(cut_strings(shown, c, "", [])) for c in (200, 213, 260, 10**6))
        elif cap is None:
            assert measured.size(i, None) == size(shown) == size(original)
        else:
            assert measured.size(i, cap) == size(cut_strings(shown, cap, "", []))
            assert measured.cut(i + 1, cap)[i] == cut_strings(shown, cap, "", [])


@pytest.mark.parametrize("number, counted", [
    (0.5, True), (9.5, True), (1e-4, True), (123456789012345.6, True), (-0.0, True), (2**63, True),
    (1e-05, False), (9.99e-05, False), (1e-07, False), (1e16, False), (float("nan"), False),
])
def test_a_number_orjson_writes_otherwise_is_measured_by_writing(number: float, counted: bool) -> None:
    got, skeleton, longs, was_counted = measure({"_id": "a", "_score": number, "body": "b" * 300})
    assert was_counted is counted
    assert skeleton + sum(len(json.dumps(long[0], ensure_ascii=False)) for long in longs) == written(got)


def test_a_value_that_is_not_plain_json_is_measured_by_writing() -> None:
    class Text(str):
        pass

    hit = {"_id": "a", "body": Text("t" * 300), "when": (1, 2), "x": {1: "int key"}}
    got, skeleton, longs, counted = measure(hit)
    assert not counted and [long[4] for long in longs] == ["body"]  # a str subclass is cut too
    assert skeleton + sum(len(json.dumps(str(long[0]))) for long in longs) == written(got)


@SETTINGS
@given(hits=st.lists(st.one_of(hit, value), max_size=30), budget=st.integers(min_value=1000, max_value=6000),
       memories=st.booleans(), paging=st.booleans(), total=numbers)
def test_the_message_orjson_writes_is_the_message_json_writes(hits: list[Any], budget: int, memories: bool,
                                                               paging: bool, total: Any) -> None:
    payload = {"ok": True, "tool": "xerj_search", "total": total, "hits": hits}
    page = (lambda shown: {"from": shown}) if paging else (lambda shown: None)
    fit: Any = "memories" if memories else "hits"
    fitted, content = fit_message(payload, budget, fit=fit, next_page=page, plain=True)
    assert content == dumps(fitted) and len(content) <= budget
    assert fitted == fit_result(payload, budget, fit=fit, next_page=page)


def test_fitting_copies_only_what_it_cuts_and_leaves_the_answer_as_it_was() -> None:
    hits = [{"_id": f"d-{i}", "_score": 1.0, "_source": {"body": "word " * 300, "tags": ["a", "b"]}}
            for i in range(20)]
    before = json.dumps(hits)
    out = fit_result({"ok": True, "hits": hits}, 4000, fit="hits")
    assert json.dumps(hits) == before  # nothing cut in place
    shown = out["hits"]
    assert shown and all(h["_source"]["body"].endswith(" chars]") for h in shown)
    assert shown[0]["_source"]["tags"] is hits[0]["_source"]["tags"]  # shared, not copied
    assert [h["_id"] for h in shown] == [f"d-{i}" for i in range(len(shown))]


@SETTINGS
@given(value=st.dictionaries(st.text(max_size=5), st.one_of(numbers, st.text(max_size=40)), max_size=40),
       slack=st.integers(min_value=-20, max_value=20))
def test_orjson_says_too_long_only_when_json_agrees(value: dict[str, Any], slack: int) -> None:
    pytest.importorskip("orjson")
    raw = _json.fast_raw(value)
    limit = max(0, (len(raw) if raw is not None else 0) + slack)
    if surely_longer(raw, limit):
        assert len(dumps(value)) > limit


def test_a_fitted_message_of_counted_hits_is_written_by_orjson_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("orjson")
    import xerj_tools._message._budget as budget

    raw_calls: list[Any] = []
    real = budget.fast_raw
    monkeypatch.setattr(budget, "fast_raw", lambda value: raw_calls.append(value) or real(value))
    hits = [{"_id": f"d-{i}", "_score": 9.5 - i / 3, "_source": {"body": "Zürich 東京 " * 120}} for i in range(30)]
    payload = {"ok": True, "tool": "xerj_search", "hits": hits}
    fitted, content = fit_message(payload, 5000, fit="hits", plain=True)
    assert raw_calls == [fitted] and content == dumps(fitted) and len(content) <= 5000
    raw_calls.clear()
    hits[3]["_score"] = 1e-05  # written 1e-05 by json, 0.00001 by orjson: the message is checked
    fitted, content = fit_message(payload, 5000, fit="hits", plain=True)
    assert raw_calls == [] and content == dumps(fitted) and "1e-05" in content
