"""Hostile model input: a depth scan that
stays linear on hostile text, lone surrogates, over-long ids and exceptions raised anywhere while
a request is built or sent. Each answer is a tool message; nothing raises out of `dispatch`."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx2
import pytest

from xerj_tools import Dispatcher, Policy, _bounds, run_agent
from xerj_tools._dispatch import _core
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

from conftest import Runner, chat_call, openai_client
from rawserver import RawServer, answer

MAX_ID_BYTES = 65_535  # xerj_tools.tools._paths.MAX_ID_BYTES: XERJ's u16 id length
MAX_ID_URL = 60_000  # xerj_tools.tools._paths.MAX_ID_URL: what a request URL holds


def hostile(size: int) -> str:
    """Text that makes a naive depth scan quadratic: 65 bracket pairs (past the count shortcut), then a string that
    never closes, made of escaped quotes, `size` characters in all."""
    head = "[]" * 65 + '"'
    return head + '\\"' * ((size - len(head)) // 2)


class Counting:
    """Wraps a compiled pattern; adds up the characters each search or match examined."""

    def __init__(self, pattern: re.Pattern[str], tally: list[int]) -> None:
        self.pattern, self.tally = pattern, tally

    def search(self, text: str, position: int) -> re.Match[str] | None:
        found = self.pattern.search(text, position)
        self.tally.append((found.end() if found else len(text)) - position)
        return found

    def match(self, text: str, position: int) -> re.Match[str] | None:
        found = self.pattern.match(text, position)
        self.tally.append((found.end() if found else len(text)) - position)
        return found


DEPTH_TEXTS = [
    pytest.param(hostile(256 * 1024), id="unclosed-escaped-quotes-at-256KiB"),
    pytest.param("[" * 70 + '"' + 'a\\"' * 50_000 + '"' + "]" * 70, id="deep-with-a-long-string"),
    pytest.param('{"a": [' + '"\\\\", ' * 30_000 + "[" * 70 + "]" * 70 + "]}", id="many-strings"),
    pytest.param("[" * 65 + '"\\' + '"' * 40_000, id="quotes-after-a-backslash"),
]


@pytest.mark.parametrize("text", DEPTH_TEXTS)
def test_the_depth_scan_reads_each_character_at_most_twice(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # The work of the scan, counted deterministically: every step starts where the last ended
    # and reads forward; a quadratic scan re-reads the rest of the text at every escaped quote.
    tally: list[int] = []
    monkeypatch.setattr(_bounds, "_NEXT_TOKEN", Counting(_bounds._NEXT_TOKEN, tally))
    monkeypatch.setattr(_bounds, "_STRING_REST", Counting(_bounds._STRING_REST, tally))
    _bounds._text_depth_exceeds(text, _bounds.MAX_ARGUMENT_DEPTH)
    assert tally and sum(tally) <= 2 * len(text)


def test_the_depth_scan_still_measures_depth() -> None:
    limit = _bounds.MAX_ARGUMENT_DEPTH
    assert _bounds._text_depth_exceeds("[" * (limit + 1) + "]" * (limit + 1), limit)
    assert not _bounds._text_depth_exceeds("[" * limit + "]" * limit, limit)
    # brackets inside strings, escaped quotes among them, do not count
    inside = '["' + '[\\"' * (limit + 5) + '"]'
    assert not _bounds._text_depth_exceeds(inside, limit)
    assert _bounds._text_depth_exceeds('["\\\\"' + "[" * limit + "]" * limit + "]", limit)


def test_unclosed_escaped_quotes_at_the_size_cap_are_invalid_json_at_once(runner: Runner, xerj: XerjStandIn) -> None:
    # a depth scan that re-reads the rest at every escaped quote spends minutes of CPU here
    text = hostile(Policy().max_argument_bytes or 0)
    assert runner.run(chat_call("xerj_search", text)).code == "invalid_json"
    assert xerj.requests == []


def test_the_loop_guard_does_not_read_what_the_size_cap_refuses(
    xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xerj_tools._agent import _run

    keyed: list[int] = []
    real = _run.call_key
    monkeypatch.setattr(
        _run, "call_key", lambda call: keyed.append(len(call.arguments)) or real(call)
    )
    big, small = hostile(96 * 1024), '{"index": "docs", "query": {"match_all": {}}}'
    script = [Turn(tool_calls=[("xerj_search", big), ("xerj_search", small)]), Turn(text="done")]
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with (
        ScriptedModel(script) as model,
        openai_client(model.base_url) as client,
        Dispatcher(url=xerj.url, policy=Policy(max_argument_bytes=32 * 1024)) as dispatcher,
    ):
        result = run_agent(client, model="scripted", messages=messages, dispatcher=dispatcher)
    assert result.completed
    codes = [
        json.loads(m["content"]).get("error", {}).get("code")
        for m in messages
        if m.get("role") == "tool"
    ]
    assert codes == ["policy_denied", None]
    assert keyed == [len(small)]  # the guard keyed the small call only


S = "\\ud800"  # JSON text for a lone surrogate: valid JSON, no character, not encodable
SURROGATES = [
    pytest.param(
        "xerj_search",
        '{"index":"docs","query":{"match":{"body":"x' + S + '"}}}',
        "$.query.match.body",
        id="search",
    ),
    pytest.param(
        "xerj_search",
        '{"index":"docs","query":{"match":{"b' + S + '":"x"}}}',
        "$.query.match",
        id="key",
    ),
    pytest.param(
        "xerj_semantic_search",
        '{"index":"docs","field":"body","query":"x' + S + '"}',
        "$.query",
        id="semantic",
    ),
    pytest.param(
        "xerj_memory_store", '{"namespace":"a","text":"x' + S + '"}', "$.text", id="memory-store"
    ),
    pytest.param(
        "xerj_memory_recall",
        '{"namespace":"a","query":"x' + S + '"}',
        "$.query",
        id="memory-recall",
    ),
    pytest.param(
        "xerj_get_document", '{"index":"docs","id":"x' + S + '"}', "$.id", id="get-document"
    ),
    pytest.param(
        "xerj_search",
        '{"index":"docs","query":{"match":{"body":"x\\udfff"}}}',
        "$.query.match.body",
        id="low-surrogate",
    ),
]


@pytest.mark.parametrize(("tool", "text", "path"), SURROGATES)
def test_a_lone_surrogate_is_invalid_arguments_with_its_path(
    runner: Runner, xerj: XerjStandIn, tool: str, text: str, path: str
) -> None:
    result = runner.run(chat_call(tool, text))
    error = json.loads(result.content)["error"]
    assert error["code"] == "invalid_arguments"
    assert error["problems"][0]["path"] == path and "lone surrogate" in error["reason"]
    result.content.encode()  # the message itself is text a client can send
    assert xerj.requests == []


def test_a_surrogate_pair_is_a_character_and_is_sent(runner: Runner, xerj: XerjStandIn) -> None:
    result = runner.run(
        chat_call("xerj_search", '{"index":"docs","query":{"match":{"body":"\\ud83d\\udd11"}}}')
    )
    assert result.ok
    assert xerj.requests[0].body["query"] == {"match": {"body": "🔑"}}


def test_a_surrogate_in_decoded_input_is_refused(runner: Runner, xerj: XerjStandIn) -> None:
    # an Anthropic tool_use input (or any SDK's decoded arguments) holds the character itself
    call = {
        "type": "tool_use",
        "id": "t1",
        "name": "xerj_search",
        "input": {"index": "docs", "query": {"match": {"body": "x\ud800"}}},
    }
    assert runner.run(call).code == "invalid_arguments"
    assert xerj.requests == []


def test_no_message_carries_a_lone_surrogate(runner: Runner) -> None:
    # Arguments text holding the character itself, and not JSON: the message quotes the text.
    result = runner.run(chat_call("xerj_search", '{"index": "do\ud800cs",'))
    assert result.code == "invalid_json"
    result.content.encode()
    assert (
        json.loads(result.content)["error"]["reason"].count("\ud800") == 1
    )  # escaped, still there


def test_run_agent_survives_a_lone_surrogate(xerj: XerjStandIn) -> None:
    script = [Turn(tool_calls=[("xerj_search", SURROGATES[0].values[1])]), Turn(text="done")]
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with (
        ScriptedModel(script) as model,
        openai_client(model.base_url) as client,
        Dispatcher(url=xerj.url) as dispatcher,
    ):
        result = run_agent(client, model="scripted", messages=messages, dispatcher=dispatcher)
    assert (
        result.completed
        and json.loads(messages[2]["content"])["error"]["code"] == "invalid_arguments"
    )


@pytest.mark.parametrize(
    ("doc_id", "said"),
    [("a" * (MAX_ID_BYTES + 1), f"at most {MAX_ID_BYTES} bytes"), ("a" * 70_000, f"at most {MAX_ID_BYTES} bytes"),
     ("é" * 11_000, f"at most {MAX_ID_URL} fit"), ("🔑" * 6_000, f"at most {MAX_ID_URL} fit")],
)
def test_an_id_xerj_cannot_keep_or_a_url_cannot_carry_is_refused(
    runner: Runner, xerj: XerjStandIn, doc_id: str, said: str
) -> None:
    error = json.loads(
        runner.run(chat_call("xerj_get_document", {"index": "docs", "id": doc_id})).content
    )["error"]
    assert error["code"] == "invalid_arguments" and error["problems"][0]["path"] == "$.id"
    assert said in error["reason"]
    assert xerj.requests == []


@pytest.mark.parametrize("doc_id", ["a" * 513, "é" * 9_000, "a" * MAX_ID_URL])
def test_an_id_longer_than_elasticsearchs_512_bytes_is_sent(runner: Runner, xerj: XerjStandIn, doc_id: str) -> None:
    # XERJ checks no id length of its own (es_compat.rs:1972-2008): a 513-byte id is fetchable.
    payload = runner.payload("xerj_get_document", {"index": "docs", "id": doc_id})
    assert payload["ok"] and payload["found"] is False
    assert xerj.requests[0].path.startswith("/docs/_doc/" + ("%C3%A9" if doc_id[0] == "é" else "aaa"))


class Boom(Exception):
    """An exception nothing expects; its message must reach neither the model nor the log."""


RAISED = [
    pytest.param(lambda: httpx2.InvalidURL("URL too long SECRET"), id="InvalidURL"),
    pytest.param(
        lambda: UnicodeEncodeError("utf-8", "SECRET", 0, 1, "surrogates"), id="UnicodeEncodeError"
    ),
    pytest.param(lambda: Boom("SECRET"), id="any-exception"),
    pytest.param(lambda: KeyError("SECRET"), id="KeyError"),
]


@pytest.mark.parametrize("make", RAISED)
@pytest.mark.parametrize("where", ["validate", "build", "send"])
def test_an_exception_anywhere_is_an_answer(
    make_runner: Any,
    xerj: XerjStandIn,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    make: Any,
    where: str,
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise make()

    runner = make_runner(url=xerj.url, handlers={"xerj_search": boom} if where == "build" else None)
    target = runner.sync or runner.aio
    if where == "validate":
        monkeypatch.setattr(_core, "checked_arguments", boom)  # what the dispatcher asks
    elif where == "send":
        monkeypatch.setattr(target._transport, "send", boom)
    with caplog.at_level(logging.ERROR, logger="xerj_tools"):
        result = runner.run(chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}}))
        results = runner.run_many(
            [
                chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}}, "a"),
                chat_call("xerj_search", {"index": "docs", "query": {"term": {"a": 1}}}, "b"),
            ]
        )
    for each in (result, *results):
        assert each.code == "handler_error", each.content
        assert "SECRET" not in each.content
    assert caplog.records and "SECRET" not in caplog.text
    assert all(r.levelno == logging.ERROR for r in caplog.records)


def test_a_handler_whose_url_is_too_long_gets_an_answer(
    make_runner: Any, xerj: XerjStandIn
) -> None:
    # no injection: httpx itself refuses a URL of more than 65,536 characters (InvalidURL)
    from xerj_tools import HttpRequest

    runner = make_runner(
        url=xerj.url, handlers={"xerj_search": lambda args: HttpRequest("GET", "/" + "a" * 70_000)}
    )
    result = runner.run(chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}}))
    assert result.code == "handler_error" and "InvalidURL" in result.content


def test_a_missing_document_with_a_megabyte_id_still_says_found(make_runner: Any) -> None:
    # an engine's 404 holding an `_id` of 1 MB: metadata alone over budget
    body = json.dumps({"_index": "docs", "_id": "i" * (1 << 20), "found": False}).encode()
    with RawServer(answer(404, body, {"Content-Type": "application/json"})) as server:
        runner = make_runner(url=server.url)
        payload = runner.payload("xerj_get_document", {"index": "docs", "id": "i"})
    assert payload["ok"] is True and payload["found"] is False and payload["_index"] == "docs"
    assert payload["_id"].startswith("i" * 100) and payload["_id"].endswith("[+1048476 chars]")
    assert payload["truncated"]["cut_paths"] == ["_id"]


def test_a_lone_surrogate_from_the_engine_reaches_the_model_escaped(make_runner: Any) -> None:
    hit = {"_index": "docs", "_id": "1", "_score": 1.0, "_source": {"title": "x\ud800y"}}
    hits = {"hits": {"total": {"value": 1, "relation": "eq"}, "hits": [hit]}}
    body = json.dumps(hits).encode()  # the JSON escape, as an engine would write it
    assert b'"x\\ud800y"' in body
    with RawServer(answer(200, body, {"Content-Type": "application/json"})) as server:
        result = make_runner(url=server.url).run(
            chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}})
        )
    assert result.ok and "\\ud800" in result.content
    result.content.encode()
    assert json.loads(result.content)["hits"][0]["_source"]["title"] == "x\ud800y"
