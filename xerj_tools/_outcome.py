"""What one attempt at a XERJ request produced: a reply, or a transport failure. Pure values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from ._body import decode_json

__all__ = ["Failure", "FailureKind", "Outcome", "Reply"]

FailureKind = Literal[
    "unreachable", "timeout", "connection_lost", "too_large", "protocol", "cancelled", "deadline"
]


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
            return reason if isinstance(reason, str) else None
        if isinstance(error, str):
            return error
        return None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class Failure:
    """No usable HTTP response: the node could not be reached, timed out or cut the reply."""

    kind: FailureKind
    detail: str
    node: str = ""
    sent: bool = True  # False when the request certainly never reached the server
    deadline: float | None = None  # kind "deadline": the call's deadline, in seconds


Outcome = Reply | Failure
