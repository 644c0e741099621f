"""Gemini (google-genai): the registry's declarations, functionCall parts dispatched, answered with
functionResponse parts; an invalid call gets the envelope, an identical pair is sent once.

Needs the extra: pip install -e '.[gemini]' (in a clone: docs/usage.md#install)
Run: python examples/gemini_function_calling.py
     (a scripted Gemini on 127.0.0.1 and the XERJ stand-in unless GEMINI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack

from google import genai
from google.genai import types

from xerj_tools import Dispatcher, turn_messages
from xerj_tools.testing import ScriptedGemini, Turn, XerjStandIn

SEARCH = {"index": "docs", "query": {"match": {"body": "checkout"}}, "size": 2}
SCRIPT = [
    Turn(tool_calls=[("xerj_search", SEARCH),
                     ("xerj_semantic_search", {"index": "docs", "query": "why did checkout break"}),  # no field
                     ("xerj_search", SEARCH)]),  # the same search again, in the same turn
    Turn(tool_calls=[("xerj_semantic_search", {"index": "docs", "field": "body", "query": "why did checkout break", "k": 2})]),
    Turn(text="A bad index template broke checkout (pm-101)."),
]


def main() -> None:
    with ExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL") or stack.enter_context(XerjStandIn()).url
        if os.environ.get("GEMINI_API_KEY"):
            client, model = genai.Client(), os.environ.get("GEMINI_MODEL", "gemini-2.5-flash")
        else:  # a scripted stand-in for Gemini on 127.0.0.1: nothing goes to Google
            gemini = stack.enter_context(ScriptedGemini(SCRIPT))
            client = genai.Client(api_key="scripted", http_options=types.HttpOptions(base_url=gemini.base_url))
            model = "scripted"
            print("[model: scripted Gemini stand-in replaying this example's turns]")
        dispatcher = stack.enter_context(Dispatcher(url=xerj_url))
        config = types.GenerateContentConfig(
            tools=dispatcher.registry.gemini_tools(),  # parametersJsonSchema: the whole schema
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents: list[types.Content] = [
            types.Content(role="user", parts=[types.Part(text="Why did checkout break?")])]
        for _ in range(5):
            response = client.models.generate_content(model=model, contents=contents, config=config)
            if not response.function_calls:
                print(f"\n{response.text}")
                return
            contents.append(response.candidates[0].content)
            answers = dispatcher.dispatch_many(response.function_calls)  # one answer per call, in order
            for call, answer in zip(response.function_calls, answers, strict=True):
                print(f"  → {call.name} {json.dumps(call.args)[:90]}")
                response_object = answer["functionResponse"]["response"]
                print(f"  ← {json.dumps(response_object)[:150]}")
                for note in response_object.get("notes", []):
                    print(f"    note: {note}")
            contents += [types.Content.model_validate(c) for c in turn_messages(answers)]


if __name__ == "__main__":
    main()
