"""The stand-in's HTTP side: a request read off the socket (its JSON body parsed with the depth
bound of `_wire`), handed to the node, and its answer written with the headers XERJ sends, the
node's queued faults (delays, drops, statuses, truncation) applied on the way."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from ._loopback import LoopbackServer, QuietHandler
from ._requests import Fault, RecordedRequest
from ._wire import too_deep

__all__ = ["RequestHandler", "Node", "StandInServer"]


class Node(Protocol):
    """What the handler asks of the stand-in (`_server.XerjStandIn`)."""

    connections: int
    _stopping: threading.Event

    def _enter(self) -> None: ...
    def _leave(self) -> None: ...
    def _take_fault(self, record: RecordedRequest) -> Fault | None: ...
    def _record(self, record: RecordedRequest) -> None: ...
    def _answer(self, record: RecordedRequest, raw: bytes) -> tuple[int, Any, dict[str, str]]: ...


class RequestHandler(QuietHandler):
    server: StandInServer

    def _handle(self) -> None:
        stand_in = self.server.stand_in
        stand_in._enter()
        try:
            self._serve(stand_in)
        finally:
            stand_in._leave()

    do_GET = do_POST = do_PUT = do_DELETE = _handle  # the node answers every method (`_routes`)

    def _serve(self, stand_in: Node) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        try:
            body = _MALFORMED if too_deep(raw) is not None else json.loads(raw) if raw else None
        except ValueError:
            body = _MALFORMED
        record = RecordedRequest(
            self.command,
            parts.path,
            dict(parse_qsl(parts.query)),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        fault = stand_in._take_fault(record)
        stand_in._record(record)
        if fault is not None and fault.delay and stand_in._stopping.wait(fault.delay):
            return
        if fault is not None and fault.drop == "before":
            self.close_connection = True
            return
        status, payload, headers = stand_in._answer(record, raw)
        if fault is not None and fault.drop == "after":
            self.close_connection = True
            return
        content_type = headers.pop("Content-Type", "application/json")
        if fault is not None and fault.status is not None:
            status, headers, content_type = fault.status, dict(fault.headers), fault.content_type
            payload = fault.body if fault.body is not None else b""
        data = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Elastic-Product", "Elasticsearch")  # router.rs:721-733
        self.send_header("Warning", '299 Elasticsearch-8.13.0 ""')
        self.send_header("X-Request-Id", str(uuid.uuid4()))  # router.rs:812-820
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if fault is not None and fault.truncate is not None:
            self.wfile.write(data[: fault.truncate])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)


_MALFORMED = object()


class StandInServer(LoopbackServer):
    stand_in: Node

    def process_request(self, request: Any, client_address: Any) -> None:
        self.stand_in.connections += 1  # one accepted TCP connection
        super().process_request(request, client_address)
