"""The README's tour runs as written, against the scripted model and the XERJ stand-in.

tests/test_docs.py checks the README's links and compiles its blocks; the blocks themselves run
here, each with assertions on what it sent and printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from xerj_tools import load_registry
from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

README = Path(__file__).resolve().parent.parent / "README.md"
TEST_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest"
)
SEARCH = ("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}})


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def block_with(marker: str) -> str:
    (block,) = [b for b in python_blocks() if marker in b]
    return block


def run(snippet: str, xerj: XerjStandIn, model: ScriptedModel) -> str:
    env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "scripted", "XERJ_URL": xerj.url}
    env.pop("XERJ_API_KEY", None)
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_python_block_of_the_readme_is_run_here() -> None:
    assert len(python_blocks()) == 2
    assert {block_with("dispatch_many("), block_with("run_agent(")} == set(python_blocks())


def test_the_turn_by_hand_runs() -> None:
    snippet = block_with("dispatch_many(")
    assert "tools=registry.chat_tools()" in snippet
    with XerjStandIn() as xerj, ScriptedModel([Turn(tool_calls=[SEARCH])]) as model:
        printed = json.loads(run(snippet, xerj, model))
        assert printed["ok"] is True and "tool" not in printed and printed["total"] >= 1
        assert [r.path for r in xerj.requests] == ["/docs/_search"]
        assert model.requests[0]["tools"] == json.loads(json.dumps(load_registry().chat_tools()))


def test_the_loop_snippet_runs() -> None:
    snippet = block_with("run_agent(")
    assert len(snippet.strip().splitlines()) < 15
    script = [Turn(tool_calls=[SEARCH]), Turn(text="A saturated database pool slowed checkout.")]
    with XerjStandIn() as xerj, ScriptedModel(script) as model:
        assert run(snippet, xerj, model).strip() == "A saturated database pool slowed checkout."
        assert [r.path for r in xerj.requests] == ["/docs/_search"]
        assert model.requests[0]["model"] == "gpt-4.1-mini"


def test_the_test_command_is_the_one_ci_runs() -> None:
    assert TEST_COMMAND in README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    assert TEST_COMMAND in ci


def test_the_offline_validation_of_the_tour_runs() -> None:
    (line,) = [ln for ln in README.read_text().splitlines() if "xerj-tools validate --tool" in ln]
    argv = shlex.split(line, comments=True)
    assert argv[0].endswith("xerj-tools")
    done = subprocess.run([sys.executable, "-m", "xerj_tools", *argv[1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'repaired $.size: "10" → 10' in done.stdout
