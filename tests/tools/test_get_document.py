"""`xerj_get_document`, the first-party seventh tool: the request on the wire, a found and a missing
document, a missing index, the policy, and the budget; against the stand-in, over a real socket."""

from __future__ import annotations

from typing import Any

import pytest

from xerj_tools import XERJ_TOOLS, Policy, load_registry
from xerj_tools.testing import XerjStandIn

from conftest import Runner, chat_call

TOOL = "xerj_get_document"


def test_it_is_a_first_party_tool_of_the_bundled_registry() -> None:
    assert TOOL in load_registry() and XERJ_TOOLS[TOOL].origin == "first-party"


def test_a_found_document_is_read_without_its_embeddings(runner: Runner, xerj: XerjStandIn) -> None:
    xerj.add_documents("notes", {"n/1": {"title": "Tea", "body": "green", "body_vector": [0.1] * 8,
                                         "body_vector_chunks": [[0.2] * 8]}})
    payload = runner.payload(TOOL, {"index": "notes", "id": "n/1"})
    assert payload == {"ok": True, "found": True, "_index": "notes", "_id": "n/1", "_version": 1,
                       "_source": {"title": "Tea", "body": "green"}}
    # the id is one percent-encoded segment, the method GET, no body
    assert [(r.method, r.path, r.body) for r in xerj.requests] == [("GET", "/notes/_doc/n%2F1", None)]


def test_a_missing_document_is_an_answer_with_a_note(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload(TOOL, {"index": "docs", "id": "nope"})
    assert payload == {"ok": True, "found": False, "_index": "docs", "_id": "nope",
                       "notes": ["no document with id 'nope' in index 'docs'"]}


def test_a_missing_index_stays_an_error_with_the_indices_that_exist(runner: Runner, xerj: XerjStandIn) -> None:
    payload = runner.payload(TOOL, {"index": "missing", "id": "1"})
    assert payload["ok"] is False and payload["error"]["code"] == "index_not_found"
    assert payload["error"]["indices"] == ["docs", "tickets"]


def test_a_404_without_found_false_is_no_answer(runner: Runner, xerj: XerjStandIn) -> None:
    from xerj_tools.testing import Fault

    xerj.fail_next(Fault(status=404, body={"_index": "docs", "_id": "1"}))
    assert runner.payload(TOOL, {"index": "docs", "id": "1"})["error"]["code"] == "not_found"


@pytest.mark.parametrize(("arguments", "path"), [
    ({"index": "docs", "id": ".."}, "$.id"),
    ({"index": "docs", "id": "."}, "$.id"),
    ({"index": "docs", "id": ""}, "$.id"),
    ({"index": "do*", "id": "1"}, "$.index"),
    ({"index": "docs,tickets", "id": "1"}, "$.index"),
    ({"index": "_all", "id": "1"}, "$.index"),
    ({"index": "../x", "id": "1"}, "$.index"),
    ({"index": "docs", "id": "1", "source": ["title"]}, "$.source"),
])
def test_bad_arguments_send_nothing(runner: Runner, xerj: XerjStandIn, arguments: dict[str, Any], path: str) -> None:
    error = runner.payload(TOOL, arguments)["error"]
    assert error["code"] == "invalid_arguments" and path in [p["path"] for p in error["problems"]]
    assert xerj.requests == []


def test_dot_indices_are_denied_by_default(runner: Runner, make_runner: Any, xerj: XerjStandIn) -> None:
    payload = runner.payload(TOOL, {"index": ".xerj-memory-tenant-b", "id": "1"})
    assert payload["error"]["code"] == "policy_denied" and xerj.requests == []
    allowed = make_runner(url=xerj.url, policy=Policy(allow_indices=("docs",)))
    assert allowed.payload(TOOL, {"index": "tickets", "id": "1"})["error"]["refused"] == "index"


def test_a_large_document_is_fitted_to_the_budget(make_runner: Any, xerj: XerjStandIn) -> None:
    xerj.add_documents("big", {"1": {"title": "Big", "body": "word " * 20_000}})
    result = make_runner(url=xerj.url, budget=4_000).run(chat_call(TOOL, {"index": "big", "id": "1"}))
    assert result.ok and len(result.content) <= 4_000 and "truncated" in result.payload


def test_its_attempt_spans_name_the_path_without_the_names() -> None:
    from xerj_tools import HttpRequest
    from xerj_tools._http._tracing import url_template
    from xerj_tools.tools import XERJ_TOOLS

    template = XERJ_TOOLS["xerj_get_document"].path
    assert url_template(HttpRequest("GET", "/notes/_doc/n%2F1", template=template)) == "/{index}/_doc/{id}"
