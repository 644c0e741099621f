"""The fault matrix, over a real socket, sync and async: for each fault, the code the model sees
and the number of attempts, through dispatch, dispatch_many and the agent loop, with no
exception out of any of them."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from support import closed_port
from tool_examples import example_arguments

from xerj_tools import (
    XERJ_TOOLS,
    AsyncDispatcher,
    Dispatcher,
    Limits,
    RetryPolicy,
    Timeout,
    arun_agent,
    load_registry,
    run_agent,
)
from xerj_tools.testing import Fault, ScriptedModel, Turn, XerjStandIn

from conftest import Runner, SleepRecorder, chat_call, openai_client

# a pattern XERJ globs itself: the dispatcher reads no index listing before it (docs/policy.md)
SEARCH = {"index": "doc*", "query": {"match": {"body": "checkout"}}, "size": 2}
RERANKED = {**SEARCH, "rerank": {}}
HTML = b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
OK_BODY = {"took": 1, "timed_out": False, "hits": {"total": {"value": 1, "relation": "eq"}, "hits": [
    {"_index": "docs", "_id": "1", "_score": 1.0, "_source": {"title": "t"}}]}}


def refusal(status: int, kind: str = "rerank_exception", reason: str = "no rerank API key is configured") -> Fault:
    return Fault(status=status, body={"error": {"type": kind, "reason": reason}, "status": status}, match="_search")


@dataclass(frozen=True)
class Case:
    name: str
    faults: list[Fault]
    code: str | None  # None: the call succeeds
    attempts: int
    arguments: dict[str, Any] = field(default_factory=lambda: dict(SEARCH))
    options: dict[str, Any] = field(default_factory=dict)
    refused: bool = False  # connection refused: no node at all

    def __str__(self) -> str:
        return self.name


def search_fault(**kwargs: Any) -> Fault:
    return Fault(match="_search", **kwargs)


CASES = [
    Case("connection refused", [], "unreachable", 4, refused=True),
    Case("reset mid-body", [search_fault(status=200, body=OK_BODY, truncate=25)] * 4, "unreachable", 4),
    Case("read timeout", [search_fault(delay=0.6)] * 2, "timeout", 2,
         options={"timeout": Timeout(read=0.1), "retry": RetryPolicy(max_attempts=2)}),
    Case("slow headers within the timeout", [search_fault(delay=0.2)], None, 1, options={"timeout": Timeout(read=5)}),
    Case("429 with Retry-After", [search_fault(status=429, headers={"Retry-After": "2"})], None, 2),
    Case("429 without Retry-After", [search_fault(status=429)] * 4, "rate_limited", 4),
    Case("502/503/504 flapping, then ok", [search_fault(status=s) for s in (502, 503, 504)], None, 4),
    Case("503 rerank_exception", [refusal(503)], None, 2, arguments=RERANKED),
    Case("403 rerank_exception", [refusal(403, reason="rerank is disabled")], None, 2, arguments=RERANKED),
    Case("502 rerank_exception", [refusal(502, reason="provider unreachable")], None, 2, arguments=RERANKED),
    Case("older node's 400 for rerank", [refusal(400, "parsing_exception", "Unknown key for a START_OBJECT in [rerank].")],
         None, 2, arguments=RERANKED),
    Case("401", [refusal(401, "security_exception", "missing or invalid API key")], "unauthorized", 1),
    Case("404 index_not_found_exception", [refusal(404, "index_not_found_exception", "no such index [docs]")],
         "index_not_found", 1),
    Case("500", [search_fault(status=500, body={"error": {"type": "x", "reason": "boom"}, "status": 500})],
         "server_error", 1),
    Case("HTML proxy page (200)", [search_fault(status=200, body=HTML, content_type="text/html")], "invalid_response", 1),
    Case("HTML proxy page (502)", [search_fault(status=502, body=HTML, content_type="text/html")] * 4, "server_error", 4),
    Case("truncated JSON", [search_fault(status=200, body=b'{"hits": {"total": {"val')], "invalid_response", 1),
    Case("body beyond the cap", [search_fault(status=200, body=b'{"x": "' + b"a" * 5000 + b'"}')],
         "response_too_large", 1, options={"limits": Limits(max_response_bytes=1000)}),
    Case("wrong content type", [search_fault(status=200, body=OK_BODY, content_type="text/plain")], None, 1),
]


def check(case: Case, payload: dict[str, Any], attempts: int | None, xerj: XerjStandIn) -> None:
    assert payload.get("error", {}).get("code") == case.code, payload
    if case.code is None and case.arguments is RERANKED:
        assert payload["rerank"]["applied"] is False and payload["rerank"]["fallback"]
    if attempts is not None:
        assert attempts == case.attempts
    if not case.refused:
        assert sum("_search" in r.path for r in xerj.requests) == case.attempts


def options(case: Case, mode: str, sleeps: SleepRecorder, xerj: XerjStandIn) -> dict[str, Any]:
    sleep = sleeps if mode == "sync" else sleeps.asleep
    return {"url": closed_port() if case.refused else xerj.url, "sleep": sleep, **case.options}


def runner_for(case: Case, make_runner: Any, xerj: XerjStandIn) -> Runner:
    """A dispatcher (either kind, as `make_runner`'s mode says) for the case, its faults queued."""
    xerj.fail_next(*case.faults)
    return make_runner(url=closed_port() if case.refused else xerj.url, **case.options)  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_dispatch(case: Case, make_runner: Any, sleeps: SleepRecorder, xerj: XerjStandIn) -> None:
    result = runner_for(case, make_runner, xerj).run(chat_call("xerj_search", case.arguments))
    check(case, dict(result.payload), result.attempts, xerj)
    if case.name == "429 with Retry-After":
        assert sleeps.waits == [2.0]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_dispatch_many(case: Case, make_runner: Any, xerj: XerjStandIn) -> None:
    calls = [chat_call("xerj_search", case.arguments, "faulty"),
             chat_call("xerj_memory_recall", {"namespace": "agent", "query": "tea"}, "healthy")]
    messages: list[Any] = [r.message for r in runner_for(case, make_runner, xerj).run_many(calls)]
    assert [m["tool_call_id"] for m in messages] == ["faulty", "healthy"]
    check(case, json.loads(messages[0]["content"]), None, xerj)
    healthy = json.loads(messages[1]["content"])
    assert healthy["ok"] is True or (case.refused and healthy["error"]["code"] == "unreachable")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agent_loop(case: Case, mode: str, sleeps: SleepRecorder, xerj: XerjStandIn) -> None:
    xerj.fail_next(*case.faults)
    script = [Turn(tool_calls=[("xerj_search", case.arguments)]), Turn(text="Done, whatever happened.")]
    messages: list[Any] = [{"role": "user", "content": "search"}]
    with ScriptedModel(script) as model:
        if mode == "sync":
            with openai_client(model.base_url, api_key="s") as client, \
                    Dispatcher(**options(case, mode, sleeps, xerj)) as dispatcher:
                result = run_agent(client, model="m", messages=messages, dispatcher=dispatcher)
        else:
            async def go() -> Any:
                async with openai_client(model.base_url, "async", api_key="s") as client, \
                        AsyncDispatcher(**options(case, mode, sleeps, xerj)) as dispatcher:
                    return await arun_agent(client, model="m", messages=messages, dispatcher=dispatcher)

            result = asyncio.run(go())
    assert result.completed and result.output_text == "Done, whatever happened."
    check(case, json.loads(messages[2]["content"]), None, xerj)
    stats = result.tool_stats["xerj_search"]
    assert stats.errors == (0 if case.code is None else 1)


# The same faults for every tool of the registry (a new tool joins by being in tools.json): the
# code the model sees, the attempts, and a too-large hint in the tool's own terms.
REGISTRY = load_registry()
EVERY_TOOL = [
    Case("429 without Retry-After", [Fault(status=429)] * 4, "rate_limited", 4),
    Case("502/503/504 flapping, then ok", [Fault(status=s) for s in (502, 503, 504)], None, 4),
    Case("500", [Fault(status=500, body={"error": {"type": "x", "reason": "boom"}, "status": 500})], "server_error", 1),
    Case("HTML proxy page (200)", [Fault(status=200, body=HTML, content_type="text/html")], "invalid_response", 1),
    Case("truncated JSON", [Fault(status=200, body=b'{"hits": {"total": {"val')], "invalid_response", 1),
    Case("an empty JSON object (200)", [Fault(status=200, body={})], "invalid_response", 1),
    Case("body beyond the cap", [Fault(status=200, body=b'{"x": "' + b"a" * 5000 + b'"}')],
         "response_too_large", 1, options={"limits": Limits(max_response_bytes=1000)}),
]


# Where a tool reads a fault's answer otherwise, as XERJ means it: `{}` is XERJ's own answer to
# `GET /missing/_mapping` (es_compat.rs:1469-1473 keeps the name, then skips it).
EXPECTED = {("xerj_describe_index", "an empty JSON object (200)"): "index_not_found"}


def follow_up(tool: str, path: str) -> bool:
    # the listing, a field hint's mapping, XERJ autoindex's catalog after a description
    catalog = tool in ("xerj_describe_index", "xerj_list_indices") and path == "/autoindex-catalog/_search"
    return path.startswith("/_resolve/") or catalog or (tool != "xerj_describe_index" and path.endswith("/_mapping"))


@pytest.mark.parametrize("case", EVERY_TOOL, ids=str)
@pytest.mark.parametrize("tool", REGISTRY.names)
def test_every_tool_meets_the_faults(tool: str, case: Case, make_runner: Any, xerj: XerjStandIn) -> None:
    result = runner_for(case, make_runner, xerj).run(chat_call(tool, example_arguments(REGISTRY, tool)))
    assert result.code == EXPECTED.get((tool, case.name), case.code), result.payload
    # the call's own requests; a listing or mapping read after the answer is no attempt
    own = [r for r in xerj.requests if not follow_up(tool, r.path)]
    assert result.attempts == case.attempts and len(own) == case.attempts
    if case.code == "response_too_large":
        assert XERJ_TOOLS[tool].advice.too_large is not None and result.payload["error"]["hint"]
