"""Argument values for the property tests of the quick yes and the strict schemas: leaves, lists,
query clauses, rerank objects and `queries` items drawn from each test's own pools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st


def argument_values(
    leaves: Sequence[Any],
    lists: Sequence[Any],
    clauses: Sequence[Any],
    rerank_keys: Sequence[str],
    rerank_size: int | None = None,
) -> tuple[Any, Any]:
    """(a leaf, any value): the value a leaf, a list, a clause, a rerank object or a list of
    `queries` items."""
    leaf = st.sampled_from([None, *leaves])
    rerank = st.dictionaries(
        st.sampled_from(list(rerank_keys)),
        st.one_of(leaf, st.sampled_from(list(lists))),
        max_size=rerank_size,
    )
    sub_query = st.dictionaries(
        st.sampled_from(["query", "weight", "boost"]),
        st.one_of(leaf, st.sampled_from(list(clauses))),
        max_size=3,
    )
    value = st.one_of(
        leaf,
        st.sampled_from(list(lists)),
        st.sampled_from(list(clauses)),
        rerank,
        st.lists(st.one_of(sub_query, leaf), max_size=3),
    )
    return leaf, value
