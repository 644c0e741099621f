"""Test helpers: a XERJ stand-in server on 127.0.0.1. A stand-in for tests and demos, not XERJ."""

from __future__ import annotations

from ._server import Fault, RecordedRequest, XerjStandIn

__all__ = ["Fault", "RecordedRequest", "XerjStandIn"]
