"""A canned XERJ answer for `httpx2.MockTransport`, beside the index listing a dispatcher reads
to resolve index names (`GET /_resolve/index/*`, es_compat.rs:15816-15863)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpx2

INDICES = (
    "docs", "tickets", "logs", "idx", "products", "kb", "postmortems", "small", "wide", "pages", "notes",
    "tenant-a-docs",
)


def listing(names: Iterable[str] = INDICES) -> dict[str, Any]:
    """XERJ's `_resolve/index/*` answer naming `names` as open indices, with no alias."""
    return {
        "indices": [{"name": n, "attributes": ["open"]} for n in names],
        "aliases": [],
        "data_streams": [],
    }


def canned(
    body: Any, status: int = 200, names: Iterable[str] = INDICES
) -> Callable[[httpx2.Request], httpx2.Response]:
    """A handler answering the listing with `names`, and every other request with `body`."""
    resolved = listing(names)

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/_resolve/index/*":
            return httpx2.Response(200, json=resolved)
        return httpx2.Response(status, json=body)

    return answer
