"""A XERJ stand-in: a real HTTP server on 127.0.0.1, in a thread, with programmable faults."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from ._catalog import CATALOG_INDEX, autoindex_mapping, catalog_documents, catalog_mapping
from ._documents import get_document
from ._engine import Index, new_engine_indices
from ._handler import RequestHandler, StandInServer
from ._listing import cat_indices, listed_indices, resolve_index
from ._mapping import cat_indices_pattern, get_mapping
from ._memory import (
    MEMORY_PREFIX,
    Memory,
    memory_forget,
    memory_index,
    memory_list,
    memory_recall,
    memory_store,
)
from ._requests import LISTING_PATH, Fault, RecordedRequest
from ._routes import route_of
from ._searcher import RerankMode, search_request
from ._selector import closed_index
from ._wire import BodyError, optional_json

__all__ = ["Fault", "RecordedRequest", "XerjStandIn"]


class XerjStandIn:
    """A stand-in for a XERJ node, for tests and the demo. It is not XERJ.

    It serves the XERJ tools' endpoints on 127.0.0.1 with XERJ's request rules, response shapes,
    status codes and error bodies (both rerank generations, the API-key check), over a small
    built-in corpus (indices ``docs`` and ``tickets``) and an in-memory memory store. With
    ``catalog=True`` it also holds the ``autoindex-catalog`` that ``xerj autoindex`` would have
    written for that corpus (`build_catalog`). Every request is logged in `requests`, but the
    index listing ``GET /_resolve/index/*``, which a dispatcher reads to resolve index names
    before most calls: those are in `listings`. `fail_next` queues faults.

        with XerjStandIn(api_key="secret") as xerj:
            dispatcher = Dispatcher(url=xerj.url, api_key="secret")

    `rerank` picks how the node treats a ``rerank`` block: ``"ok"`` (a judge runs), ``"degraded"``
    (200 with ``applied: false``), ``"unconfigured"`` (503), ``"disabled"`` (403),
    ``"provider_error"`` (502) or ``"unsupported"`` (an older node: 400 for the unknown key).

    Each behaviour cites the XERJ source it copies; ``xerj_tools/testing/CONTRACT.md`` is the
    table of them, and ``tests/contract/test_contract.py`` checks them here and on a real node.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        rerank: RerankMode = "ok",
        port: int = 0,
        catalog: bool = False,
    ) -> None:
        self.api_key = api_key
        self.rerank: RerankMode = rerank
        self.indices: dict[str, Index] = new_engine_indices()
        self.memories: dict[str, dict[str, Memory]] = {}
        self.closed: set[str] = set()
        # alias -> its indices in order; a data stream is one (engine.rs:889-894, 1165-1210)
        self.aliases: dict[str, list[str]] = {}
        self._streams: dict[str, int] = {}  # data stream -> its generation
        self.requests: list[RecordedRequest] = []
        self.listings: list[RecordedRequest] = []  # the `GET /_resolve/index/*` reads
        self.connections = 0  # accepted TCP connections (`_handler.StandInServer`)
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = StandInServer(port, RequestHandler)
        self._server.stand_in = self
        if catalog:
            self.build_catalog()

    def build_catalog(self) -> None:
        """Write the index ``autoindex-catalog`` as ``xerj autoindex`` would for the indices held
        now (see `_catalog`): a dataset per index, with its fields' types, cardinality and
        example values and its ready-to-send queries. An index without a mapping gets the one
        autoindex would have given it. Called again, it describes the indices as they are then."""
        with self._lock:
            corpus = {}
            for name, index in self.indices.items():
                if name == CATALOG_INDEX or not index.docs:
                    continue
                companions = {f"{f}_vector" for f in index.semantic_fields}
                corpus[name] = [
                    {k: v for k, v in doc.items() if k not in companions}
                    for doc in index.docs.values()
                ]
            docs, specs = catalog_documents(corpus)
            for name, fields in specs.items():
                if self.indices[name].mappings is None:
                    self.indices[name].mappings = autoindex_mapping(fields)
            self.indices[CATALOG_INDEX] = Index(CATALOG_INDEX, mappings=catalog_mapping())
            for doc_id, source in docs.items():
                self.indices[CATALOG_INDEX].add(doc_id, source)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> XerjStandIn:
        self._server.start("xerj-stand-in")
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.stop()

    def __enter__(self) -> XerjStandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def fail_next(self, *faults: Fault | int) -> None:
        """Queue faults, used one per matching request, in order. An int is a bare status."""
        with self._lock:
            for f in faults:
                self._faults.append(Fault(status=f) if isinstance(f, int) else f)

    def clear(self) -> None:
        """Forget logged requests, queued faults and the connection count."""
        with self._lock:
            self.requests.clear()
            self.listings.clear()
            self._faults.clear()
            self.connections = 0
            self.max_in_flight = 0

    def add_documents(
        self,
        index: str,
        docs: Mapping[str, Mapping[str, Any]],
        semantic_fields: tuple[str, ...] = (),
        mappings: Mapping[str, Any] | None = None,
    ) -> None:
        """Add documents (id -> source) to an index, creating it if needed (with `mappings`, as
        ``GET /{index}/_mapping`` will answer them; without, from its documents' types)."""
        with self._lock:
            created = Index(
                index, semantic_fields=semantic_fields, mappings=dict(mappings or {}) or None
            )
            target = self.indices.setdefault(index, created)
            for doc_id, source in docs.items():
                target.add(doc_id, source)

    def close_index(self, index: str) -> None:
        """Close an index, as `POST /{index}/_close` does on a node: a search naming it, or a
        `GET` of one of its documents, is then a 400 `index_closed_exception`."""
        with self._lock:
            self.closed.add(index)

    def open_index(self, index: str) -> None:
        """Reopen an index `close_index` closed."""
        with self._lock:
            self.closed.discard(index)

    def add_alias(self, alias: str, *indices: str) -> None:
        """Point `alias` at `indices` as well, after those it has (`Engine::add_alias`,
        engine.rs:889-894). A search or a document GET on it reads its first index only and
        labels what it finds with the alias's name; see CONTRACT.md."""
        with self._lock:
            behind = self.aliases.setdefault(alias, [])
            behind += [i for i in indices if i not in behind]

    def remove_alias(self, alias: str, index: str) -> None:
        """`Engine::remove_alias` (engine.rs:897-903); an alias left with no index goes."""
        with self._lock:
            behind = [i for i in self.aliases.get(alias, []) if i != index]
            if behind:
                self.aliases[alias] = behind
            else:
                self.aliases.pop(alias, None)

    def create_data_stream(self, name: str) -> str:
        """A data stream: index ``.ds-<name>-000001`` and the alias `name` over it
        (`create_data_stream`, engine.rs:1165-1184). Returns the backing index's name."""
        with self._lock:
            backing = f".ds-{name}-000001"
            self.indices.setdefault(backing, Index(backing))
            self.aliases[name] = [backing]
            self._streams[name] = 1
            return backing

    def rollover(self, name: str) -> str:
        """The stream's next backing index, appended to its alias: reads through the stream
        still reach the first (`rollover_data_stream`, engine.rs:1186-1210)."""
        with self._lock:
            self._streams[name] += 1
            backing = f".ds-{name}-{self._streams[name]:06d}"
            self.indices.setdefault(backing, Index(backing))
            self.aliases[name].append(backing)
            return backing

    def _take_fault(self, record: RecordedRequest) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if (fault.match is None and record.path != LISTING_PATH) or (
                    fault.match is not None and fault.match in record.path
                ):
                    del self._faults[i]
                    return fault
        return None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            if record.method == "GET" and record.path == LISTING_PATH:
                self.listings.append(record)
            else:
                self.requests.append(record)

    def _authorized(self, record: RecordedRequest) -> bool:
        if not self.api_key:
            return True
        scheme, _, value = record.headers.get("authorization", "").strip().partition(" ")
        return scheme.lower() in ("apikey", "bearer") and value.strip() == self.api_key

    def _answer(self, record: RecordedRequest, raw: bytes) -> tuple[int, Any, dict[str, str]]:
        """Route as XERJ's ES-compat router does (router.rs:190-705); see CONTRACT.md."""
        segments, method = record.segments, record.method
        if record.path in ("/health/live", "/health/ready"):
            # Exempt from auth; plain text (auth.rs:23-33; native.rs:605-620).
            if method != "GET":
                return 405, b"", {"Content-Type": "", "Allow": "GET,HEAD"}
            return 200, record.path.rsplit("/", 1)[1], {"Content-Type": _TEXT}
        if not self._authorized(record):
            # auth.rs:196-222; the middleware wraps every route and the fallback.
            reason = "missing or invalid API key in Authorization header"
            error = {"type": "security_exception", "reason": reason}
            return 401, {"error": {"root_cause": [dict(error)], **error}, "status": 401}, {}
        trailing = record.path != "/" and record.path.endswith("/")
        route = None if trailing else route_of(segments)
        if route is None:
            return 404, b"", {"Content-Type": ""}  # no fallback: axum's empty 404
        name, allowed = route
        if method not in allowed:
            methods = sorted({*allowed, "HEAD"} if "GET" in allowed else set(allowed))
            return 405, b"", {"Content-Type": "", "Allow": ",".join(methods)}
        content_type = record.headers.get("content-type")
        with self._lock:
            try:
                status, payload = self._handle_route(name, segments, record, raw, content_type)
            except BodyError as exc:  # refused by the extractor, before the handler runs
                status, payload = exc.status, exc.body()
        text = name == "cat" or (name == "cat_pattern" and status == 200)
        return status, payload, ({"Content-Type": _TEXT} if text else {})

    def _searchable(self) -> dict[str, Index]:
        """The indices with each memory namespace's backing index beside them."""
        indices = dict(self.indices)
        for ns, store in self.memories.items():
            indices[MEMORY_PREFIX + ns] = memory_index(ns, store)
        return indices

    def _handle_route(
        self,
        name: str,
        segments: list[str],
        record: RecordedRequest,
        raw: bytes,
        content_type: str | None,
    ) -> tuple[int, Any]:
        if name == "search":
            expr = segments[0] if len(segments) == 2 else "*"  # es_compat.rs:5238-5244
            closed = frozenset(self.closed)
            return search_request(
                self._searchable(), expr, raw, content_type, rerank_mode=self.rerank,
                closed=closed, aliases=self.aliases,
            )  # fmt: skip
        if name in ("memory", "recall"):
            body = optional_json(raw, content_type)
            if name == "recall":
                return memory_recall(self.memories, segments[1], body, raw)
            if record.method == "POST":
                return memory_store(self.memories, segments[1], body, raw)
            if record.method == "GET":
                return memory_list(self.memories, segments[1], record.query)
            return memory_forget(self.memories, segments[1], None)
        if name == "forget":
            return memory_forget(self.memories, segments[1], segments[2])
        if name == "doc" and segments[0] in self.closed:
            return closed_index(segments[0])  # checked first (es_compat.rs:1977-1981)
        if name == "doc":
            return get_document(self.indices, self.memories, segments[0], segments[2], self.aliases)
        if name == "cat":  # always text, whatever the query string says: see _listing.py
            return 200, cat_indices(listed_indices(self.indices, self.memories))
        if name == "cat_pattern":
            return cat_indices_pattern(listed_indices(self.indices, self.memories), segments[2])
        if name == "mapping":
            spec = segments[0] if len(segments) == 2 else "_all"
            return get_mapping(self._searchable(), spec, self.aliases)
        if name == "resolve":
            listed = listed_indices(self.indices, self.memories)
            return 200, resolve_index(listed, segments[2], self.aliases)
        return 200, {  # `GET /`: responses.rs EsInfoResponse (fixed ES version)
            "name": "stand-in",
            "cluster_name": "xerj",
            "cluster_uuid": "xerj-cluster-0000-0000-0000-000000000000",
            "version": {"number": "8.13.0"},
            "tagline": "You Know, for Search",
        }


_TEXT = "text/plain; charset=utf-8"
