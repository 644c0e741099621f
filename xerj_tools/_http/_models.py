"""The HTTP value types: the `HttpRequest` a tool builds, and what one attempt at it produced,
a `Reply` or a `Failure` (together an `Outcome`). Pure values; nothing here does I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from ._body import decode_json

__all__ = ["Failure", "FailureKind", "HttpRequest", "Outcome", "Reply", "RequestKind"]

# What a plain handler's reply is read as (``handlers={name: fn}``, see `xerj_tools.tools`), and
# "listing" for the dispatcher's own index listing. A `Tool` reads its replies itself.
RequestKind = Literal["search", "memory_store", "memory_recall", "listing", "other"]


@dataclass(frozen=True)
class HttpRequest:
    """One request to XERJ: method, percent-encoded path and JSON body.

    `idempotent` says whether sending it twice is harmless; retries after the request may have
    reached the server (timeouts, dropped connections) happen only when it is.
    `notes` are sentences the model should read with the result (an argument that was dropped).
    `kind` matters only for a plain handler's request: its reply is read as that kind's tool
    reads it (``"search"``, ``"memory_store"``, ``"memory_recall"``; ``"other"``: the JSON).
    `vectors` are never sent: the fields known to hold embeddings (the field a kNN search ran
    on; the dense_vector fields of the index's mapping, when the dispatcher has it cached),
    which the model does not read unless its `source` names them (`_source_view`). `reading`
    is never sent either: what the tool's reading needs of the arguments (a describe's `prefix`).
    `max_response_bytes`, when set, lowers the transport's cap on the response for this request
    (a call's own policy may be stricter than the dispatcher's).
    """

    method: str
    path: str
    body: Mapping[str, Any] | None = None
    kind: RequestKind = "other"
    idempotent: bool = True
    notes: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=dict)
    # The path with the model's names as ``{placeholders}`` (the tool's `path`): the span's
    # ``url.template``. Set by the dispatcher from the tool that built the request.
    template: str | None = None
    vectors: tuple[str, ...] = ()
    reading: Mapping[str, Any] = field(default_factory=dict)
    max_response_bytes: int | None = None

    @property
    def reranked(self) -> bool:
        """True when the body asks XERJ for its second-stage reranker."""
        return self.body is not None and self.body.get("rerank") is not None

    def without_rerank(self) -> HttpRequest:
        body = {k: v for k, v in (self.body or {}).items() if k != "rerank"}
        return replace(self, body=body)


FailureKind = Literal[
    "unreachable", "timeout", "connection_lost", "too_large", "protocol", "cancelled", "deadline",
    "tls",
]  # fmt: skip


@dataclass(frozen=True)
class Reply:
    """An HTTP response from XERJ. `headers` has lower-case names."""

    status: int
    headers: Mapping[str, str]
    body: bytes = field(repr=False)
    node: str = ""

    @cached_property
    def _decoded(self) -> tuple[Any, str | None]:
        return decode_json(self.body)

    @property
    def data(self) -> Any:
        """The decoded JSON body (NaN and infinities made null), or None when it is not JSON."""
        return self._decoded[0]

    @property
    def unreadable(self) -> str | None:
        """Why a body that may well be JSON could not be decoded (nested too deeply), or None."""
        return self._decoded[1]

    @property
    def error_type(self) -> str | None:
        error = self.data.get("error") if isinstance(self.data, dict) else None
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
        return None

    @property
    def error_reason(self) -> str | None:
        error = self.data.get("error") if isinstance(self.data, dict) else None
        if isinstance(error, dict):
            reason = error.get("reason")
            root = error.get("root_cause")
            # XERJ's shard envelope says "all shards failed" and keeps the cause in root_cause.
            if reason == "all shards failed" and isinstance(root, list) and root:
                first = root[0]
                if isinstance(first, dict) and isinstance(first.get("reason"), str):
                    return f"{reason}: {first['reason']}"
            if isinstance(reason, str) and reason.strip():
                return reason
            # XERJ's too_many_buckets answer leaves `reason` empty and `root_cause` [] and
            # keeps the cause in `caused_by` (es_compat.rs:10527-10580 at e6e8e6a).
            for cause in _causes(error):
                said = cause.get("reason")
                if isinstance(said, str) and said.strip():
                    kind = cause.get("type")
                    return f"{kind}: {said}" if isinstance(kind, str) and kind else said
            return reason if isinstance(reason, str) else None
        if isinstance(error, str):
            return error
        return None

    @property
    def cause_type(self) -> str | None:
        """The type of the error's cause (``caused_by``, else the first ``root_cause``), or None."""
        error = self.data.get("error") if isinstance(self.data, dict) else None
        if isinstance(error, dict):
            for cause in _causes(error):
                if isinstance(cause.get("type"), str):
                    return str(cause["type"])
        return None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def _causes(error: dict[str, Any]) -> list[dict[str, Any]]:
    """An error's `caused_by`, then its first `root_cause`, where they are objects."""
    causes = [error.get("caused_by")]
    root = error.get("root_cause")
    if isinstance(root, list) and root:
        causes.append(root[0])
    return [c for c in causes if isinstance(c, dict)]


@dataclass(frozen=True)
class Failure:
    """No usable HTTP response: the node could not be reached, timed out or cut the reply."""

    kind: FailureKind
    detail: str
    node: str = ""
    sent: bool = True  # False when the request certainly never reached the server
    deadline: float | None = None  # kind "deadline": the call's deadline, in seconds


Outcome = Reply | Failure
