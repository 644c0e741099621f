"""The stand-ins' HTTP server: a client that hangs up is not an error, across a real socket."""

from __future__ import annotations

import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from xerj_tools.testing._loopback import LoopbackServer


class _Probe(LoopbackServer):
    """Says when `handle_error` has run (the connection's thread calls it)."""

    handled = threading.Event()

    def handle_error(self, request: object, client_address: object) -> None:
        try:
            super().handle_error(request, client_address)
        finally:
            type(self).handled.set()


def _serve(failure: type[BaseException] | None) -> tuple[_Probe, threading.Event]:
    hung_up = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if failure is not None:
                raise failure("the handler broke")
            hung_up.wait(5)  # the client has reset the connection
            self.send_response(200)
            self.end_headers()
            for _ in range(64):  # until the reset shows: a broken pipe or a reset
                self.wfile.write(b"x" * 65536)

        def log_message(self, format: str, *args: object) -> None:
            pass

    _Probe.handled = threading.Event()
    server = _Probe(0, Handler)
    server.start("probe")
    return server, hung_up


def _get_and_reset(port: int) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    return client


def test_a_client_that_hangs_up_mid_answer_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, hung_up = _serve(None)
    try:
        client = _get_and_reset(server.server_port)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # with a zero linger: a reset
        hung_up.set()
        assert _Probe.handled.wait(10)
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "ConnectionResetError" not in err and "BrokenPipeError" not in err


def test_any_other_error_of_a_handler_is_still_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = _serve(ValueError)
    try:
        client = _get_and_reset(server.server_port)
        assert _Probe.handled.wait(10)
        client.close()
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert "Traceback" in err and "ValueError: the handler broke" in err
