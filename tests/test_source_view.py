"""The source view's one-pass filter for patterns without a dot agrees with XERJ's reading."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from xerj_tools.tools._source_view import VECTOR_SUFFIXES, SourceView, _filter, _is_vector

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
