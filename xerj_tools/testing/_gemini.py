"""A scripted Gemini: a server on 127.0.0.1 that answers ``generateContent`` as the Gemini API does.

It serves ``POST /{version}/models/{model}:generateContent``, so that google-genai's real client
(``genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=gemini.base_url))``) and
what is built on it can be driven from a script of `Turn`s. Each request takes the next turn; its
calls go out as ``functionCall`` parts (with ``args`` as given: Gemini sends decoded objects), with
ids only when asked for (``ids=True``; the Gemini API leaves them out). Like the API, it refuses
with 400 ``INVALID_ARGUMENT`` a request whose function call turn is not followed by exactly one
``functionResponse`` per call, matched by id where the call had one, by name and order where it
did not. It is a test double, not a model: streaming is not served.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ._loopback import LoopbackServer, QuietHandler
from ._model import Turn

__all__ = ["ScriptedGemini", "pairing_problem"]


def _key(part: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in part:
            return part[name]
    return None


def pairing_problem(contents: Sequence[Any]) -> str | None:
    """What is wrong with the pairing of function calls and responses in `contents`, if
    anything: each model content's calls must be answered by the next content, one response
    each, by id where the call has one, else by name in the same order."""
    for at, content in enumerate(contents):
        parts = content.get("parts") or [] if isinstance(content, Mapping) else []
        calls = [_key(p, "functionCall", "function_call") for p in parts if isinstance(p, Mapping)]
        calls = [c for c in calls if c is not None]
        if not calls:
            continue
        following = contents[at + 1] if at + 1 < len(contents) else None
        if following is None:
            return None  # the turn being asked about ends with the calls: nothing to answer yet
        answers = [
            _key(p, "functionResponse", "function_response")
            for p in following.get("parts") or []
            if isinstance(p, Mapping)
        ]
        answers = [a for a in answers if a is not None]
        if len(answers) != len(calls):
            return (
                "Please ensure that the number of function response parts is equal to the number "
                f"of function call parts of the function call turn ({len(calls)} calls, "
                f"{len(answers)} responses)."
            )
        for call, answer in zip(calls, answers, strict=True):
            if call.get("id") and answer.get("id") != call.get("id"):
                return f"function response id {answer.get('id')!r} answers no call {call['id']!r}"
            if answer.get("name") != call.get("name"):
                return f"function response name {answer.get('name')!r} is not {call.get('name')!r}"
            if not isinstance(answer.get("response"), Mapping):
                return "function response needs a response object"
    return None


class _Handler(QuietHandler):
    content_type = "application/json; charset=UTF-8"
    server: _Server

    def do_POST(self) -> None:
        gemini = self.server.gemini
        body = self.read_json()
        path = self.path.split("?")[0]
        if not path.endswith(":generateContent"):
            self._error(404, "NOT_FOUND", f"not served here: {path}")
            return
        problem = pairing_problem(body.get("contents") or [])
        turn = gemini._take(path, body, problem)
        if problem is not None:
            self._error(400, "INVALID_ARGUMENT", problem)
        elif turn is None:
            self._error(400, "FAILED_PRECONDITION", "the script has no more turns")
        else:
            self.send_json(200, gemini._reply(turn))

    def _error(self, code: int, status: str, message: str) -> None:
        self.send_json(code, {"error": {"code": code, "message": message, "status": status}})


class _Server(LoopbackServer):
    gemini: ScriptedGemini


@dataclass
class ScriptedGemini:
    """Replays `script` as Gemini would answer, one turn per request. Use as a context manager.

    `requests` holds each request body (with its ``path``); `refused` the pairing problems it
    answered 400 to. With ``ids=True`` each call carries an ``id`` (``call_1``, ...).
    """

    script: Sequence[Turn]
    ids: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._turns = list(self.script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = _Server(0, _Handler)
        self._server.gemini = self

    @property
    def base_url(self) -> str:
        """What to give google-genai as ``HttpOptions(base_url=...)``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def _take(self, path: str, body: dict[str, Any], problem: str | None) -> Turn | None:
        with self._lock:
            self.requests.append({"path": path, **body})
            if problem is not None:
                self.refused.append(problem)
                return None
            turn = self._turns.pop(0) if self._turns else None
        if turn is not None and callable(turn.tool_calls):  # a script acting on what it learned
            turn = replace(turn, tool_calls=tuple(turn.tool_calls(body)))
        return turn

    def _reply(self, turn: Turn) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
        assert not callable(turn.tool_calls), "resolved when the turn was taken"
        for name, arguments in turn.tool_calls:
            call: dict[str, Any] = {"name": name, "args": arguments}
            if self.ids:
                call = {"id": f"call_{next(self._ids)}", **call}
            parts.append({"functionCall": call})
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": turn.finish_reason or "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 10,
                "totalTokenCount": 20,
            },
            "modelVersion": "scripted",
        }

    def __enter__(self) -> ScriptedGemini:
        self._server.start("scripted-gemini")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()
