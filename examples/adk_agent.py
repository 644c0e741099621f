"""Google ADK: XERJ's own ADK example (docs/examples/google-ai/adk_xerj_agent.py in XERJ's
repository), with xerj-tools' tools in place of the hand-written `search_documents`.

What changes, against that example:
- The tools are the registry's nine (search; semantic, vector and hybrid search; memory store
  and recall; get a document; list the indices; describe an index), declared with their whole
  JSON Schema; there, one function with a fixed semantic query, size 3.
- Every call goes through a dispatcher: validated, repaired where a fix is certain (and said so),
  retried on a transient failure, fitted to a token budget, policy checked. There, the call goes
  out as the model wrote it, and an HTTP error from XERJ raises out of the run.
- A wrong call gets an answer the model can act on (the envelope: code, reason, hint, per-problem
  paths), and identical calls in one turn are sent to XERJ once.

Needs the extra: pip install -e '.[adk]' (in a clone: docs/usage.md#install)
Run: python examples/adk_agent.py   (a scripted model and the XERJ stand-in unless GOOGLE_API_KEY /
     XERJ_URL are set)
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from google.adk.agents import Agent
from google.adk.models import BaseLlm, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from xerj_tools import AsyncDispatcher
from xerj_tools.integrations.adk import adk_tools
from xerj_tools.testing import XerjStandIn

QUESTION = "Why did checkout break, and is anything still open?"
SCRIPT = [
    [("xerj_semantic_search", {"index": "docs", "field": "body", "query": "why did checkout break", "k": 2}),
     ("xerj_search", {"index": "tickets", "query": {"term": {"status": "open"}, "size": 3}}),  # size misplaced
     ("xerj_search", {"index": "tickets"})],  # no query
    [],
]
ANSWER = "A bad index template broke checkout (pm-101); tickets T-4 and T-6 are still open."


class ScriptedGemini(BaseLlm):
    """Plays Gemini for this example when no GOOGLE_API_KEY is set (a test double, not a model)."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncIterator[LlmResponse]:
        turn = SCRIPT.pop(0) if SCRIPT else []
        parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in turn]
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=10, candidates_token_count=10,
                                                           total_token_count=20)
        yield LlmResponse(content=types.Content(role="model", parts=parts or [types.Part(text=ANSWER)]),
                          usage_metadata=usage)


async def main() -> None:
    async with AsyncExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL") or stack.enter_context(XerjStandIn()).url
        model: Any = "gemini-2.5-flash" if os.environ.get("GOOGLE_API_KEY") else ScriptedGemini(model="scripted")
        dispatcher = await stack.enter_async_context(AsyncDispatcher(url=xerj_url))
        root_agent = Agent(
            name="doc_assistant",
            model=model,
            instruction=("You answer questions about the documents and tickets in XERJ. Search first, "
                         "answer only from what comes back, and cite document ids."),
            tools=adk_tools(dispatcher),  # in place of tools=[search_documents]
        )
        runner = InMemoryRunner(agent=root_agent, app_name="xerj")
        session = await runner.session_service.create_session(app_name="xerj", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            for part in event.content.parts if event.content else []:
                if part.function_call:
                    print(f"  → {part.function_call.name} {json.dumps(part.function_call.args)[:100]}")
                elif part.function_response:
                    answer = part.function_response.response or {}
                    print(f"  ← {json.dumps(answer)[:150]}")
                    if answer.get("repairs"):
                        print(f"    repaired: {answer['repairs']}")
                elif part.text:
                    print(f"\n{part.text}")
        await runner.close()


if __name__ == "__main__":
    asyncio.run(main())
