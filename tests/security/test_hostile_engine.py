"""What a hostile or misconfigured engine side sends back, over real
sockets on 127.0.0.1: the credential echoed in an error never reaches the model or the log, a
refused TLS certificate is named and not retried, a redirect is said to be a proxy's."""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import chat_call
from rawserver import RawServer, answer

KEY = "k3y-SECRET-1234"
BEARER = 'tok/SECRET"5678'  # a `/` and a `"`: JSON may escape both
# a pattern XERJ globs itself: the dispatcher reads no index listing before it (docs/policy.md)
SEARCH = {"index": "doc*", "query": {"match_all": {}}}
TLS = Path(__file__).parents[1] / "fixtures" / "tls"  # self-signed for IP 127.0.0.1, valid to 2126


def echo(status: int, where: str) -> Any:
    """A script that quotes the request it read back: in a JSON error reason, in an HTML page,
    or in a header of an otherwise good answer."""

    def script(conn: socket.socket, server: RawServer) -> None:
        request = server.requests[-1].decode("latin-1")
        headers: dict[str, str] = {}
        if where == "json":
            body = json.dumps(
                {
                    "error": {
                        "type": "illegal_argument_exception",
                        "reason": "bad header " + request,
                    },
                    "status": status,
                }
            ).encode()
        elif where == "html":
            body = ("<html>upstream said: " + request + "</html>").encode()
            headers["Content-Type"] = "text/html"
        else:
            body = json.dumps(
                {"hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}
            ).encode()
            headers["X-Echo"] = request.split("Authorization: ", 1)[1].split("\r\n", 1)[0]
        answer(status, body, headers)(conn, server)

    return script


@pytest.mark.parametrize(
    ("status", "where"), [(400, "json"), (502, "html"), (200, "header"), (404, "json")]
)
@pytest.mark.parametrize("credential", [{"api_key": KEY}, {"authorization": "Bearer " + BEARER}])
def test_an_echoed_credential_never_reaches_the_model_or_the_log(
    make_runner: Any,
    caplog: pytest.LogCaptureFixture,
    status: int,
    where: str,
    credential: dict[str, str],
) -> None:
    secret = credential.get("api_key") or BEARER
    with (
        caplog.at_level(logging.DEBUG, logger="xerj_tools"),
        RawServer(echo(status, where)) as server,
    ):
        runner = make_runner(url=server.url, **credential)
        result = runner.run(chat_call("xerj_search", SEARCH))
        assert secret.encode() in server.requests[0]  # it was sent, and echoed
    for text in (result.content, json.dumps(result.payload), caplog.text):
        assert "SECRET" not in text
    if where == "json":  # (the HTML page is quoted in its first 200 bytes only)
        assert "<redacted>" in result.content


def test_a_short_key_is_redacted_with_its_header() -> None:
    from xerj_tools._http._models import Reply
    from xerj_tools._http._redact import Scrubber

    scrub = Scrubber("ApiKey test")
    body = b'{"reason": "Authorization: ApiKey test; a test document"}'
    cleaned = scrub(Reply(400, {}, body))
    assert isinstance(cleaned, Reply)
    assert cleaned.body == b'{"reason": "Authorization: <redacted>; a test document"}'
    assert repr(scrub) == "<Scrubber>" and "test" not in repr(scrub)


class TlsServer:
    """Serves one JSON answer over TLS with the fixture's self-signed certificate."""

    def __init__(self) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.handshakes = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.handshakes += 1
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    @staticmethod
    def length(request: bytes) -> int:
        head, _, _ = request.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                return len(head) + 4 + int(value)
        return len(head) + 4

    def answer(self, conn: socket.socket) -> None:
        body = json.dumps({"hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}).encode()
        try:
            conn.settimeout(20)
            with self.context.wrap_socket(conn, server_side=True) as tls:
                request = b""
                while b"\r\n\r\n" not in request or len(request) < self.length(request):
                    chunk = tls.recv(65536)  # the whole request: closing on unread bytes resets
                    if not chunk:
                        return
                    request += chunk
                tls.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
        except (OSError, ssl.SSLError) as exc:
            self.errors.append(repr(exc))  # the client refused the certificate, say
            conn.close()

    def __enter__(self) -> TlsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def tls_server() -> Iterator[TlsServer]:
    with TlsServer() as server:
        yield server


def test_a_refused_certificate_is_named_and_not_retried(
    make_runner: Any, tls_server: TlsServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="xerj_tools"):
        result = make_runner(url=tls_server.url).run(chat_call("xerj_search", SEARCH))
    error = json.loads(result.content)["error"]
    assert error["code"] == "tls_error" and error["retryable"] is False
    assert "self-signed certificate" in error["reason"] and "certificate" in error["hint"]
    assert result.attempts == 1 and tls_server.handshakes == 1
    assert "TLS certificate not accepted (self-signed certificate" in caplog.text


def test_the_same_node_answers_when_its_certificate_is_trusted(
    make_runner: Any, tls_server: TlsServer
) -> None:
    result = make_runner(url=tls_server.url, verify=str(TLS / "cert.pem")).run(
        chat_call("xerj_search", SEARCH)
    )
    assert result.ok, tls_server.errors


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_a_proxy_matter_not_the_query(make_runner: Any, status: int) -> None:
    script = answer(status, b"", {"Location": "https://elsewhere.example/_search"})
    with RawServer(script) as server:
        result = make_runner(url=server.url, api_key=KEY).run(chat_call("xerj_search", SEARCH))
        assert len(server.requests) == 1  # not followed
    error = json.loads(result.content)["error"]
    assert (
        error["code"] == "redirected" and error["status"] == status and error["retryable"] is False
    )
    assert "https://elsewhere.example/_search" in error["reason"] and "proxy" in error["reason"]
    assert "change the query" not in error["hint"]
