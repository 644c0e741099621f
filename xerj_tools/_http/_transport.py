"""The transport: one attempt of an HTTP request to XERJ over httpx2, sync or async, and the
settings of the client xerj-tools owns (timeouts, pool size, TLS built once).

HTTP exceptions never leave this module: each attempt ends as a `Reply` or a `Failure`. The
client is the one xerj-tools owns (httpx2), or the caller's: an `httpx2` client, or a plain
`httpx` one (same API; its exceptions and timeouts are its own library's, see `http_library`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from .._exceptions import ConfigurationError
from ._body import TooLarge, Undecodable, read_async, reader
from ._deadline import Deadline, Running, guard, http_library, timeouts
from ._models import Failure, HttpRequest, Outcome, Reply
from ._nodes import NodePool, checked_urls, header_safe
from ._redact import Scrubber
from ._tracing import attempt

__all__ = ["DEFAULT_URL", "Endpoint", "NodePool", "TransportSettings"]

logger = logging.getLogger("xerj_tools")

DEFAULT_URL = "http://localhost:9200"
USER_AGENT = "xerj-tools/0.1"


@dataclass(frozen=True)
class TransportSettings:
    """Timeouts, TLS and pool size for the httpx2 client xerj-tools owns."""

    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    verify: bool | str | ssl.SSLContext = True
    pool_size: int = 10
    max_response_bytes: int = 32 * 1024 * 1024

    def httpx_options(self, *, tls: bool = True) -> dict[str, Any]:
        """The options of the owned client; `tls` False: no node is reached over https."""
        verify: bool | ssl.SSLContext
        if self.verify is True and not tls:
            verify = _no_tls()
        elif isinstance(self.verify, str):
            try:
                verify = ssl.create_default_context(cafile=self.verify)  # a CA bundle path
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(
                    f"cannot use the CA bundle {self.verify!r}: {exc}"
                ) from None
        elif self.verify is True:
            verify = _default_tls(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        else:
            verify = self.verify
        return {
            "timeout": httpx2.Timeout(self.read_timeout, connect=self.connect_timeout),
            "verify": verify,
            "limits": httpx2.Limits(
                max_connections=self.pool_size, max_keepalive_connections=self.pool_size
            ),
        }


@functools.lru_cache(maxsize=4)
def _default_tls(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx2's own context for ``verify=True``, built once per CA location (the arguments are
    the ``SSL_CERT_FILE``/``SSL_CERT_DIR`` httpx2 reads; they key the cache): loading the CA
    bundle costs 50-150 ms of CPU, which each new client paid. A context is safe to share."""
    return httpx2.create_ssl_context()


@functools.lru_cache(maxsize=1)
def _no_tls() -> ssl.SSLContext:
    """The context of a client whose nodes are all http://: it is never used, so the CA bundle
    is not loaded (that is most of a first `Dispatcher()`'s cost). It verifies as strictly as
    the default, with no CA: an https connection through it would fail, never pass unchecked."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _Secret:
    """Holds a credential; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


