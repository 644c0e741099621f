"""The credential kept out of what the engine sends back.

An engine, or a proxy in front of it, may quote the request in an error ("bad header
Authorization: ApiKey k3y…"). What the engine sends back reaches the model, the log lines and
the spans, so each reply is scrubbed of the credential before anything reads it: the whole
``Authorization`` value, the credential after its scheme (the key itself, when it is at least
`MIN_BARE` characters: a shorter one would cut ordinary words out of documents), and each as
JSON writes it inside a string.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ._models import Outcome, Reply

__all__ = ["MIN_BARE", "REDACTED", "Scrubber"]

REDACTED = "<redacted>"
MIN_BARE = 8


def _forms(authorization: str) -> list[bytes]:
    value = authorization.strip()
    forms = {value}
    credential = value.partition(" ")[2].strip()
    if len(credential) >= MIN_BARE:
        forms.add(credential)
    for form in list(forms):
        escaped = json.dumps(form)[1:-1]  # a quote or a backslash escaped, as in a JSON string
        forms.update((escaped, escaped.replace("/", "\\/")))
    # longest first: the whole value goes before the key inside it
    return sorted((f.encode() for f in forms if f), key=len, reverse=True)


class Scrubber:
    """Replaces the credential in a reply's body and headers with ``<redacted>``. Its repr never
    shows what it looks for."""

    __slots__ = ("_forms",)

    def __init__(self, authorization: str | None) -> None:
        self._forms = _forms(authorization) if authorization else []

    def __repr__(self) -> str:
        return "<Scrubber>"

    def __call__(self, outcome: Outcome) -> Outcome:
        if not self._forms or not isinstance(outcome, Reply):
            return outcome
        body, headers = outcome.body, outcome.headers
        dirty_headers = any(self._holds(v.encode("latin-1", "replace")) for v in headers.values())
        if not dirty_headers and not self._holds(body):
            return outcome
        for form in self._forms:
            body = body.replace(form, REDACTED.encode())
        if dirty_headers:
            headers = {k.lower(): self._text(v) for k, v in headers.items()}
        return replace(outcome, body=body, headers=headers)

    def _holds(self, data: bytes) -> bool:
        return any(form in data for form in self._forms)

    def _text(self, value: str) -> str:
        for form in self._forms:
            value = value.replace(form.decode(), REDACTED)
        return value
