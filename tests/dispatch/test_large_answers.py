"""Large answers and the event loop: `AsyncDispatcher` reads a large reply, and shapes its tool
message, on a worker thread, so the loop's other tasks (other calls, an MCP server's other
clients) keep running; a small reply stays on the loop. Across real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from xerj_tools import AsyncDispatcher, HttpRequest, RetryPolicy
from xerj_tools._dispatch import _async
from xerj_tools._dispatch._core import DispatchCore
from xerj_tools._http._body import YIELDING_BYTES, decode_json
from xerj_tools.tools import Received, Tool

from conftest import chat_call
from rawserver import RawServer, answer

WAIT = 10.0  # how long a condition may take on a loaded machine; reached only when it fails

LARGE = 4 * _async.OFF_LOOP_BYTES


def _filler(size: int) -> bytes:
    """A JSON object of about `size` bytes."""
    return json.dumps({"rows": [{"n": i, "text": "x" * 40} for i in range(size // 56)]}).encode()


def _tool(name: str, path: str, read: Any) -> Tool:
    return Tool(
        name=name,
        build=lambda a: HttpRequest("GET", path, None),
        read=read,
        description=f"reads {path}",
        parameters={"type": "object", "properties": {}},
    )


def test_a_large_answer_is_read_on_a_worker_thread_while_a_small_call_completes() -> None:
    """The large call's reader waits for the small call, started once the large one is being
    read, to finish: only a loop left free while the large answer is read lets it finish."""
    reading, small_done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def read_large(received: Received) -> dict[str, Any]:
        seen["large"] = threading.get_ident()
        reading.set()
        seen["small finished meanwhile"] = small_done.wait(WAIT)
        return {"ok": True, "bytes": len(received.reply.body)}

    def read_small(received: Received) -> dict[str, Any]:
        seen["small"] = threading.get_ident()
        return {"ok": True, "result": received.reply.data}

    small_body = json.dumps({"n": 1}).encode()
    large_body = _filler(LARGE)
    with (
        RawServer(answer(200, large_body)) as large,
        RawServer(answer(200, small_body)) as small,
    ):

        async def main() -> None:
            seen["loop"] = threading.get_ident()
            tools_large = [_tool("read_large", "/large", read_large)]
            tools_small = [_tool("read_small", "/small", read_small)]
            async with (
                AsyncDispatcher(url=large.url, tools=tools_large, retry=RetryPolicy(1)) as d1,
                AsyncDispatcher(url=small.url, tools=tools_small, retry=RetryPolicy(1)) as d2,
            ):
                pending = asyncio.ensure_future(d1.dispatch(chat_call("read_large", {})))
                assert await asyncio.to_thread(reading.wait, WAIT)  # the large one is read now
                quick = await d2.dispatch(chat_call("read_small", {}))
                small_done.set()
                seen["small answer"] = json.loads(quick["content"])
                seen["large answer"] = json.loads((await pending)["content"])

        asyncio.run(main())

    assert seen["small finished meanwhile"] is True
    assert seen["large"] != seen["loop"]  # read off the loop
    assert seen["small"] == seen["loop"]  # a small answer pays no thread hop
    assert seen["small answer"] == {"ok": True, "result": {"n": 1}}
    assert seen["large answer"] == {"ok": True, "bytes": len(large_body)}


class _Ticks:
    """A heartbeat task's ticks, which a worker thread can wait on."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    async def beat(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with self.changed:
                self.count += 1
                self.changed.notify_all()
            await asyncio.sleep(0.001)

    def advance(self, by: int) -> bool:
        """Wait (on a worker thread) until the heartbeat ticked `by` more times."""
        with self.changed:
            target = self.count + by
            return self.changed.wait_for(lambda: self.count >= target, WAIT)


def _search_body(hits: int, text: int) -> bytes:
    rows = [
        {"_index": "docs", "_id": str(i), "_score": 1.0, "_source": {"body": "y" * text}}
        for i in range(hits)
    ]
    return json.dumps({"took": 1, "hits": {"total": {"value": hits}, "hits": rows}}).encode()


