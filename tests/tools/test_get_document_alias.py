"""`xerj_get_document` on an alias over several indices, and a numeric id.

The server here answers as XERJ does, each rule read in its source at e6e8e6a: a GET on an alias
reads the alias's *first* index only (`Engine::get_index`, engine.rs:956-967), answering with
`_index` as requested (es_compat.rs:1972-2008); ``GET /_resolve/index/{name}`` lists a concrete
index under `indices` and an alias under `aliases` with its indices in the engine's order
(es_compat.rs:15816-15863). Served here, over a real socket. The dispatcher resolves the alias
from the listing first and sends the GET to its first index, the one XERJ would read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import pytest

from xerj_tools import Policy

from conftest import Runner

INDICES: dict[str, dict[str, Any]] = {
    "logs-1": {"a": {"msg": "in the first"}},
    ".secret": {"s": {"msg": "a dot-index"}},
    "logs-2": {"b": {"msg": "in the second"}},
    "docs": {"42": {"msg": "numeric id"}},
}
ALIASES = {"logs": ["logs-1", "logs-2"], "mixed": ["logs-1", ".secret", "logs-2"]}


class FakeXerj(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        parts = [unquote(p) for p in self.path.strip("/").split("/")]
        if parts[:2] == ["_resolve", "index"] and len(parts) == 3:
            name = parts[2]

            def hit(n: str) -> bool:  # es_compat.rs:15823-15850: `*` globs, else exact
                return name == "*" or n == name

            self.send(
                200,
                {
                    "indices": [{"name": n, "attributes": ["open"]} for n in INDICES if hit(n)],
                    "aliases": [{"name": a, "indices": b} for a, b in ALIASES.items() if hit(a)],
                    "data_streams": [],
                },
            )
        elif len(parts) == 3 and parts[1] == "_doc":
            name, doc_id = parts[0], parts[2]
            real = ALIASES[name][0] if name in ALIASES else name  # engine.rs:956-967: the first
            if real not in INDICES:
                reason = f"no such index [{name}]"
                self.send(
                    404,
                    {
                        "error": {"type": "index_not_found_exception", "reason": reason},
                        "status": 404,
                    },
                )
            elif doc_id in INDICES[real]:
                self.send(
                    200,
                    {
                        "_index": name,
                        "_id": doc_id,
                        "_version": 1,
                        "_seq_no": 0,
                        "_primary_term": 1,
                        "found": True,
                        "_source": INDICES[real][doc_id],
                    },
                )
            else:
                self.send(404, {"_index": name, "_id": doc_id, "found": False})
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture
def fake() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeXerj)
    server.paths = []  # type: ignore[attr-defined]
    # `shutdown()` waits out one poll of `serve_forever` (0.5 s by default) at every teardown.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def get(
    make_runner: Any, server: ThreadingHTTPServer, arguments: Any, **options: Any
) -> dict[str, Any]:
    runner: Runner = make_runner(url=url(server), **options)
    return runner.payload("xerj_get_document", arguments)


def test_a_document_in_a_later_index_of_an_alias_is_found(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, {"index": "logs", "id": "b"})
    assert payload["found"] is True and payload["_index"] == "logs-2"
    assert payload["_source"] == {"msg": "in the second"}
    assert "behind alias 'logs'" in payload["notes"][0]
    assert fake.paths == [
        "/_resolve/index/*", "/logs-1/_doc/b", "/_resolve/index/logs", "/logs-2/_doc/b"
    ]


def test_a_document_in_the_first_index_takes_one_request(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, {"index": "logs", "id": "a"})
    assert payload["found"] is True and payload["_source"] == {"msg": "in the first"}
    assert payload["_index"] == "logs-1"  # the concrete index, not XERJ's label (the alias)
    assert fake.paths == ["/_resolve/index/*", "/logs-1/_doc/a"]


def test_a_document_in_no_index_of_the_alias_says_so(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, {"index": "logs", "id": "zz"})
    assert payload["found"] is False
    assert payload["notes"] == [
        "no document with id 'zz' in any index behind alias 'logs' (2 of 2 asked)"
    ]
    assert fake.paths == [
        "/_resolve/index/*", "/logs-1/_doc/zz", "/_resolve/index/logs", "/logs-2/_doc/zz"
    ]


def test_a_plain_index_miss_is_still_a_plain_miss(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, {"index": "logs-1", "id": "zz"})
    assert payload["found"] is False and payload["notes"] == [
        "no document with id 'zz' in index 'logs-1'"
    ]
    assert fake.paths == ["/_resolve/index/*", "/logs-1/_doc/zz", "/_resolve/index/logs-1"]


def test_an_alias_with_an_index_the_policy_denies_is_refused_whole(
    make_runner: Any, fake: Any
) -> None:
    payload = get(make_runner, fake, {"index": "mixed", "id": "s"})  # the default policy denies .*
    assert payload["error"]["code"] == "policy_denied" and ".secret" not in json.dumps(payload)
    assert fake.paths == ["/_resolve/index/*"]


def test_an_allowed_later_index_answers(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, {"index": "mixed", "id": "s"}, policy=Policy(deny_indices=()))
    assert payload["found"] is True and payload["_index"] == ".secret"


def test_an_integer_id_is_its_decimal_string(make_runner: Any, fake: Any) -> None:
    payload = get(make_runner, fake, '{"index": "docs", "id": 42}')
    assert payload["found"] is True and payload["_id"] == "42"
    assert payload["repairs"] == ['$.id: 42 → "42"']
    assert fake.paths == ["/_resolve/index/*", "/docs/_doc/42"]


@pytest.mark.parametrize("value", ["true", "4.2", "[42]"])
def test_other_non_strings_stay_errors(make_runner: Any, fake: Any, value: str) -> None:
    payload = get(make_runner, fake, '{"index": "docs", "id": ' + value + "}")
    assert payload["error"]["code"] == "invalid_arguments" and fake.paths == []