@dataclass(frozen=True)
class Endpoint:
    """Where XERJ is (one node or several) and how to authenticate. The credential is never
    shown in a repr."""

    base_urls: tuple[str, ...]
    authorization: _Secret | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls,
        url: str | Sequence[str] | None = None,
        *,
        api_key: str | None = None,
        authorization: str | None = None,
    ) -> Endpoint:
        """`url` defaults to ``$XERJ_URL``, then ``http://localhost:9200``; a list (or a comma
        separated string) names several nodes of one cluster. `api_key` defaults to
        ``$XERJ_API_KEY`` (sent as ``Authorization: ApiKey <key>``). `authorization` is a ready
        header value such as ``"Bearer <key>"`` and wins over `api_key`."""
        base_urls = checked_urls(url or os.environ.get("XERJ_URL") or DEFAULT_URL)
        what = "authorization"
        if authorization is None:
            key = api_key if api_key is not None else os.environ.get("XERJ_API_KEY")
            if key:
                authorization, what = f"ApiKey {key.strip()}", "API key"
        if authorization and not header_safe(authorization):
            # The message never repeats the value: it is a credential.
            raise ConfigurationError(
                f"the {what} holds a character an HTTP header cannot carry (non-ASCII, a line "
                "break or a control character); check how it was copied"
            )
        secret = _Secret(authorization) if authorization else None
        return cls(base_urls, secret)

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    def scrubber(self) -> Scrubber:
        """What takes the credential out of every reply (an engine may echo the request)."""
        return Scrubber(self.authorization.reveal() if self.authorization is not None else None)

    @property
    def tls(self) -> bool:
        """Whether any node is reached over https."""
        return any(urlsplit(u).scheme == "https" for u in self.base_urls)

    @property
    def label(self) -> str:
        """The cluster's name for per-cluster memory (the rerank refusal)."""
        return ",".join(self.base_urls)

    def headers(self) -> dict[str, str]:
        """The headers of every request, a new dict each time."""
        headers = {
            "Accept": "application/json",
            # XERJ never compresses; a proxy that would is asked not to (see `BodyReader`)
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        if self.authorization is not None:
            headers["Authorization"] = self.authorization.reveal()
        return headers

    @functools.cached_property
    def shared_headers(self) -> httpx2.Headers:
        """`headers()` built once for the transports (httpx2 copies them into each request);
        an `httpx2.Headers`, whose repr hides the credential."""
        return httpx2.Headers(self.headers())

    def url(self, path: str, node: str | None = None) -> str:
        return (node or self.base_url) + path


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_body(body: Mapping[str, Any] | None) -> bytes | None:
    if body is None:
        return None
    return _ENCODER.encode(body).encode()


def _failure(exc: Exception, node: str, lib: Any = httpx2) -> Failure:
    """The one place where HTTP exceptions (of `lib`, httpx2 or httpx) become values."""
    name = type(exc).__name__
    if isinstance(exc, lib.ConnectTimeout):
        return Failure("unreachable", "connect timed out", node, sent=False)
    if isinstance(exc, lib.ConnectError):
        if (problem := _certificate_problem(exc)) is not None:
            # The node's certificate, or the CA it is checked against: the configuration, which
            # no retry changes. Said in the operator's log too, naming the certificate.
            logger.warning("XERJ node %s: TLS certificate not accepted (%s)", node, problem)
            detail = f"the TLS certificate of the node was not accepted: {problem}"
            return Failure("tls", detail, node, sent=False)
        return Failure("unreachable", f"connection failed ({name})", node, sent=False)
    if isinstance(exc, lib.PoolTimeout):
        return Failure("timeout", "no free connection in the pool in time", node, sent=False)
    if isinstance(exc, lib.TimeoutException):
        return Failure("timeout", f"no answer in time ({name})", node)
    if isinstance(exc, lib.DecodingError):
        return Failure("protocol", f"the response could not be decoded ({name})", node)
    if isinstance(exc, lib.TransportError):
        return Failure("connection_lost", f"the connection broke ({name})", node)
    return Failure("protocol", f"HTTP error ({name})", node)


def _certificate_problem(exc: BaseException) -> str | None:
    """What certificate verification said, when it is what refused the connection (httpx raises
    `ConnectError` from httpcore's, raised from the `ssl` error), else None."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 8:
        if isinstance(cause, ssl.SSLCertVerificationError):
            said = cause.verify_message or cause.reason or "certificate verify failed"
            return f"{said}; check the node's certificate, or give its CA bundle as `verify`"
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def _limit(settings: TransportSettings, request: HttpRequest) -> int:
    """The most of a response read: the settings' cap, or the request's own when lower."""
    own = request.max_response_bytes
    return settings.max_response_bytes if own is None else min(own, settings.max_response_bytes)


def _late(deadline: Deadline, node: str, sent: bool = True) -> Failure:
    return Failure(
        "deadline", f"the call's deadline of {deadline.seconds:g} s passed before XERJ answered",
        node, sent=sent, deadline=deadline.seconds,
    )  # fmt: skip


class _Transport:
    """What both transports keep: the endpoint and its nodes, the settings, the scrubber, the
    client (the caller's, or one owned and pooled: `_owned_kinds`, its settings' timeouts and
    limits, its transport guarded), whether it is theirs to close, and the HTTP library it comes
    from."""

    _owned_kinds: tuple[type[Any], type[Any]]  # the owned client's httpx2 transport and client

    def __init__(
        self,
        endpoint: Endpoint,
        settings: TransportSettings,
        client: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.nodes = NodePool(endpoint.base_urls, clock)
        self.settings = settings
        self.scrub = endpoint.scrubber()
        self._owned = client is None
        self._lib = httpx2 if client is None else http_library(client)
        if client is None:
            options = settings.httpx_options(tls=endpoint.tls)
            transport, make = self._owned_kinds  # no `uds`, no `retries`: as `guard` wraps it
            guarded = guard(transport(verify=options["verify"], limits=options["limits"]))
            client = make(timeout=options["timeout"], transport=guarded)
        self.client = client

    def _failed(self, exc: Exception, limit: int, node: str, deadline: Deadline) -> Failure:
        """How an attempt that raised ends: its body over `limit` or undecodable, its deadline
        passed, or the HTTP exception as a value."""
        if isinstance(exc, TooLarge):
            return Failure("too_large", f"the response is larger than {limit} bytes", node)
        if isinstance(exc, Undecodable):
            return Failure("protocol", f"the response could not be decoded: {exc}", node)
        return _late(deadline, node) if deadline.expired else _failure(exc, node, self._lib)


class SyncTransport(_Transport):
    """Sends one attempt with an `httpx2.Client` (the caller's, or one owned and pooled; a
    caller's plain `httpx.Client` works too)."""

    _owned_kinds = (httpx2.HTTPTransport, httpx2.Client)
    client: httpx2.Client

    def send(self, request: HttpRequest, deadline: Deadline) -> Outcome:
        node = self.nodes.pick()
        if deadline.expired:
            return _late(deadline, node, sent=False)
        with attempt(request, node) as traced:
            outcome = traced.done(self.scrub(self._attempt(request, node, deadline)))
        self.nodes.report(node, outcome)
        return outcome

    def _attempt(self, request: HttpRequest, node: str, deadline: Deadline) -> Outcome:
        limit = _limit(self.settings, request)
        try:
            with (
                Running(deadline),
                self.client.stream(
                    request.method,
                    self.endpoint.url(request.path, node),
                    content=encode_body(request.body),
                    headers=self.endpoint.shared_headers,
                    params=dict(request.params) or None,
                    timeout=timeouts(self.client.timeout, deadline),
                ) as response,
            ):
                body = reader(response, limit)
                for chunk in response.iter_raw() if body.raw else (response.content,):
                    body.feed(chunk)
                    if deadline.expired:
                        return _late(deadline, node)
                return Reply(response.status_code, response.headers, body.decoded(), node)
        except (TooLarge, Undecodable, self._lib.HTTPError) as exc:
            return self._failed(exc, limit, node, deadline)

    def close(self) -> None:
        if self._owned:
            self.client.close()


class AsyncTransport(_Transport):
    """Sends one attempt with an `httpx2.AsyncClient` (the caller's, or one owned and pooled; a
    caller's plain `httpx.AsyncClient` works too, without the cancellation guarantee: see
    docs/configuration.md)."""

    _owned_kinds = (httpx2.AsyncHTTPTransport, httpx2.AsyncClient)
    client: httpx2.AsyncClient

    def __init__(
        self,
        endpoint: Endpoint,
        settings: TransportSettings,
        client: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(endpoint, settings, client, clock)
        if self._lib is not httpx2:
            logger.warning(
                "%s is a plain httpx client: it works, but httpcore 1.x can strand a connection "
                "when a call is cancelled (encode/httpcore#1093, #1115); pass an httpx2 client, or "
                "none, for the cancellation guarantee (docs/configuration.md)",
                type(client).__name__,
            )

    async def send(self, request: HttpRequest, deadline: Deadline) -> Outcome:
        node = self.nodes.pick()
        if deadline.expired:
            return _late(deadline, node, sent=False)
        with attempt(request, node) as traced:
            outcome = traced.done(self.scrub(await self._attempt(request, node, deadline)))
        self.nodes.report(node, outcome)
        return outcome

    async def _attempt(self, request: HttpRequest, node: str, deadline: Deadline) -> Outcome:
        limit = _limit(self.settings, request)
        try:
            with Running(deadline):
                async with self.client.stream(
                    request.method,
                    self.endpoint.url(request.path, node),
                    content=encode_body(request.body),
                    headers=self.endpoint.shared_headers,
                    params=dict(request.params) or None,
                    timeout=timeouts(self.client.timeout, deadline),
                ) as response:
                    body = reader(response, limit)
                    if not body.raw:
                        body.feed(response.content)
                    elif not await read_async(response, body, deadline):
                        return _late(deadline, node)
                    return Reply(response.status_code, response.headers, body.decoded(), node)
        except (TooLarge, Undecodable, self._lib.HTTPError) as exc:
            return self._failed(exc, limit, node, deadline)

    async def aclose(self) -> None:
        if self._owned:
            await self.client.aclose()
