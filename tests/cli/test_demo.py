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
    assert "12/12 calls answered" in text
    # it orients first: the indices, then the fields of `docs`, before any query
    assert text.index("xerj_list_indices") < text.index("xerj_describe_index") < text.index("xerj_semantic_search")
    assert "semantic_text: body" in text
    # the stand-in holds the catalog autoindex would write: example values, ready queries
    assert "status=open|closed" in text and "(autoindex's catalog)" in text
    assert 'ready: xerj_search {"index": "tickets", "query": {"term": {"status": "open"}}' in text
    assert "repaired: $.query.size → $.size" in text
    assert "code=invalid_arguments $.rerank" in text and "code=unknown_tool" in text
    assert "code=invalid_arguments $.index" in text
    assert "rerank.applied=True" in text


def test_demo_against_a_given_url() -> None:
    with XerjStandIn() as xerj:
        assert main(["demo", "--url", xerj.url]) == 0
        paths = {r.path for r in (*xerj.requests, *xerj.listings)}
    # the listing: every index name is resolved against it before it is sent (_index_guard)
    # a node without autoindex's catalog: each description asks it once (a 404)
    assert paths == {"/_cat/indices/*", "/_resolve/index/*", "/docs/_mapping", "/tickets/_mapping",
                     "/autoindex-catalog/_search", "/docs/_search", "/tickets/_search",
                     "/_memory/demo-agent", "/_memory/demo-agent/_recall"}
