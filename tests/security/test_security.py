"""Model-supplied names never leave their path segment; memory indices stay out of reach; the
API key never shows anywhere."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xerj_tools import ConfigurationError, Dispatcher, Policy, load_registry
from xerj_tools.testing import Fault, XerjStandIn

from conftest import Runner, chat_call

ESCAPES = [
    "../_cluster", "..", "docs/../_cluster", "docs/_doc/1", "/docs", "docs%2F_doc", "%2e%2e", "%2e%2e%2f_cluster",
    "docs?pretty", "docs#x", "docs\\..\\_cluster", "docs\u2215_doc", "\uff0e\uff0e\uff0f_cluster", "docs\u2044x",
    "docs\u00a0", "docs\u202e", "docs\n", "docs\x00", "docs\t", "a" * 5000, "_cluster", "_nodes", "+docs", "-docs",
    ".xerj-memory-tenant-b", "docs,../x", "docs,,tickets", "docs, tickets",
]  # fmt: skip


def _search_path_ok(path: str, index: str) -> bool:
    raw = path.strip("/").split("/")
    return len(raw) == 2 and raw[1] == "_search" and unquote(raw[0]) == index


@pytest.mark.parametrize("index", ESCAPES)
def test_index_escapes_never_reach_another_path(runner: Runner, xerj: XerjStandIn, index: str) -> None:
    for tool, args in (("xerj_search", {"index": index, "query": {}}),
                       ("xerj_semantic_search", {"index": index, "field": "body", "query": "x"}),
                       ("xerj_hybrid_search", {"index": index, "queries": [{"query": {"match_all": {}}}]})):
        payload = runner.payload(tool, args)
        assert payload["ok"] is False
        assert payload["error"]["code"] in ("invalid_arguments", "policy_denied")
    assert all(_search_path_ok(r.path, r.segments[0]) for r in xerj.requests)
    assert xerj.requests == []


@pytest.mark.parametrize("namespace", [*ESCAPES, "Tenant-B", "tenant b", "tenant-b.", "x-edges", "é"])
def test_namespace_escapes_never_reach_another_path(runner: Runner, xerj: XerjStandIn, namespace: str) -> None:
    for tool, args in (("xerj_memory_store", {"namespace": namespace, "text": "x"}),
                       ("xerj_memory_recall", {"namespace": namespace, "query": "x"})):
        payload = runner.payload(tool, args)
        if payload["ok"]:  # a name the rule allows ("tenant-b." is one) reaches its own endpoint only
            assert xerj.requests[-1].segments[:2] == ["_memory", namespace]
    for request in xerj.requests:
        assert request.segments[0] == "_memory" and len(request.segments) in (2, 3)
        assert request.segments[1] == namespace and request.segments[2:] in ([], ["_recall"])


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=80))
def test_any_index_text_stays_in_its_segment(name: str) -> None:
    from xerj_tools import HANDLERS

    registry = load_registry()
    result = registry.validate("xerj_search", {"index": name, "query": {}})
    if result.ok:
        request = HANDLERS["xerj_search"](result.arguments or {})
        assert _search_path_ok(request.path, name)
        assert "?" not in request.path and "#" not in request.path


def test_memory_indices_are_out_of_reach_by_default(xerj: XerjStandIn) -> None:
    with Dispatcher(url=xerj.url) as dispatcher:
        for index in (".xerj-memory-tenant-b", ".xerj-memory-*", "*", "_all", "docs,.xerj-memory-a"):
            result = dispatcher.run(chat_call("xerj_search", {"index": index, "query": {}}))
            assert result.code == "policy_denied", index
    assert xerj.requests == []
    xerj.add_documents(".xerj-memory-tenant-b", {"m": {"text": "a memory"}})
    with Dispatcher(url=xerj.url, policy=Policy(deny_indices=())) as open_dispatcher:
        open_dispatcher.run(chat_call("xerj_search", {"index": ".xerj-memory-tenant-b", "query": {}}))
    assert [r.path for r in xerj.requests] == ["/.xerj-memory-tenant-b/_search"]


SENTINEL = "SENTINEL-9f2c-KEY"


def test_the_api_key_never_appears_anywhere(caplog: pytest.LogCaptureFixture, make_runner: Any) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    with XerjStandIn(api_key=SENTINEL) as xerj:
        runner = make_runner(url=xerj.url, api_key=SENTINEL, handlers={"xerj_semantic_search": _boom})
        xerj.fail_next(503, Fault(status=401, body={"error": {"type": "security_exception",
                                                              "reason": "missing or invalid API key"}}))
        results = runner.run_many([
            chat_call("xerj_search", {"index": "docs", "query": {}}, "a"),
            chat_call("xerj_search", "{broken", "b"),
            chat_call("xerj_semantic_search", {"index": "docs", "field": "body", "query": "x"}, "c"),
            chat_call("xerj_memory_store", {"namespace": "n", "text": SENTINEL[:4]}, "d"),
            chat_call("xerj_nope", {}, "e"),
        ])
        assert xerj.requests and xerj.requests[0].headers["authorization"] == f"ApiKey {SENTINEL}"
        dispatcher = runner.sync or runner.aio
        texts += [r.content for r in results] + [repr(r) for r in results]
        texts += [repr(dispatcher), str(vars(dispatcher)), repr(dispatcher._endpoint), repr(dispatcher._transport.__dict__)]
        texts.append(repr(vars(dispatcher._endpoint)))  # the request headers built once, held there
        texts += [repr(r) for r in xerj.requests]
    with pytest.raises(ConfigurationError) as info:
        Dispatcher(url=f"http://user:{SENTINEL}@localhost:9200", api_key=SENTINEL)
    texts.append(str(info.value))
    texts += [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    texts += [logging.Formatter().format(record) for record in caplog.records]
    assert any("handler for xerj_semantic_search raised RuntimeError" in t for t in texts)  # logs captured
    leaks = [t for t in texts if SENTINEL in t]
    assert leaks == []


def _boom(arguments: Any) -> Any:
    raise RuntimeError("handler failure")


def test_the_dry_run_and_tool_results_carry_no_key(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from xerj_tools._cli._main import main

    monkeypatch.setenv("XERJ_API_KEY", SENTINEL)
    assert main(["call", "xerj_search", json.dumps({"index": "docs", "query": {}}), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert SENTINEL not in out and "<redacted>" in out


@pytest.mark.parametrize("path", ["/docs/../_memory/agent", "/./_search", "/docs/%2e%2e/_cluster", "/docs/.%2E/x", "/x/."])
def test_a_dot_segment_never_reaches_httpx(xerj: XerjStandIn, path: str) -> None:
    # httpx resolves `.` and `..` before sending (`/docs/../x` goes out as `/x`): a handler whose
    # argument became such a segment is refused before anything is sent.
    from xerj_tools import HttpRequest

    with Dispatcher(url=xerj.url, handlers={"xerj_search": lambda args: HttpRequest("POST", path, {})}) as dispatcher:
        result = dispatcher.run(chat_call("xerj_search", {"index": "docs", "query": {}}))
    assert result.code == "invalid_arguments" and "relative path" in result.payload["error"]["reason"]
    assert xerj.requests == []


@pytest.mark.parametrize("name", [".", ".."])
def test_the_built_in_handlers_refuse_a_dot_name(name: str) -> None:
    from xerj_tools import HANDLERS, ArgumentsError

    for tool, args in (("xerj_search", {"index": name}), ("xerj_memory_store", {"namespace": name}),
                       ("xerj_memory_recall", {"namespace": name, "query": "q"})):
        with pytest.raises(ArgumentsError) as info:
            HANDLERS[tool](args)
        assert info.value.problems[0].path in ("$.index", "$.namespace")


BAD_KEYS = ["s\u00e9cret-key-42", "secret-key-42\r\nX-Injected: 1", "secret\nkey", "secret\x00key", "secret\x7fkey",
            "secret\u2028key-42"]


@pytest.mark.parametrize("key", BAD_KEYS)
@pytest.mark.parametrize("argument", ["api_key", "authorization"])
def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it(
    key: str, argument: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a key would fail (or inject a header) on every request, with the key in the error
    text or in httpcore's log; it is refused when the dispatcher is built."""
    from xerj_tools import AsyncDispatcher

    value = key if argument == "api_key" else f"Bearer {key}"
    for kind in (Dispatcher, AsyncDispatcher):
        with pytest.raises(ConfigurationError) as raised:
            kind(url="http://127.0.0.1:9", **{argument: value})
        text = str(raised.value) + repr(raised.value)
        assert "secret" not in text and "key-42" not in text and argument.replace("_", " ") in text.lower()
    if "\x00" in key:
        return  # an environment variable cannot hold it
    monkeypatch.setenv("XERJ_API_KEY", key)
    with pytest.raises(ConfigurationError) as raised:
        Dispatcher(url="http://127.0.0.1:9")
    assert "secret" not in str(raised.value)
