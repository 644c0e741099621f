"""Every example runs, with no key, against the stand-ins (as a user would run it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import installed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPECTED = {
    "agent_loop.py": ["xerj_list_indices {}", "xerj_describe_index", '"role":"catalog"', "invalid_json",
                      "completed after 4 turns", "T-4"],
    "tools_and_dispatch.py": ["call_1: {\"ok\":true", "licences"],
    "responses_api.py": ["completed after 2 turns", "rb-202"],
    "long_term_memory.py": ["Conversation 2", "{\"ok\":true,\"hits\":[{\"id\":", "on call for checkout"],
    "offline_validation.py": ["repaired $.query.size → $.size", "(exit status 1)"],
    "streaming.py": ["[calling xerj_search", "[xerj_semantic_search: ok]", "[completed after 2 turns]"],
    "tracing.py": ["put to rest", "failing over", "  agent turn {'xerj_tools.turn': 1}",
                   "    execute_tool xerj_search", "· xerj_tools.failover", "'error.type': 'unreachable'"],
    "openai_agents.py": ['"code":"invalid_json"', "← {\"ok\":true,\"total\":2,\"hits\":[{\"_index\":\"docs\"", "(T-4, T-6)"],
    "mcp_client.py": ["xerj_memory_store: Store a memory (read-only: False)", "a repaired call: isError=False",
                      "repairs ['$.size", "a refused call: isError=True", "policy_denied"],
    "langgraph_agent.py": ["call_1 [error]", "call_3 [success]", "XERJ was asked once", "(pm-103)"],
    "gemini_function_calling.py": ['"code": "invalid_arguments"', "note: identical to call gemini-order-1",
                                   "→ xerj_semantic_search {\"index\": \"docs\", \"field\"", "(pm-101)."],
    "adk_agent.py": ["repaired: ['$.query.size → $.size']", '"code": "invalid_arguments"', "T-4 and T-6"],
    "pydantic_ai_agent.py": ['← call_3 {"ok":false,"error":{"code":"invalid_json"', "XERJ was asked once",
                             "← call_4 {\"ok\":true", "T-1, T-4, T-6."],
    "langchain_agent.py": ['← call_4 [error] {"ok":false,"error":{"code":"invalid_json"',
                           '← call_3 [error] {"ok":false,"error":{"code":"invalid_arguments"',
                           "XERJ was asked once", "call_5 [success]", "(pm-103)"],
}
# Examples of an integration run when its optional extra is installed (CI installs them all).
# Each starts its framework in a fresh interpreter (~5 s): CI runs them (`-m slow`).
NEEDS = {"openai_agents.py": ("agents",), "mcp_client.py": ("mcp",), "langgraph_agent.py": ("langgraph", "langchain_openai"),
         "gemini_function_calling.py": ("google.genai",), "adk_agent.py": ("google.adk",),
         "pydantic_ai_agent.py": ("pydantic_ai",), "langchain_agent.py": ("langchain.agents",)}


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")) == sorted(EXPECTED)


# agent_loop.py runs in tests/project/test_readme.py, as the README's main job (with every extra's module
# made unimportable), and is held to EXPECTED there: one interpreter for it, not two.
ELSEWHERE = {"agent_loop.py"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in NEEDS else [])
                                  for n in sorted(set(EXPECTED) - ELSEWHERE)])
def test_example_runs_against_the_stand_ins(name: str) -> None:
    missing = [m for m in NEEDS.get(name, ()) if not installed(m)]
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)} (an optional extra) which is not installed")
    # no key: tests/conftest.py cleared the caller's XERJ, OpenAI and Gemini settings
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for text in EXPECTED[name]:
        assert text in done.stdout, done.stdout
