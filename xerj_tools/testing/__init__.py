"""Test helpers on 127.0.0.1: a XERJ stand-in, a scripted OpenAI-compatible model and a scripted
Gemini.

Both are test doubles for tests and demos: the stand-in is not XERJ, the scripted model is not
a model.
"""

from __future__ import annotations

from ._gemini import ScriptedGemini
from ._model import ScriptedModel, Turn
from ._server import Fault, RecordedRequest, XerjStandIn

__all__ = ["Fault", "RecordedRequest", "ScriptedGemini", "ScriptedModel", "Turn", "XerjStandIn"]
