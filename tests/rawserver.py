"""A raw, hostile HTTP server on 127.0.0.1 for transport tests: each connection's request is
read, then a script writes whatever bytes it likes (dribbled, compressed, never finished)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from typing import Any

from canned import listing

Script = Callable[[socket.socket, "RawServer"], None]
LISTING_LINE = b"GET /_resolve/index/* HTTP/1.1"


class RawServer:
    """Serves every request with `script(conn, server)`; `stopping` tells scripts to give up.

    The index listing a dispatcher reads to resolve names (``GET /_resolve/index/*``) is
    answered as XERJ answers it, naming the indices of `canned.INDICES`, and logged in
    `listings`, not `requests`; `listing=None` hands it to the script like any request."""

    def __init__(self, script: Script, listing: dict[str, Any] | None = listing()) -> None:  # noqa: B008
        self.script = script
        self.listing = listing
        self.listings: list[bytes] = []
        self.requests: list[bytes] = []
        self.stopping = threading.Event()
        self.disconnects = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> RawServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self._accept.join(5)
        for thread in self._threads:
            thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                declared = re.search(rb"^content-length:\s*(\d+)", head, re.I | re.M)
                while declared and len(rest) < int(declared.group(1)):
                    rest += conn.recv(65536)
                if self.listing is not None and head.split(b"\r\n", 1)[0] == LISTING_LINE:
                    self.listings.append(head)
                    body = json.dumps(self.listing).encode()
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
                    )
                    return
                self.requests.append(head)
                self.script(conn, self)
            except OSError:
                self.disconnects += 1  # the client went away mid-script


def dribble(at_once: bytes, dribbled: bytes, every: float, limit: float) -> Script:
    """Send `at_once`, then `dribbled` one byte every `every` seconds; after `limit` seconds the
    rest goes at once (so that a client with no deadline ends with a result instead of hanging
    the test)."""

    def script(conn: socket.socket, server: RawServer) -> None:
        conn.sendall(at_once)
        for i in range(len(dribbled)):
            if i * every >= limit or server.stopping.wait(every):
                conn.sendall(dribbled[i:])
                return
            conn.sendall(dribbled[i : i + 1])

    return script


def hang(limit: float) -> Script:
    """Read the request, answer nothing for `limit` seconds, then close."""

    def script(conn: socket.socket, server: RawServer) -> None:
        server.stopping.wait(limit)

    return script


def answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> Script:
    """Send one complete response."""

    def script(conn: socket.socket, server: RawServer) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}",
                 "Content-Type: application/json", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return script
