"""The transport: one attempt of an HTTP request to XERJ over httpx, sync or async.

httpx exceptions never leave this module: each attempt ends as a `Reply` or a `Failure`.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ._exceptions import ConfigurationError
from ._handlers import HttpRequest
from ._outcome import Failure, Outcome, Reply

__all__ = ["DEFAULT_URL", "Endpoint", "TransportSettings"]

DEFAULT_URL = "http://localhost:9200"
USER_AGENT = "xerj-tools/0.1"


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
    """Where XERJ is and how to authenticate. The credential is never shown in a repr."""

    base_url: str
    authorization: _Secret | None = field(default=None, repr=False)

    @classmethod
    def create(
        cls, url: str | None = None, *, api_key: str | None = None, authorization: str | None = None
    ) -> Endpoint:
        """`url` defaults to ``$XERJ_URL``, then ``http://localhost:9200``; `api_key` to
        ``$XERJ_API_KEY`` (sent as ``Authorization: ApiKey <key>``). `authorization` is a ready
        header value such as ``"Bearer <key>"`` and wins over `api_key`."""
        url = url or os.environ.get("XERJ_URL") or DEFAULT_URL
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                "the XERJ URL must look like http://host:9200 or https://host:9200"
            )
        if parts.username or parts.password:
            # XERJ accepts no Basic auth (contract §1.2), and a URL travels into logs.
            raise ConfigurationError("put credentials in api_key=, not in the XERJ URL")
        if authorization is None:
            key = api_key if api_key is not None else os.environ.get("XERJ_API_KEY")
            if key:
                authorization = f"ApiKey {key.strip()}"
        secret = _Secret(authorization) if authorization else None
        return cls(url.rstrip("/"), secret)

    def headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        if self.authorization is not None:
            headers["Authorization"] = self.authorization.reveal()
        return headers

    def url(self, path: str) -> str:
        return self.base_url + path


@dataclass(frozen=True)
class TransportSettings:
    """Timeouts, TLS and pool size for the httpx client xerj-tools owns."""

    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    verify: bool | str | ssl.SSLContext = True
    pool_size: int = 10
    max_response_bytes: int = 32 * 1024 * 1024

    def httpx_options(self) -> dict[str, Any]:
        verify: bool | ssl.SSLContext
        if isinstance(self.verify, str):
            verify = ssl.create_default_context(cafile=self.verify)  # a CA bundle path
        else:
            verify = self.verify
        return {
            "timeout": httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
            "verify": verify,
            "limits": httpx.Limits(
                max_connections=self.pool_size, max_keepalive_connections=self.pool_size
            ),
        }


def encode_body(body: Mapping[str, Any] | None) -> bytes | None:
    if body is None:
        return None
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _failure(exc: httpx.HTTPError, node: str) -> Failure:
    """The one place where httpx exceptions become values."""
    name = type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return Failure("unreachable", "connect timed out", node, sent=False)
    if isinstance(exc, httpx.ConnectError):
        return Failure("unreachable", f"connection failed ({name})", node, sent=False)
    if isinstance(exc, httpx.PoolTimeout):
        return Failure("timeout", "no free connection in the pool in time", node, sent=False)
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout", f"no answer in time ({name})", node)
    if isinstance(exc, httpx.DecodingError):
        return Failure("protocol", f"the response could not be decoded ({name})", node)
    if isinstance(exc, httpx.TransportError):
        return Failure("connection_lost", f"the connection broke ({name})", node)
    return Failure("protocol", f"HTTP error ({name})", node)


def _too_large(limit: int, node: str) -> Failure:
    return Failure("too_large", f"the response is larger than {limit} bytes", node)


class SyncTransport:
    """Sends one attempt with an `httpx.Client` (the caller's, or one owned and pooled)."""

    def __init__(
        self, endpoint: Endpoint, settings: TransportSettings, client: httpx.Client | None = None
    ) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self._owned = client is None
        self._client = client if client is not None else httpx.Client(**settings.httpx_options())

    def send(self, request: HttpRequest) -> Outcome:
        node, limit = self.endpoint.base_url, self.settings.max_response_bytes
        try:
            with self._client.stream(
                request.method,
                self.endpoint.url(request.path),
                content=encode_body(request.body),
                headers=self.endpoint.headers(),
                params=dict(request.params) or None,
            ) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > limit:
                        return _too_large(limit, node)
                    chunks.append(chunk)
                headers = {k.lower(): v for k, v in response.headers.items()}
                return Reply(response.status_code, headers, b"".join(chunks), node)
        except httpx.HTTPError as exc:
            return _failure(exc, node)

    def close(self) -> None:
        if self._owned:
            self._client.close()


class AsyncTransport:
    """Sends one attempt with an `httpx.AsyncClient` (the caller's, or one owned and pooled)."""

    def __init__(
        self,
        endpoint: Endpoint,
        settings: TransportSettings,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self._owned = client is None
        self._client = (
            client if client is not None else httpx.AsyncClient(**settings.httpx_options())
        )

    async def send(self, request: HttpRequest) -> Outcome:
        node, limit = self.endpoint.base_url, self.settings.max_response_bytes
        try:
            async with self._client.stream(
                request.method,
                self.endpoint.url(request.path),
                content=encode_body(request.body),
                headers=self.endpoint.headers(),
                params=dict(request.params) or None,
            ) as response:
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        return _too_large(limit, node)
                    chunks.append(chunk)
                headers = {k.lower(): v for k, v in response.headers.items()}
                return Reply(response.status_code, headers, b"".join(chunks), node)
        except httpx.HTTPError as exc:
            return _failure(exc, node)

    async def aclose(self) -> None:
        if self._owned:
            await self._client.aclose()
