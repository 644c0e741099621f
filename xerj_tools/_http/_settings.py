"""The settings of the httpx2 client xerj-tools owns: timeouts, pool size, TLS (built once)."""

from __future__ import annotations

import functools
import os
import ssl
from dataclasses import dataclass
from typing import Any

import httpx2

from .._exceptions import ConfigurationError

__all__ = ["TransportSettings"]


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
