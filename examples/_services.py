"""What the examples run against: real services when configured, local stand-ins otherwise.

- XERJ: the node in $XERJ_URL (key: $XERJ_API_KEY), else the built-in XERJ stand-in.
- The model: OpenAI when $OPENAI_API_KEY is set ($OPENAI_MODEL, default gpt-4.1-mini; any
  OpenAI-compatible server through $OPENAI_BASE_URL), else a scripted model that replays the
  example's script. Both stand-ins are test doubles on 127.0.0.1, not the real thing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import openai

from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn


@contextmanager
def services(
    script: Sequence[Turn], *, asynchronous: bool = False, catalog: bool = False
) -> Iterator[tuple[Any, str, str]]:
    """Yield ``(openai client, model name, XERJ URL)``; with `catalog`, the stand-in also holds
    the ``autoindex-catalog`` that ``xerj autoindex`` would write for its corpus."""
    with ExitStack() as stack:
        xerj_url = os.environ.get("XERJ_URL")
        if not xerj_url:
            xerj_url = stack.enter_context(XerjStandIn(catalog=catalog)).url
            print(f"[XERJ: built-in stand-in at {xerj_url}]")
        else:
            print(f"[XERJ: {xerj_url}]")
        make = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        if os.environ.get("OPENAI_API_KEY"):
            client = make()
            model = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
            print(f"[model: {model}]")
        else:
            scripted = stack.enter_context(ScriptedModel(list(script)))
            client = make(base_url=scripted.base_url, api_key="scripted")
            model = "scripted"
            print("[model: scripted stand-in replaying this example's turns]")
        yield client, model, xerj_url


def show(result: Any) -> None:
    """Print a run's tool calls and answers, one line each, and the final text."""
    for item in result.transcript:
        if isinstance(item, dict) and item.get("tool_calls"):
            for call in item["tool_calls"]:
                print(f"  → {call['function']['name']} {call['function']['arguments'][:100]}")
        elif isinstance(item, dict) and item.get("type") == "function_call":
            print(f"  → {item['name']} {item['arguments'][:100]}")
        elif isinstance(item, dict) and (item.get("role") == "tool" or item.get("type") == "function_call_output"):
            print(f"  ← {(item.get('content') or item.get('output'))[:160]}")
    print(f"\n{result.outcome} after {result.turns} turns: {result.output_text}")
