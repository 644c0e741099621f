"""Long-term memory: one conversation stores what it learned; a later one recalls it.

Run: python examples/long_term_memory.py   (stand-ins unless OPENAI_API_KEY / XERJ_URL are set)
"""

from __future__ import annotations

from _services import services, show

from xerj_tools import Dispatcher, run_agent
from xerj_tools.testing import Turn

NAMESPACE = "example-agent"
SCRIPT = [
    # conversation 1
    Turn(tool_calls=[("xerj_memory_store", {"namespace": NAMESPACE, "text": "The user is on call for checkout "
                                            "this week and prefers short answers.", "metadata": {"kind": "profile"}})]),
    Turn(text="Noted: you are on call for checkout this week."),
    # conversation 2, later: a fresh transcript
    Turn(tool_calls=[("xerj_memory_recall", {"namespace": NAMESPACE, "query": "on call checkout", "k": 3})]),
    Turn(text="You are on call for checkout this week, so here is the short version: check pm-101."),
]


def main() -> None:
    with services(SCRIPT) as (client, model, xerj_url), Dispatcher(url=xerj_url) as dispatcher:
        print("Conversation 1")
        show(run_agent(client, model=model, dispatcher=dispatcher, messages=[
            {"role": "system", "content": f"Store durable facts about the user in namespace {NAMESPACE}."},
            {"role": "user", "content": "I'm on call for checkout this week. Keep answers short."}]))
        print("\nConversation 2")
        show(run_agent(client, model=model, dispatcher=dispatcher, messages=[
            {"role": "system", "content": f"Recall what you know about the user from namespace {NAMESPACE}."},
            {"role": "user", "content": "Anything I should look at today?"}]))


if __name__ == "__main__":
    main()
