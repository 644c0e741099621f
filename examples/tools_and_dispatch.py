"""By hand: pass the registry's definitions as tools=, dispatch the model's calls, send back.

Run: python examples/tools_and_dispatch.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

from _services import services

from xerj_tools import Dispatcher, load_registry
from xerj_tools.testing import Turn

SCRIPT = [
    Turn(tool_calls=[("xerj_semantic_search", {"index": "docs", "field": "body", "query": "vpn trouble", "k": 2})]),
    Turn(text="The Berlin VPN ran out of licences (pm-102)."),
]


def main() -> None:
    registry = load_registry()
    with services(SCRIPT) as (client, model, xerj_url), Dispatcher(registry, url=xerj_url) as dispatcher:
        messages: list = [{"role": "user", "content": "What went wrong with the VPN?"}]
        for _ in range(5):
            reply = client.chat.completions.create(model=model, messages=messages, tools=registry.chat_tools())
            message = reply.choices[0].message
            if not message.tool_calls:
                print(message.content)
                break
            # only what the API takes back: no refusal, annotations or other SDK-side fields
            messages.append(message.model_dump(include={"role", "content", "tool_calls"}))
            for answer in dispatcher.dispatch_many(message.tool_calls):  # concurrent, in call order
                print(f"  {answer['tool_call_id']}: {answer['content'][:120]}")
                messages.append(answer)


if __name__ == "__main__":
    main()
