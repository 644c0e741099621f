"""A `Tool` of yours: its grouped fields (`PolicyTraits`, `Advice`) and its one `after` step, run
alike by both dispatchers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from xerj_tools import (
    Advice,
    ConfigurationError,
    HttpRequest,
    Policy,
    PolicyDenied,
    PolicyTraits,
    Tool,
)
from xerj_tools.testing import XerjStandIn

from conftest import chat_call

PARAMETERS = {"type": "object", "properties": {"index": {"type": "string"}}, "required": ["index"]}
SEEN: list[tuple[Mapping[str, Any], bool, bool]] = []


def _search(args: Mapping[str, Any]) -> HttpRequest:
    return HttpRequest("POST", f"/{args['index']}/_search", {"size": 1, "query": {"match_all": {}}})


def _first_document(arguments: Mapping[str, Any], payload: dict[str, Any], policy: Any) -> Any:
    """Reads the first hit whole (a read counted as the call's), then the listing (not counted)."""
    SEEN.append((arguments, policy.allows_index("docs"), policy.allows_index(".hidden")))
    hit = payload["result"]["hits"]["hits"][0]
    outcome, attempts = yield HttpRequest("GET", f"/{arguments['index']}/_doc/{hit['_id']}")
    assert attempts == 1
    yield HttpRequest("GET", "/_cat/indices", kind="listing")
    return {"ok": True, "found": True, "_index": outcome.data["_index"], "_id": hit["_id"]}


def _moved(arguments: Mapping[str, Any], payload: dict[str, Any], policy: Any) -> Any:
    """Says the document lives in an index the policy denies: the policy checks what it returns."""
    yield from ()
    return {"ok": True, "found": True, "_index": ".hidden", "_id": "1"}


def _tool(after: Any) -> Tool:
    return Tool(name="first_doc", build=_search, description="The first document.",
                parameters=PARAMETERS, after=after)  # fmt: skip


def test_the_after_step_reads_more_under_the_calls_policy(make_runner: Any, xerj: XerjStandIn) -> None:
    SEEN.clear()
    runner = make_runner(url=xerj.url, tools=[_tool(_first_document)])
    before = len(xerj.requests)
    result = runner.run(chat_call("first_doc", {"index": "docs"}))
    assert result.ok and result.payload["found"] is True and result.payload["_index"] == "docs"
    assert SEEN == [({"index": "docs"}, True, False)]
    sent = [(r.method, r.path.split("/")[-2]) for r in xerj.requests[before:]]
    assert sent[-2:] == [("GET", "_doc"), ("GET", "_cat")]
    assert result.attempts == 2  # the search and the document read; the listing is not counted
    # an answer that is an error runs no step
    assert runner.payload("first_doc", {"index": "missing"})["error"]["code"] == "index_not_found"
    assert len(SEEN) == 1


def test_what_the_after_step_returns_is_held_to_the_policy(make_runner: Any, xerj: XerjStandIn) -> None:
    payload = make_runner(url=xerj.url, tools=[_tool(_moved)]).payload("first_doc", {"index": "docs"})
    assert payload["error"]["code"] == "policy_denied" and payload["error"]["refused"] == "index"
    allowed = Policy(deny_indices=("secret-*",))
    ok = make_runner(url=xerj.url, tools=[_tool(_moved)], policy=allowed).payload("first_doc", {"index": "docs"})
    assert ok == {"ok": True, "found": True, "_index": ".hidden", "_id": "1"}


def test_traits_and_advice_group_what_the_policy_and_the_model_read() -> None:
    plain = Tool(name="t", build=_search)
    assert plain.traits == PolicyTraits() and plain.advice == Advice()
    # left undeclared, a trait is inferred from the argument names (the policy fails closed)
    args = {"index": "a", "source_indices": ["b"], "size": 3, "k": 1, "rerank": {}}
    assert plain.traits.index_arguments(args) == ("index", "source_indices")
    assert plain.traits.cap_arguments(args) == {"size": "max_size", "k": "max_k"}
    assert plain.traits.rerank_argument(args) == "rerank"
    declared = PolicyTraits(index_args=("source",), caps={"limit": "max_size"}, rerank_arg="second")
    assert declared.index_arguments(args) == ("source",) and declared.cap_arguments(args) == {"limit": "max_size"}
    assert declared.rerank_argument(args) is None
    assert Advice(refetch=lambda served: ",".join(sorted(served))).refetch_hint({"b", "a"}) == "a,b"
    # an argument that filters a listing: its concrete names are held to the policy, not its wildcards
    lister = Tool(name="list_logs", build=_search, traits=PolicyTraits(listed_args=("names",)))
    refused = Policy().apply(lister, {"names": "logs-*,.secret"})
    assert isinstance(refused, PolicyDenied) and str(refused).startswith("name 2 of `names` is not among")
    assert not isinstance(Policy().apply(lister, {"names": "*"}), PolicyDenied)


def test_a_cap_that_names_no_policy_cap_is_refused_when_the_traits_are_made() -> None:
    with pytest.raises(ConfigurationError, match="'max_sise'"):
        PolicyTraits(caps={"size": "max_sise"})  # type: ignore[dict-item]
