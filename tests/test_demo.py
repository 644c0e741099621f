"""The README's main command: the demo answers every call, against the stand-in."""

from __future__ import annotations

import io

import pytest

from xerj_tools._cli._demo import run_demo
from xerj_tools._cli._main import main
from xerj_tools.testing import XerjStandIn


def test_demo_against_the_stand_in_answers_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XERJ_URL", raising=False)
    out = io.StringIO()
    assert run_demo(None, out=out) == 0
    assert "using the built-in stand-in" in out.getvalue()
    text = out.getvalue()
    assert "11/11 calls answered" in text
    # it orients first: the indices, then the fields of `docs`, before any query
    assert text.index("xerj_list_indices") < text.index("xerj_describe_index") < text.index("xerj_semantic_search")
    assert "semantic_text: body" in text
    assert "repaired: $.query.size → $.size" in text
    assert "code=invalid_arguments $.rerank" in text and "code=unknown_tool" in text
    assert "code=invalid_arguments $.index" in text
    assert "rerank.applied=True" in text


def test_demo_against_a_given_url() -> None:
    with XerjStandIn() as xerj:
        assert main(["demo", "--url", xerj.url]) == 0
        paths = {r.path for r in (*xerj.requests, *xerj.listings)}
    # the listing: every index name is resolved against it before it is sent (_index_guard)
    assert paths == {"/_cat/indices/*", "/_resolve/index/*", "/docs/_mapping", "/docs/_search", "/tickets/_search",
                     "/_memory/demo-agent", "/_memory/demo-agent/_recall"}