def _watched(monkeypatch: pytest.MonkeyPatch, ticks: _Ticks | None) -> dict[str, list[Any]]:
    """Record the thread that reads each reply and fits each message; with `ticks`, each step
    also waits until the loop's heartbeat ticked while it ran (which it cannot do on the loop)."""
    seen: dict[str, list[Any]] = {"read": [], "fit": [], "ticked": []}
    payload_for, result = DispatchCore.payload_for, DispatchCore.result

    def reading(self: DispatchCore, *args: Any) -> Any:
        seen["read"].append(threading.get_ident())
        if ticks is not None:
            seen["ticked"].append(ticks.advance(3))
        return payload_for(self, *args)

    def fitting(self: DispatchCore, *args: Any) -> Any:
        seen["fit"].append(threading.get_ident())
        if ticks is not None:
            seen["ticked"].append(ticks.advance(3))
        return result(self, *args)

    monkeypatch.setattr(DispatchCore, "payload_for", reading)
    monkeypatch.setattr(DispatchCore, "result", fitting)
    return seen


def test_a_large_search_answer_is_read_and_fitted_while_the_loop_keeps_ticking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks = _Ticks()
    seen = _watched(monkeypatch, ticks)
    body = _search_body(200, 6000)  # 1.2 MB: larger than OFF_LOOP_BYTES, longer than the budget
    assert len(body) > _async.OFF_LOOP_BYTES

    async def main() -> dict[str, Any]:
        seen["loop"] = [threading.get_ident()]
        stop = asyncio.Event()
        heart = asyncio.ensure_future(ticks.beat(stop))
        try:
            async with AsyncDispatcher(url=server.url, retry=RetryPolicy(1)) as dispatcher:
                call = chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}})
                return await dispatcher.dispatch(call)  # type: ignore[no-any-return]
        finally:
            stop.set()
            await heart

    with RawServer(answer(200, body)) as server:
        message = asyncio.run(main())

    loop = seen["loop"][0]
    assert seen["read"] and loop not in seen["read"]
    assert seen["fit"] and loop not in seen["fit"]
    assert seen["ticked"] and all(seen["ticked"])  # the heartbeat ran during each step
    payload = json.loads(message["content"])
    assert payload["ok"] is True and payload["hits"][0]["_id"] == "0"
    assert payload["truncated"]["hits_omitted"] > 0  # fitted: 1.2 MB of hits cut to the budget


def test_a_small_answer_is_read_and_fitted_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _watched(monkeypatch, None)
    body = _search_body(3, 100)
    assert len(body) < _async.OFF_LOOP_BYTES

    async def main() -> dict[str, Any]:
        seen["loop"] = [threading.get_ident()]
        async with AsyncDispatcher(url=server.url, retry=RetryPolicy(1)) as dispatcher:
            call = chat_call("xerj_search", {"index": "docs", "query": {"match_all": {}}})
            return await dispatcher.dispatch(call)  # type: ignore[no-any-return]

    with RawServer(answer(200, body)) as server:
        message = asyncio.run(main())

    assert set(seen["read"]) == set(seen["fit"]) == set(seen["loop"])
    assert [h["_id"] for h in json.loads(message["content"])["hits"]] == ["0", "1", "2"]


def test_a_large_body_decodes_to_the_same_value_as_json_loads() -> None:
    body = _filler(2 * YIELDING_BYTES)
    nested = json.dumps({"a": [{"b": {"c": [1.5, None, "x"]}}] * 20000}).encode()
    assert len(nested) > YIELDING_BYTES
    for raw in (body, nested, b'{"n": NaN, "pad": "' + b"z" * YIELDING_BYTES + b'"}'):
        value, why = decode_json(raw)
        assert why is None
        assert value == json.loads(raw, parse_constant=lambda _: None)
