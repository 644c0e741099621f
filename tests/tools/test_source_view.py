"""The source view's one-pass filter for patterns without a dot agrees with XERJ's reading."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xerj_tools import load_registry
from xerj_tools.tools._source_view import VECTOR_SUFFIXES, SourceView, _filter, _glob, _is_vector

REGISTRY = load_registry()

NAMES = st.sampled_from(["title", "body", "body_vector", "body_vector_chunks", "year", "b", "", "tags"])
PATTERNS = st.one_of(NAMES, NAMES.map(lambda n: n + "*"), st.just("*"))
VALUES = st.one_of(st.integers(), st.text(max_size=3), st.lists(st.floats(allow_nan=False), max_size=3))


def reference(view: SourceView, source: dict[str, Any]) -> dict[str, Any]:
    """The view as written before the one-pass filter: XERJ's `_filter`, then embeddings out."""
    kept = _filter(source, view.includes, view.excludes) if view.includes or view.excludes else source
    named = set(view.includes)
    return {k: v for k, v in kept.items() if k in named or not (k.endswith(VECTOR_SUFFIXES) and _is_vector(v))}


@given(st.dictionaries(NAMES, VALUES), st.lists(PATTERNS, max_size=3), st.lists(PATTERNS, max_size=2))
def test_the_flat_filter_matches_the_reference(source: dict[str, Any], includes: list[str],
                                               excludes: list[str]) -> None:
    view = SourceView(includes=tuple(includes), excludes=tuple(excludes))
    assert view.apply(source) == reference(view, source)
    assert list(view.apply(source)) == list(reference(view, source))  # order kept


def test_a_dotted_pattern_still_globs_per_segment() -> None:
    view = SourceView(includes=("meta.*",), excludes=("meta.secret",))
    source = {"meta": {"a": 1, "secret": 2}, "body_vector": [0.1], "title": "t"}
    assert view.apply(source) == {"meta": {"a": 1}}


def xerj_glob(pattern: str, text: str) -> bool:
    """XERJ's own `glob_match` walk (index.rs:15737-15771 at e6e8e6a), transliterated: the
    backtracking reference the linear matcher must agree with."""
    p = s = 0
    while p < len(pattern):
        if pattern[p] == "*":
            for end in range(s, len(text) + 1):
                if end > s and text[end - 1] == ".":
                    break
                if xerj_glob(pattern[p + 1 :], text[end:]):
                    return True
            return False
        if s >= len(text) or pattern[p] != text[s]:
            return False
        p, s = p + 1, s + 1
    return s == len(text)


GLOB_TEXT = st.text(alphabet="ab.", max_size=8)
GLOB_PATTERN = st.text(alphabet="ab.*", max_size=7)


@given(GLOB_PATTERN, GLOB_TEXT)
def test_the_glob_agrees_with_xerjs_walk(pattern: str, text: str) -> None:
    assert _glob(pattern, text) == xerj_glob(pattern, text)


def test_a_long_field_name_is_matched_at_once_whatever_the_pattern() -> None:
    name = "a" * 3000
    source = {"x": {name: 1}, "title": "t"}
    # a long literal pattern: no recursion per character
    assert SourceView(includes=("x." + name + "*",)).apply(source) == {"x": {name: 1}}
    assert SourceView(excludes=("x." + name,), includes=("x.*", "title")).apply(source) == {
        "title": "t"
    }
    # four `*` (the most `source` allows) against a name a backtracking walk cannot finish
    assert SourceView(includes=("x.*a*a*a*c",)).apply(source) == {}
    assert SourceView(includes=("x.*a*a*a*a",)).apply(source) == {"x": {name: 1}}


@pytest.mark.parametrize(
    "source",
    [["x.*a*a*a*a*c"], "title,x.*a*a*a*a*c", ["title", "*a*a*a*a*"]],
)
def test_a_source_pattern_with_more_than_four_stars_is_refused(source: Any) -> None:
    result = REGISTRY.validate(
        "xerj_search", json.dumps({"index": "docs", "query": {}, "source": source})
    )
    assert not result.ok
    assert [p.path for p in result.problems] == ["$.source"]
    assert "at most 4" in result.problems[0].message


def test_a_source_pattern_of_four_stars_is_sent() -> None:
    args = {"index": "docs", "query": {}, "source": ["meta.*.id", "*a*b*"]}
    assert REGISTRY.validate("xerj_search", json.dumps(args)).ok
