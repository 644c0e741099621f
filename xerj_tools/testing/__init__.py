"""Test helpers on 127.0.0.1: a XERJ stand-in and a scripted OpenAI-compatible model.

Both are test doubles for tests and demos: the stand-in is not XERJ, the scripted model is not
a model.
"""

from __future__ import annotations

from ._model import ScriptedModel, Turn
from ._server import Fault, RecordedRequest, XerjStandIn

__all__ = ["Fault", "RecordedRequest", "ScriptedModel", "Turn", "XerjStandIn"]
