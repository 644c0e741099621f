"""A call's own policy (``policy=`` on `dispatch`, `run`, `begin`, `dispatch_many`, `run_many`)
and a turn's bound (``max_calls=``), on both dispatchers against the stand-in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xerj_tools import ConfigurationError, Policy
from xerj_tools.testing import XerjStandIn

from conftest import chat_call

ALL = {"match_all": {}}


def payload(result: Any) -> dict[str, Any]:
    return json.loads(result.content)  # type: ignore[no-any-return]


def test_a_calls_policy_replaces_the_dispatchers_for_that_call_only(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url, policy=Policy(allow_indices=("docs",)))
    tickets = chat_call("xerj_search", {"index": "tickets", "query": ALL})
    assert payload(runner.run(tickets))["error"]["code"] == "policy_denied"
    assert payload(runner.run(tickets, policy=Policy(allow_indices=("tickets",))))["ok"] is True
    docs = chat_call("xerj_search", {"index": "docs", "query": ALL})
    assert payload(runner.run(docs, policy=Policy(allow_indices=("tickets",))))["error"]["code"] == "policy_denied"
    assert [r.path for r in xerj.requests] == ["/tickets/_search"]


def test_a_calls_policy_guards_what_the_answer_shows(make_runner: Any, xerj: XerjStandIn) -> None:
    """The listing, and the indices offered after an `index_not_found`, are read under the
    call's policy, not the dispatcher's."""
    runner = make_runner(url=xerj.url)
    only_tickets = Policy(allow_indices=("tickets",))
    listing = payload(runner.run(chat_call("xerj_list_indices", {}), policy=only_tickets))
    assert [i["name"] for i in listing["indices"]] == ["tickets"]
    missing = payload(runner.run(chat_call("xerj_search", {"index": "nope", "query": ALL}),
                                 policy=Policy(allow_indices=("tickets", "nope"))))
    assert missing["error"]["code"] == "index_not_found" and missing["error"]["indices"] == ["tickets"]


def test_a_turns_policy_applies_to_each_of_its_calls(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url)
    calls = [chat_call("xerj_search", {"index": i, "query": ALL}, f"c{n}") for n, i in enumerate(["docs", "tickets"])]
    results = runner.run_many(calls, policy=Policy(allow_indices=("docs",)))
    assert [r.code for r in results] == [None, "policy_denied"]


def test_a_calls_response_cap_is_its_policys_when_lower(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url)
    search = chat_call("xerj_search", {"index": "docs", "query": ALL, "size": 5})
    assert payload(runner.run(search))["ok"] is True
    capped = payload(runner.run(search, policy=Policy(max_response_bytes=64)))
    assert capped["error"]["code"] == "response_too_large"


@pytest.mark.parametrize("bad", ["docs", {"allow_indices": ["docs"]}, Policy])
def test_a_policy_that_is_no_policy_raises_before_anything_is_sent(make_runner: Any, xerj: XerjStandIn, bad: Any) -> None:
    runner = make_runner(url=xerj.url)
    call = chat_call("xerj_search", {"index": "docs", "query": ALL})
    with pytest.raises(ConfigurationError, match="policy= takes a Policy"):
        runner.run(call, policy=bad)
    with pytest.raises(ConfigurationError, match="policy= takes a Policy"):
        runner.run_many([call], policy=bad)
    assert xerj.requests == []


def test_a_bad_policy_leaves_the_transcript_as_it_was(xerj: XerjStandIn) -> None:
    from xerj_tools import Dispatcher

    transcript: list[Any] = [{"role": "user", "content": "hi"}]
    call = chat_call("xerj_search", {"index": "docs", "query": ALL})
    assistant = {"role": "assistant", "tool_calls": [call]}
    with Dispatcher(url=xerj.url) as dispatcher, pytest.raises(ConfigurationError):
        dispatcher.dispatch_many([call], transcript=transcript, assistant=assistant, policy="docs")  # type: ignore[arg-type]
    assert transcript == [{"role": "user", "content": "hi"}]


def test_calls_past_max_calls_are_answered_too_many_calls_and_not_sent(make_runner: Any, xerj: XerjStandIn) -> None:
    runner = make_runner(url=xerj.url)
    calls = [chat_call("xerj_search", {"index": "docs", "query": ALL, "size": n}, f"c{n}") for n in (1, 2, 3, 4)]
    results = runner.run_many(calls, max_calls=2)
    assert [r.code for r in results] == [None, None, "too_many_calls", "too_many_calls"]
    assert [r.call.call_id for r in results] == ["c1", "c2", "c3", "c4"]
    assert "only the first 2 were run" in payload(results[2])["error"]["reason"]
    assert len(xerj.requests) == 2


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "16"])
def test_max_calls_must_be_a_whole_number_of_at_least_one(make_runner: Any, xerj: XerjStandIn, bad: Any) -> None:
    runner = make_runner(url=xerj.url)
    with pytest.raises(ConfigurationError, match="max_calls"):
        runner.run_many([chat_call("xerj_search", {"index": "docs", "query": ALL})], max_calls=bad)
    assert xerj.requests == []
