"""`xerj-tools mcp --http` and clients that send slowly, over real sockets on 127.0.0.1: a
request head or body past its deadline closes the connection, and past the bound on open
connections the one waiting longest for a request head makes room for the newcomer. The
deadlines are shortened for the test; every wait on the server is a blocking read with a bound."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from xerj_tools.testing import XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from mcp_team_support import Running

from xerj_tools.integrations.mcp._connections import ConnectionLimits, descriptor_bound

INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}'
)


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn() as stand_in:
        yield stand_in


def head(port: int, body_length: int | None = None) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
    ]
    if body_length is not None:
        lines.append(f"Content-Length: {body_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def opened(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(data)
    return sock


def answer(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection (a read bounded by 10 s: a
    connection the server keeps open fails the test with a timeout)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    return received


def normal_request(port: int) -> int:
    reply = httpx2.post(
        f"http://127.0.0.1:{port}/mcp",
        content=INIT,
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        timeout=10,
    )
    return reply.status_code


def test_a_request_head_past_its_deadline_is_answered_408_and_closed(xerj: XerjStandIn) -> None:
    limits = ConnectionLimits(head_seconds=1.0, body_seconds=30)
    with Running(url=xerj.url, connections=limits) as server:
        slow = opened(server.port, head(server.port)[:25])  # the head stops mid-way
        assert answer(slow).startswith(b"HTTP/1.1 408 ")
        idle = opened(server.port, b"")  # nothing sent at all: closed without an answer
        assert answer(idle) == b""
        assert normal_request(server.port) == 200


def test_a_body_dribbled_past_its_deadline_closes_the_connection(xerj: XerjStandIn) -> None:
    limits = ConnectionLimits(head_seconds=30, body_seconds=1.0)
    with Running(url=xerj.url, connections=limits) as server:
        slow = opened(server.port, head(server.port, len(INIT)) + INIT[:10])
        assert answer(slow) == b""
        # (Connection: close: the answer ends with the connection, not at the head deadline, 30 s
        # here, which is what closes an idle keep-alive connection)
        closing = head(server.port, len(INIT)).replace(
            b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"
        )
        whole = opened(server.port, closing + INIT)
        assert answer(whole).startswith(b"HTTP/1.1 200 ")


def test_past_the_bound_the_connection_waiting_longest_for_a_head_makes_room(
    xerj: XerjStandIn,
) -> None:
    limits = ConnectionLimits(head_seconds=60, body_seconds=60, max_connections=4)
    with Running(url=xerj.url, connections=limits) as server:
        slow = [opened(server.port, head(server.port)[:20]) for _ in range(4)]
        # Each newcomer evicts the oldest connection still sending its head.
        assert normal_request(server.port) == 200
        assert answer(slow[0]) == b""
        slow.append(opened(server.port, head(server.port)[:20]))  # the bound is reached again
        assert normal_request(server.port) == 200
        assert answer(slow[1]) == b""
        for sock in slow[2:]:
            sock.close()


def test_with_every_connection_running_a_request_a_newcomer_is_answered_503(
    xerj: XerjStandIn,
) -> None:
    limits = ConnectionLimits(head_seconds=60, body_seconds=60, max_connections=2)
    with Running(url=xerj.url, connections=limits) as server:
        busy = []
        for _ in range(2):  # each is past its head, its body awaited: neither can be evicted
            # (Connection: close: the answer ends with the connection, not after keep-alive's 5 s)
            expecting = head(server.port, len(INIT)).replace(
                b"\r\n\r\n", b"\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
            )
            busy.append(opened(server.port, expecting))
            assert busy[-1].recv(100).startswith(b"HTTP/1.1 100 ")
        refused = opened(server.port, head(server.port, len(INIT)) + INIT)
        reply = answer(refused)
        assert reply.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in reply
        for sock in busy:
            sock.sendall(INIT)
            assert answer(sock).startswith(b"HTTP/1.1 200 ")


def one_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length, read whole, the connection left open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head_part, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head_part.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head_part + b"\r\n\r\n" + body


def test_an_idle_keep_alive_connection_lasts_until_the_head_deadline(
    xerj: XerjStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uvicorn's keep-alive timer (5 s, as long as httpx keeps an idle connection) shortened to
    # 0.1 s and the head deadline to 2 s: a connection idle past the former is still open, a
    # request sent on it is answered, and once idle again the head deadline closes it (no 408).
    from uvicorn.protocols.http import h11_impl

    init = h11_impl.H11Protocol.__init__

    def short_keep_alive(self: h11_impl.H11Protocol, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.timeout_keep_alive = 0.1

    monkeypatch.setattr(h11_impl.H11Protocol, "__init__", short_keep_alive)
    limits = ConnectionLimits(head_seconds=2.0, body_seconds=30)
    with Running(url=xerj.url, connections=limits) as server:
        request = f"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
        with opened(server.port, request) as sock:
            assert one_response(sock).startswith(b"HTTP/1.1 404 ")
            sock.settimeout(0.5)  # past uvicorn's 0.1 s, well before the head deadline
            with pytest.raises(TimeoutError):
                sock.recv(1)
            sock.settimeout(10)
            sock.sendall(request)
            assert one_response(sock).startswith(b"HTTP/1.1 404 ")
            assert answer(sock) == b""


def test_the_default_bound_leaves_descriptors_for_the_rest() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        assert descriptor_bound() == 768 and descriptor_bound(100) == 100
        assert ConnectionLimits().max_connections == 768
        assert ConnectionLimits().accept_batch() == 1024 - 768 - 64
        assert ConnectionLimits(max_connections=100).accept_batch() == 1024 - 100 - 64
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_max_connections_comes_from_the_command_line_and_is_checked() -> None:
    import io

    from xerj_tools._cli._main import main
    from xerj_tools.integrations.mcp._serve import configure

    setup = configure(http="127.0.0.1:0", max_connections=5)
    assert setup.sock is not None
    setup.sock.close()
    assert setup.connections.max_connections == 5
    err = io.StringIO()
    assert main(["mcp", "--http", "127.0.0.1:0", "--max-connections", "0"], stderr=err) == 2
    assert "--max-connections must be at least 1" in err.getvalue()
