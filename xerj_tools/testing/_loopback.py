"""The HTTP server under the stand-ins: `ThreadingHTTPServer` on 127.0.0.1, cheap to start and stop,
and the base of their request handlers.

The standard server costs each stand-in ~35 ms of wall time: binding looks up
``socket.getfqdn(host)`` (a name nothing here reads) and ``shutdown()`` waits for the loop's next
poll. A test suite starts one per test, so this one skips the lookup and wakes its loop at once.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any

__all__ = ["LoopbackServer", "QuietHandler"]


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, no log lines, and JSON in and out."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the headers and the body go out in separate writes, and with Nagle's
    # algorithm the second waits for the client's delayed ACK (~40 ms on every response).
    disable_nagle_algorithm = True
    content_type = "application/json"  # of `send_json`'s answers

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer(ThreadingHTTPServer):
    """Serves in a daemon thread from `start()` until `stop()`; one daemon thread per connection."""

    daemon_threads = True
    allow_reuse_address = True
    # socketserver's listen backlog is 5: a turn of more concurrent calls overflowed the accept
    # queue, and each dropped connection waited out TCP's 1 s SYN retransmission.
    request_queue_size = 128

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        # Made first: a bind that fails (a port in use) closes the server inside __init__.
        self._waker, self._wakee = socket.socketpair()
        super().__init__(("127.0.0.1", port), handler)
        self._stop = False
        self._thread: threading.Thread | None = None

    def server_bind(self) -> None:
        TCPServer.server_bind(self)  # not HTTPServer's, which adds the getfqdn lookup
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def start(self, name: str) -> None:
        if self._thread is None and not self._stop:
            self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop accepting, close the listening socket. Idempotent."""
        if not self._stop:
            self._stop = True
            with contextlib.suppress(OSError):
                self._waker.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.server_close()

    def server_close(self) -> None:
        super().server_close()
        self._waker.close()
        self._wakee.close()

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-answer (reset, broken pipe) is a client leaving, not an
        error: nothing is printed. Anything else is printed as `socketserver` prints it."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def _serve(self) -> None:
        # `serve_forever` without its polling: `stop` wakes the selector through the socket pair.
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wakee, selectors.EVENT_READ)
            while not self._stop:
                ready = selector.select()
                if not self._stop and any(key.fileobj is self for key, _ in ready):
                    self.handle_request()  # ready: accepts without waiting
