"""Gemini (the Gemini API, and google-genai's types): ``functionCall`` parts in, ``functionResponse``
parts out, all of a turn's answers in one ``{"role": "user", "parts": [...]}`` content.

The ``google-genai`` SDK is not a dependency: its `Part` and `FunctionCall` objects are read by
their attributes (``function_call``, ``id``, ``name``, ``args``), as dicts are by their keys, in
the REST API's camelCase (``functionCall``) or the SDK's snake_case (``function_call``).

Ids. A Gemini ``FunctionCall`` carries an ``id`` only sometimes (the field is optional: "If
populated, the client [is] to execute the function_call and return the response with the matching
id", google-genai ``types.FunctionCall``). Where it does, the answer's ``functionResponse`` carries
the same id. Where it does not, a call is matched by name and order: it gets the id
``gemini-order-N`` (N its place among the turn's calls without an id) inside xerj-tools, and its
answer carries no id, only the name, in the same place among the turn's answers as the call had
among its calls. No id is ever invented on the wire.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ._base import Definable, GeminiFunctionResponse, ToolCall, ToolMessage, WireShape, get, text

__all__ = ["GEMINI", "ORDER_ID", "GeminiFunctionResponse"]

ORDER_ID = "gemini-order-"  # the id of a call Gemini sent without one: matched by name and order


def _function_call(obj: Any) -> Any:
    """The ``FunctionCall`` inside `obj` (a part, or the call itself), or None."""
    if isinstance(obj, Mapping):
        if "functionCall" in obj:
            return obj["functionCall"]
        inner = obj.get("function_call")
        # Legacy Chat Completions messages also have a `function_call` (with `arguments`, in a
        # message with a `role`): that is not a Gemini part.
        if isinstance(inner, Mapping) and "arguments" not in inner and "role" not in obj:
            return inner
        return None
    if type(obj).__name__ == "FunctionCall" and hasattr(obj, "args"):
        return obj
    if hasattr(obj, "function_response"):  # a google-genai Part
        return getattr(obj, "function_call", None)
    return None


def _function_response(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return obj.get("functionResponse", obj.get("function_response"))
    return getattr(obj, "function_response", None) if hasattr(obj, "function_call") else None


def _response(content: str) -> dict[str, Any]:
    """The envelope as the ``response`` object. Gemini reads a ``response`` with an ``error`` key
    as a failure and anything else whole as the output (``types.FunctionResponse``), which is
    what the envelope already is: ``{"ok": false, "error": {...}}`` or ``{"ok": true, ...}``."""
    try:
        decoded = json.loads(content)
    except ValueError:
        decoded = None
    return decoded if isinstance(decoded, dict) else {"output": content}


class Gemini(WireShape):
    """``{"functionCall": {"id"?, "name", "args": {...}}}``, answered ``{"functionResponse":
    {"id"?, "name", "response": {...}}}``; `group` puts a turn's answers in one user content."""

    name = "gemini"
    title = "Gemini"
    # A transcript: contents whose parts hold the calls; a response: candidates[].content.parts.
    containers = ("contents", "parts", "candidates", "content")
    decoded_arguments = "args must be a JSON object of the function's parameters"

    def claims(self, obj: Any) -> bool:
        return _function_call(obj) is not None

    def read(self, obj: Any) -> ToolCall:
        call = _function_call(obj)
        args = get(call, "args")
        arguments = {} if args is None else args  # a call without parameters has no `args`
        return ToolCall(text(call, "id"), text(call, "name"), arguments, "gemini")

    def parse(self, obj: Any) -> ToolCall:
        call = self.read(obj)
        return call if call.call_id else replace(call, call_id=f"{ORDER_ID}1")

    def number(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """A turn's calls, those without an id of Gemini's numbered by their order."""
        out: list[ToolCall] = []
        position = 0
        for call in calls:
            if call.api == self.name and call.call_id.startswith(ORDER_ID):
                position += 1
                call = replace(call, call_id=f"{ORDER_ID}{position}")
            out.append(call)
        return out

    def answer(self, call: ToolCall, content: str, *, ok: bool) -> ToolMessage:
        response: dict[str, Any] = {"name": call.name, "response": _response(content)}
        if not call.call_id.startswith(ORDER_ID):
            response = {"id": call.call_id, **response}
        return {"functionResponse": response}

    def answered(self, message: Any) -> str | None:
        response = _function_response(message)
        return None if response is None else text(response, "id")

    def group(self, answers: Sequence[Any]) -> list[Any]:
        return [{"role": "user", "parts": list(answers)}]

    def definition(self, spec: Definable) -> dict[str, Any]:
        """A function declaration with the whole JSON Schema: ``{"name", "description",
        "parametersJsonSchema"}`` (google-genai's ``FunctionDeclaration.parameters_json_schema``).
        `subset_definition` writes the OpenAPI subset (``parameters``) instead."""
        return {
            "name": spec.name,
            "description": spec.description,
            "parametersJsonSchema": copy.deepcopy(dict(spec.parameters)),
        }

    def subset_definition(self, spec: Definable) -> dict[str, Any]:
        """A function declaration whose ``parameters`` are the subset of JSON Schema that
        Gemini's ``Schema`` type holds (`gemini_subset`): for SDKs or models without
        ``parametersJsonSchema``. What it loses is listed by `gemini_subset`."""
        from ._gemini_schema import gemini_subset

        return {
            "name": spec.name,
            "description": spec.description,
            "parameters": gemini_subset(spec.parameters)[0],
        }


GEMINI = Gemini()
