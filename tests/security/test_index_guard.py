"""Index expressions resolved against the cluster's listing (`xerj_tools._dispatch._index_guard`):
patterns XERJ cannot glob are resolved here, aliases of denied indices are refused before
anything is sent, and every hit's `_index` is held to the policy as a second line. Over the
stand-in, and over a raw server on 127.0.0.1 answering as XERJ does."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from xerj_tools import Policy
from xerj_tools._dispatch._resolution import MAX_RESOLVED, resolve, unglobbable
from xerj_tools.testing import Fault, XerjStandIn
from xerj_tools.tools._listing import Listing

from conftest import Runner
from rawserver import RawServer

LOGS = {"logs-a-2026": 2, "logs-b-2025": 1, "logs-c-2026": 3, "logs-c-prod-1": 1}


@pytest.fixture
def logs(xerj: XerjStandIn) -> XerjStandIn:
    for name, count in LOGS.items():
        xerj.add_documents(
            name, {f"{name}-{i}": {"title": f"{name} entry {i}"} for i in range(count)}
        )
    return xerj


def _paths(xerj: XerjStandIn) -> list[str]:
    return [r.path for r in (*xerj.listings, *xerj.requests)]  # the listing reads first


# 19.2: XERJ globs only `*`, `prefix*` and `*suffix` (es_compat.rs:16552-16563 `glob_match_simple`)


@pytest.mark.parametrize(
    ("part", "literal"),
    [
        ("logs-*", False),
        ("*-2026", False),
        ("*", False),
        ("docs", False),
        ("logs-*-2026", True),
        ("d*s", True),
        ("logs-*-prod*", True),
        ("*logs*", True),
        ("**", True),
    ],
)
def test_which_patterns_xerj_compares_literally(part: str, literal: bool) -> None:
    assert unglobbable(part) is literal


def test_a_pattern_xerj_cannot_glob_is_resolved_and_the_names_are_sent(
    runner: Runner, logs: XerjStandIn
) -> None:
    payload = runner.payload("xerj_search", {"index": "logs-*-2026", "query": {"match_all": {}}})
    assert (
        payload["ok"] is True and payload["total"] == 5
    )  # not XERJ's {"total": 0} for "logs-*-2026"
    assert {h["_index"] for h in payload["hits"]} == {"logs-a-2026", "logs-c-2026"}
    assert _paths(logs) == ["/_resolve/index/*", "/logs-a-2026,logs-c-2026/_search"]
    assert payload["notes"] == [
        "'logs-*-2026' was resolved here to logs-a-2026, logs-c-2026 (XERJ globs only `*`, `prefix*` and `*suffix`)"
    ]


def test_the_resolution_keeps_the_rest_of_the_list_and_reuses_the_listing(
    runner: Runner, logs: XerjStandIn
) -> None:
    first = runner.payload(
        "xerj_search", {"index": "d*s,tickets", "query": {"match_all": {}}, "size": 0}
    )
    second = runner.payload(
        "xerj_vector_search", {"index": "logs-c*1", "field": "v", "query_vector": [0.1]}
    )
    assert first["ok"] and first["total"] > 0 and second["ok"]
    # (an empty kNN answer may be followed by a read of the mapping, for a field hint: `_after`)
    sent = [p for p in _paths(logs) if not p.endswith("/_mapping")]
    assert sent == ["/_resolve/index/*", "/docs,tickets/_search", "/logs-c-prod-1/_search"]


def test_a_pattern_xerj_globs_goes_as_it_is(runner: Runner, logs: XerjStandIn) -> None:
    payload = runner.payload("xerj_search", {"index": "logs-c*", "query": {"match_all": {}}})
    assert payload["ok"] and payload["total"] == 4 and _paths(logs) == ["/logs-c*/_search"]


def test_a_pattern_that_matches_nothing_is_not_an_empty_success(
    runner: Runner, logs: XerjStandIn
) -> None:
    found = runner.payload("xerj_search", {"index": "logs-*-prod*", "query": {"match_all": {}}})
    assert found["total"] == 1 and found["hits"][0]["_index"] == "logs-c-prod-1"
    logs.clear()
    payload = runner.payload("xerj_search", {"index": "logs-*-qa*", "query": {"match_all": {}}})
    error = payload["error"]
    assert payload["ok"] is False and error["code"] == "index_not_found"
    assert "no index this agent may search matches 'logs-*-qa*'" in error["reason"]
    assert "logs-c-prod-1" in error["indices"] and not any(
        n.startswith(".") for n in error["indices"]
    )
    assert "prefix* or *suffix" in error["hint"]
    assert _paths(logs) == []  # no search was sent (and the listing was kept from the first call)


def test_without_a_listing_the_pattern_is_refused_with_the_rule(
    runner: Runner, logs: XerjStandIn
) -> None:
    logs.fail_next(Fault(status=500, match="_resolve"), Fault(status=500, match="_cat"))
    payload = runner.payload("xerj_search", {"index": "logs-*-2026", "query": {"match_all": {}}})
    error = payload["error"]
    assert error["code"] == "invalid_arguments" and error["problems"][0]["path"] == "$.index"
    assert "XERJ globs only `*`, `prefix*` and `*suffix`" in error["reason"]
    assert all("_search" not in p for p in _paths(logs))


def test_each_resolved_name_is_held_to_the_policy() -> None:
    listing = Listing(("logs-a-2026", "logs-c-2026", ".logs-x-2026"))
    policy = Policy(deny_indices=(".*", "logs-c-*"))
    resolved = resolve({"index": "logs-*-2026,*x*"}, (), listing, policy, False)
    assert resolved.error is None and resolved.values == {"index": "logs-a-2026"}
    assert resolved.notes == [
        "'logs-*-2026' was resolved here to logs-a-2026 (XERJ globs only `*`, `prefix*` and `*suffix`)",
        "no index this agent may search matches '*x*' (XERJ globs only `*`, `prefix*` and `*suffix`)",
    ]


def test_too_many_names_ask_for_a_narrower_pattern() -> None:
    listing = Listing(tuple(f"logs-{i}-x" for i in range(MAX_RESOLVED + 1)))
    said = resolve({"index": "logs-*-x"}, (), listing, Policy(), False).error
    assert said is not None and f"stands for {MAX_RESOLVED + 1} indices" in said.reason


# Aliases. XERJ reads an alias through its first backing index (engine.rs:956-967), labels
# each hit with the name as requested (es_compat.rs:7512, 10149-10150; a document: 1999), and
# lists each alias with its indices in `GET /_resolve/index/*` (es_compat.rs:15839-15855).

MEMHIT = {
    "_index": "mem",  # XERJ's label: the alias, as requested
    "_id": "m1",
    "_score": 1.0,
    "_source": {"text": "tenant b's private memory"},
}
DOCHIT = {"_index": "docs", "_id": "d1", "_score": 1.0, "_source": {"title": "a public doc"}}
RESOLVE = {
    "indices": [
        {"name": "docs", "attributes": ["open"]},
        {"name": ".xerj-memory-b", "attributes": ["open"]},
    ],
    "aliases": [
        {"name": "mem", "indices": [".xerj-memory-b"]},
        {"name": "all-docs", "indices": ["docs"]},
    ],
    "data_streams": [],
}
SECRET = "tenant b"


def _search(*hits: dict[str, Any], aggs: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"hits": {"total": {"value": 7, "relation": "eq"}, "hits": list(hits)}}
    if aggs:
        body["aggregations"] = {"words": {"buckets": [{"key": "tenant", "doc_count": 7}]}}
    return body


def _engine(routes: dict[str, tuple[int, Any]]) -> Callable[[socket.socket, RawServer], None]:
    """A fake XERJ: the first route whose text is in the request line answers; else a 404."""

    def script(conn: socket.socket, server: RawServer) -> None:
        line = server.requests[-1].split(b"\r\n", 1)[0].decode()
        status, body = next(
            (v for k, v in routes.items() if k in line),
            (
                404,
                {
                    "error": {"type": "index_not_found_exception", "reason": "no such index [x]"},
                    "status": 404,
                },
            ),
        )
        data = json.dumps(body).encode()
        conn.sendall(
            f"HTTP/1.1 {status} X\r\nContent-Length: {len(data)}\r\nContent-Type: application/json\r\n"
            "Connection: close\r\n\r\n".encode()
            + data
        )

    return script


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, tuple[int, Any]]], RawServer]]:
    servers: list[RawServer] = []

    def start(routes: dict[str, tuple[int, Any]]) -> RawServer:
        server = RawServer(_engine(routes), listing=None).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def _lines(server: RawServer) -> list[str]:
    return [r.split(b"\r\n", 1)[0].decode().rsplit(" ", 1)[0] for r in server.requests]


def test_index_not_found_offers_no_alias_of_a_denied_index(make_runner: Any, serve: Any) -> None:
    server = serve({"/_resolve/index/": (200, RESOLVE)})
    payload = make_runner(url=server.url).payload(
        "xerj_search", {"index": "nope", "query": {"match_all": {}}}
    )
    assert payload["error"]["indices"] == [
        "all-docs",
        "docs",
    ]  # not "mem", which reaches .xerj-memory-b


@pytest.mark.parametrize(
    ("tool", "arguments", "answer"),
    [
        ("xerj_search", {"index": "mem", "query": {"match_all": {}}}, _search(MEMHIT)),
        (
            "xerj_search",
            {
                "index": "mem",
                "query": {"match_all": {}},
                "size": 0,
                "aggs": {"w": {"terms": {"field": "text"}}},
            },
            _search(aggs=True),
        ),
        ("xerj_search", {"index": "docs,mem", "query": {"match_all": {}}}, _search(DOCHIT)),
    ],
)
def test_an_alias_of_a_denied_index_is_refused_and_nothing_of_its_answer_shown(
    make_runner: Any, serve: Any, tool: str, arguments: dict[str, Any], answer: dict[str, Any]
) -> None:
    server = serve({"/_resolve/index/": (200, RESOLVE), "_search": (200, answer)})
    runner = make_runner(url=server.url)
    result = runner.run(
        {
            "id": "c",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(arguments)},
        }
    )
    assert result.code == "policy_denied" and result.payload["error"]["refused"] == "index"
    assert "'mem' is an alias of an index this agent may not search" in result.content
    assert (
        SECRET not in result.content
        and ".xerj-memory" not in result.content
        and "7" not in result.content
    )
    # the listing is kept: the next call on the alias is refused before anything is sent
    sent = len(server.requests)
    again = runner.run(
        {
            "id": "d",
            "type": "function",
            "function": {
                "name": "xerj_search",
                "arguments": json.dumps({"index": "mem", "query": {"match_all": {}}}),
            },
        }
    )
    assert again.code == "policy_denied" and len(server.requests) == sent


def test_a_document_through_an_alias_of_a_denied_index_is_refused(
    make_runner: Any, serve: Any
) -> None:
    doc = {
        "_index": "mem",  # as requested (es_compat.rs:1999)
        "_id": "m1",
        "_version": 1,
        "found": True,
        "_source": MEMHIT["_source"],
    }
    server = serve({"/_resolve/index/": (200, RESOLVE), "/mem/_doc/": (200, doc)})
    result = make_runner(url=server.url).run(
        {
            "id": "c",
            "type": "function",
            "function": {
                "name": "xerj_get_document",
                "arguments": json.dumps({"index": "mem", "id": "m1"}),
            },
        }
    )
    assert (
        result.code == "policy_denied"
        and SECRET not in result.content
        and ".xerj-memory" not in result.content
    )
    assert _lines(server) == ["GET /_resolve/index/*"]  # the GET was never sent


def test_an_alias_of_allowed_indices_is_searched(make_runner: Any, serve: Any) -> None:
    server = serve({"/_resolve/index/": (200, RESOLVE), "_search": (200, _search(DOCHIT))})
    payload = make_runner(url=server.url).payload(
        "xerj_search", {"index": "all-docs", "query": {"match_all": {}}}
    )
    assert payload["ok"] is True and payload["total"] == 7 and payload["hits"][0]["_id"] == "d1"
    # the alias's index is named: XERJ's labels are then the index's own
    assert _lines(server) == ["GET /_resolve/index/*", "POST /docs/_search"]
    assert payload["notes"] == ["'all-docs' is an alias of docs; that index was read in its place"]


def test_hits_from_a_denied_index_are_left_out_with_the_counts(
    make_runner: Any, serve: Any
) -> None:
    # A second line: a node answering with hits of an index it was not asked for (the request
    # named `docs` only). They go, and the total and aggregations that counted them too.
    leaked = {**MEMHIT, "_index": ".xerj-memory-b"}
    server = serve(
        {"/_resolve/index/": (200, RESOLVE), "_search": (200, _search(DOCHIT, leaked, aggs=True))}
    )
    payload = make_runner(url=server.url).payload(
        "xerj_search", {"index": "docs", "query": {"match_all": {}}}
    )
    assert payload["ok"] is True and [h["_id"] for h in payload["hits"]] == ["d1"]
    assert "total" not in payload and "aggregations" not in payload
    assert payload["notes"] == [
        "hits from indices this agent may not search were left out, and with them the "
        "total and any aggregations, which counted them"
    ]
    text = json.dumps(payload)
    assert SECRET not in text and ".xerj-memory" not in text


def test_a_plain_index_costs_one_listing_while_it_is_cached(make_runner: Any, serve: Any) -> None:
    server = serve({"/_resolve/index/": (200, RESOLVE), "_search": (200, _search(DOCHIT))})
    runner = make_runner(url=server.url)
    for _ in range(3):
        assert runner.payload("xerj_search", {"index": "docs", "query": {"match_all": {}}})["ok"]
    assert _lines(server) == ["GET /_resolve/index/*"] + ["POST /docs/_search"] * 3


def test_without_a_listing_a_plain_name_is_refused_under_a_policy(
    make_runner: Any, serve: Any
) -> None:
    # Neither `_resolve` nor `_cat/indices` answers: an alias cannot be told from an index.
    server = serve({"_search": (200, _search(MEMHIT))})
    payload = make_runner(url=server.url).payload(
        "xerj_search", {"index": "mem", "query": {"match_all": {}}}
    )
    assert payload["error"]["code"] == "policy_denied" and SECRET not in json.dumps(payload)
    assert "could not be checked" in payload["error"]["reason"]
    assert all("_search" not in line for line in _lines(server))


def test_a_policy_that_denies_nothing_still_reads_every_index_of_an_alias(
    make_runner: Any, serve: Any
) -> None:
    server = serve({"/_resolve/index/": (200, RESOLVE), "_search": (200, _search(MEMHIT))})
    runner = make_runner(url=server.url, policy=Policy(deny_indices=()))
    assert runner.payload("xerj_search", {"index": "mem", "query": {"match_all": {}}})["ok"]
    assert _lines(server) == ["GET /_resolve/index/*", "POST /.xerj-memory-b/_search"]


# The resolution itself, pure (`_resolution.resolve`): no socket, a listing given.

STREAMS = Listing(
    ("logs-a", "logs-b", ".ds-app-000001", ".ds-app-000002", ".secret"),
    {"app": (".ds-app-000001", ".ds-app-000002"), "both": ("logs-a", ".secret"),
     "fake": (".ds-app-000001",)},
)  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "sent"),
    [
        ("logs-a", "logs-a"),
        ("app", ".ds-app-000001,.ds-app-000002"),  # a data stream, every backing index
        ("logs-*,-logs-b", "logs-a"),  # the exclusion applied here
        ("logs-a,logs-b,-logs-*", None),  # nothing left: index_not_found
        ("logs-*", "logs-*"),  # XERJ globs it over index names itself
    ],
)
def test_what_each_kind_of_name_is_sent_as(expression: str, sent: str | None) -> None:
    resolved = resolve({"index": expression}, (), STREAMS, Policy(), False)
    if sent is None:
        assert resolved.error is not None and resolved.error.code == "index_not_found"
    else:
        assert resolved.error is None and resolved.values == {"index": sent}


@pytest.mark.parametrize("expression", ["both", "fake", "logs-a,both"])
def test_an_alias_with_a_denied_index_behind_it_is_refused_whole(expression: str) -> None:
    # `fake` is no data stream (its index is another stream's): `.ds-*` is judged by its name
    resolved = resolve({"index": expression}, (), STREAMS, Policy(), False)
    assert resolved.error is not None and resolved.error.code == "policy_denied"
    assert ".secret" not in resolved.error.reason and ".ds-" not in resolved.error.reason


def test_a_listing_that_names_no_alias_cannot_clear_an_unknown_name() -> None:
    table = Listing(("docs",), knows_aliases=False)  # from `_cat/indices`
    assert resolve({"index": "docs"}, (), table, Policy(), False).error is None
    unknown = resolve({"index": "mem"}, (), table, Policy(), False).error
    assert unknown is not None and unknown.code == "policy_denied"
    # a policy that denies nothing sends it as written
    assert resolve({"index": "mem"}, (), table, Policy(deny_indices=()), False).values == {"index": "mem"}
