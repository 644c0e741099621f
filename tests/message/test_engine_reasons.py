"""XERJ's reasons as the model reads them, over a real socket (the stand-in replays XERJ's
bodies): a cause kept in `caused_by`, a closed index, an aggregation failed inside its slot
under a 200, an index block whose reason is not in XERJ's usual form."""

from __future__ import annotations

from typing import Any

import pytest

from xerj_tools._message._format import block_hint
from xerj_tools.testing import Fault, XerjStandIn

from conftest import Runner, chat_call

SEARCH = {"index": "docs", "query": {"match_all": {}}, "size": 0}

# es_compat.rs:10527-10580 at e6e8e6a: `reason` empty, `root_cause` [], the cause in `caused_by`.
_CAP = (
    "Trying to create too many buckets. Must be less than or equal to: [65536] but this number "
    "of buckets was exceeded. This limit can be set by changing the [search.max_buckets] cluster "
    "level setting."
)
TOO_MANY_BUCKETS = {
    "error": {
        "root_cause": [],
        "type": "search_phase_execution_exception",
        "reason": "",
        "phase": "fetch",
        "grouped": True,
        "failed_shards": [],
        "caused_by": {"type": "too_many_buckets_exception", "reason": _CAP, "max_buckets": 65536},
    },
    "status": 400,
}
# es_compat.rs:27460-27477 `closed_index_error`, for _search (5715-5725) and GET _doc (1979-1981)
CLOSED = {
    "error": {
        "root_cause": [{"type": "index_closed_exception", "reason": "closed"}],
        "type": "index_closed_exception",
        "reason": "closed",
        "index": "docs",
    },
    "status": 400,
}


def _error(runner: Runner, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = runner.run(chat_call(name, arguments))
    assert not result.ok
    return dict(result.payload["error"])


def test_too_many_buckets_reads_the_cause_and_says_what_to_ask_for(
    runner: Runner, xerj: XerjStandIn
) -> None:
    xerj.fail_next(Fault(status=400, body=TOO_MANY_BUCKETS))
    aggs = {"years": {"histogram": {"field": "year", "interval": 0.00001}}}
    error = _error(runner, "xerj_search", {**SEARCH, "aggs": aggs})
    assert error["code"] == "bad_request" and error["status"] == 400
    assert error["reason"] == f"too_many_buckets_exception: {_CAP}"  # whole, not a 200-byte excerpt
    assert "wider `interval`" in error["hint"] and "smaller `size`" in error["hint"]


def test_a_cause_in_root_cause_is_read_when_the_reason_is_empty(
    runner: Runner, xerj: XerjStandIn
) -> None:
    body = {
        "error": {
            "type": "x_exception",
            "reason": "",
            "root_cause": [{"type": "parse_exception", "reason": "field [y] is odd"}],
        },
        "status": 400,
    }
    xerj.fail_next(Fault(status=400, body=body))
    assert _error(runner, "xerj_search", SEARCH)["reason"] == "parse_exception: field [y] is odd"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("xerj_search", SEARCH),
        ("xerj_get_document", {"index": "docs", "id": "pm-101"}),
    ],
)
def test_a_closed_index_has_its_own_code(
    runner: Runner, xerj: XerjStandIn, name: str, arguments: dict[str, Any]
) -> None:
    xerj.fail_next(Fault(status=400, body=CLOSED))
    error = _error(runner, name, arguments)
    assert error["code"] == "index_closed" and error["retryable"] is False
    assert error["reason"] == "index [docs] is closed"
    assert "closed" in error["hint"] and "Do not rewrite the query" in error["hint"]
    assert len(xerj.requests) == 1  # not retried


def test_an_aggregation_failed_in_its_slot_is_reported(runner: Runner, xerj: XerjStandIn) -> None:
    # aggs.rs:2172: an unknown type answers {"error": "unsupported aggregation type 'x'"} in its
    # slot under a 200; the stand-in does the same.
    aggs = {"ok_one": {"terms": {"field": "team"}}, "bad": {"nonsense": {"field": "team"}}}
    result = runner.run(chat_call("xerj_search", {**SEARCH, "aggs": aggs}))
    assert result.ok and "ok_one" in result.payload["aggregations"]
    warnings = result.payload["warnings"]
    assert warnings[0] == "aggregation 'bad' failed: unsupported aggregation type 'nonsense'"
    assert "fix or remove the failed aggregation" in warnings[1]


def test_a_failed_sub_aggregation_is_named_by_its_path(runner: Runner, xerj: XerjStandIn) -> None:
    body = {
        "hits": {"total": {"value": 1, "relation": "eq"}, "hits": []},
        "aggregations": {
            "teams": {
                "buckets": [
                    {
                        "key": "a",
                        "doc_count": 1,
                        "inner": {"error": "unknown interval 'fortnight'"},
                    },
                    {
                        "key": "b",
                        "doc_count": 1,
                        "inner": {"error": "unknown interval 'fortnight'"},
                    },
                    {
                        "key": "c",
                        "doc_count": 1,
                        "top": {"hits": {"hits": [{"_source": {"error": "data"}}]}},
                    },
                ]
            },
            "meta_only": {"value": 1, "meta": {"error": "the caller's own meta"}},
        },
    }
    xerj.fail_next(Fault(status=200, body=body))
    result = runner.run(chat_call("xerj_search", SEARCH))
    assert result.ok
    assert result.payload["warnings"][:-1] == [
        "aggregation 'teams > inner' failed: unknown interval 'fortnight'"
    ]


def test_no_warning_when_every_aggregation_ran(runner: Runner, xerj: XerjStandIn) -> None:
    result = runner.run(
        chat_call("xerj_search", {**SEARCH, "aggs": {"t": {"terms": {"field": "team"}}}})
    )
    assert result.ok and "warnings" not in result.payload


def test_block_hint_reads_well_whatever_the_reason() -> None:
    assert block_hint("something else entirely").startswith("The index is blocked on the node")
    said = block_hint("index [docs] is blocked for write operations")
    assert said.startswith("The index 'docs' is blocked for write operations on the node")
