"""What the stand-in records of a request, and the faults a test queues for the next ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

__all__ = ["Fault", "RecordedRequest"]


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the stand-in received it. `path` is the raw (still percent-encoded) path."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str] = field(repr=False)
    body: Any

    @property
    def segments(self) -> list[str]:
        """The decoded path segments, split on the raw '/' only."""
        return [unquote(s) for s in self.path.strip("/").split("/")]


LISTING_PATH = "/_resolve/index/*"


@dataclass(frozen=True)
class Fault:
    """What to do instead of (or around) a normal answer, for one request.

    - `status` (+ `body`, `headers`, `content_type`): answer with this instead.
    - `delay`: wait this many seconds before sending anything (slow headers).
    - `drop="before"`: close the connection without an answer and without handling the request;
      `drop="after"`: handle the request (a memory is stored), then close without an answer.
    - `truncate`: send the headers and only this many bytes of the body, then close.
    - `match`: apply only to requests whose path contains this text. Without it, a fault
      applies to the next request but the index listing the dispatcher reads to resolve index
      names (``GET /_resolve/index/*``, `LISTING_PATH`); fault that one with
      ``match="_resolve"``.
    """

    status: int | None = None
    body: bytes | str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    delay: float = 0.0
    drop: Literal["before", "after"] | None = None
    truncate: int | None = None
    match: str | None = None
