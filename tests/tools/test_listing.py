"""The index list after `index_not_found`, read the way XERJ serves it; the stand-in's listings."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2

from xerj_tools._http._models import Reply
from xerj_tools.testing import Fault, XerjStandIn
from xerj_tools.tools._listing import CAT_INDICES, RESOLVE_ALL, names_from_cat, names_from_resolve

from conftest import chat_call

MISSING = {"index": "doc", "query": {}}


def listing_paths(xerj: XerjStandIn) -> list[str]:
    # `_resolve` reads are logged in `xerj.listings`, the `_cat` fallback in `xerj.requests`
    return [r.path for r in (*xerj.listings, *xerj.requests) if not r.path.endswith("/_search")]


def test_the_stand_in_cat_indices_is_text_whatever_the_query_string_says(xerj: XerjStandIn) -> None:
    # XERJ's cat_indices takes no query parameters (es_compat.rs:393-488).
    response = httpx2.get(f"{xerj.url}/_cat/indices", params={"format": "json", "h": "index"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    lines = response.text.splitlines()
    assert [line.split()[2] for line in lines] == ["docs", "tickets"]
    health, status, name, index_uuid, pri, rep, docs, deleted, *sizes = lines[0].split()
    assert (health, status, name, pri, rep, deleted) == ("green", "open", "docs", "1", "0", "0")
    assert uuid.UUID(index_uuid) and int(docs) > 0 and len(sizes) == 3 and len(set(sizes)) == 1
    assert response.text.endswith("\n")


def test_the_stand_in_resolves_index_patterns_as_xerj_does(xerj: XerjStandIn) -> None:
    xerj.add_documents("docs-archive", {"a": {"title": "old"}})
    every = httpx2.get(f"{xerj.url}/_resolve/index/*").json()
    assert every == {
        "indices": [{"name": n, "attributes": ["open"]} for n in ("docs", "docs-archive", "tickets")],
        "aliases": [],
        "data_streams": [],
    }
    names = lambda expr: [i["name"] for i in httpx2.get(f"{xerj.url}/_resolve/index/{expr}").json()["indices"]]  # noqa: E731
    assert names("docs*") == ["docs", "docs-archive"]
    assert names("*ets") == ["tickets"]  # a leading * works too (es_compat.rs:16552-16563)
    assert names("d*s") == []  # but not one in the middle
    assert names("docs") == ["docs"] and names("nothing") == []


def test_index_not_found_lists_the_indices_from_resolve(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url)
    error = runner.payload("xerj_search", MISSING)["error"]
    assert error["code"] == "index_not_found" and error["indices"] == ["docs", "tickets"]
    assert listing_paths(xerj) == ["/_resolve/index/*"]  # JSON, no disk walk on the node


def test_the_text_table_is_the_fallback_for_a_node_without_resolve(make_runner: Any, xerj: XerjStandIn) -> None:
    xerj.fail_next(Fault(status=404, body=b"", match="_resolve"))
    runner = make_runner(url=xerj.url)
    error = runner.payload("xerj_search", MISSING)["error"]
    # the table names no alias: an unknown name cannot be told from one, so the call is refused
    assert error["code"] == "policy_denied" and error["indices"] == ["docs", "tickets"]
    assert listing_paths(xerj) == ["/_resolve/index/*", "/_cat/indices"]
    assert xerj.requests[-1].query == {}  # nothing XERJ would ignore is sent


def test_the_listing_is_reused_for_a_while_and_then_asked_again(make_runner: Any, xerj: XerjStandIn) -> None:
    now = [1000.0]
    runner = make_runner(url=xerj.url, clock=lambda: now[0])
    for _ in range(3):  # a known name reuses the listing
        assert runner.payload("xerj_search", {"index": "docs", "query": {}})["ok"]
    assert listing_paths(xerj) == ["/_resolve/index/*"]
    xerj.add_documents("docs-new", {"a": {"title": "fresh"}})
    now[0] += 31.0  # LISTING_TTL is 30 s
    assert runner.payload("xerj_search", MISSING)["error"]["indices"] == ["docs", "docs-new", "tickets"]
    assert listing_paths(xerj) == ["/_resolve/index/*"] * 2
    # a name the cached listing does not know has it read again (a new alias is seen at once),
    # and no search is sent for it
    assert runner.payload("xerj_search", MISSING)["error"]["code"] == "index_not_found"
    assert listing_paths(xerj) == ["/_resolve/index/*"] * 3 and all(r.path != "/doc/_search" for r in xerj.requests)


def test_a_listing_is_never_retried(make_runner: Any, xerj: XerjStandIn, sleeps: Any) -> None:
    xerj.fail_next(Fault(status=503, match="_resolve"), Fault(status=503, match="_cat"))
    runner = make_runner(url=xerj.url)
    result = runner.run(chat_call("xerj_search", MISSING))
    # without a listing a name cannot be checked: the node's answer to it is told, nothing sent
    assert result.code == "server_error" and "indices" not in result.payload["error"]
    assert listing_paths(xerj) == ["/_resolve/index/*", "/_cat/indices"] and sleeps.waits == []
    assert result.attempts == 0


def test_listing_parsers_read_only_what_they_expect() -> None:
    def reply(status: int, body: bytes) -> Reply:
        return Reply(status, {}, body)

    resolve = b'{"indices":[{"name":"b","attributes":["open"]},{"name":"a"}],"aliases":[{"name":"al","indices":["a"]}]}'
    assert names_from_resolve(reply(200, resolve)) == ["a", "al", "b"]
    assert names_from_resolve(reply(404, b"")) is None
    assert names_from_resolve(reply(200, b"green open a x")) is None
    assert names_from_resolve(reply(200, b'[{"index": "a"}]')) is None
    table = b"green open logs-1 0c3e 1 0 12 0 1.2kb 1.2kb 1.2kb\ngreen open docs 9f1a 1 0 3 0 260b 260b 260b\n\n"
    assert names_from_cat(reply(200, table)) == ["docs", "logs-1"]
    assert names_from_cat(reply(200, b"")) == []
    assert names_from_cat(reply(200, b"<html><head><title>Sign in to the proxy</title></head>\n")) == []
    assert names_from_cat(reply(200, b'{"error": "x"}')) is None
    assert names_from_cat(reply(500, table)) is None
    assert RESOLVE_ALL.kind == CAT_INDICES.kind == "listing" and not CAT_INDICES.params
