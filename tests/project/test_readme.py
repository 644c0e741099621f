"""The README runs as written: its commands and its tour, with no key and no XERJ node.

tests/project/test_docs.py checks the README's links and that every block of every page is run somewhere;
the README's blocks run here, each with assertions on what it did. The tour starts its own
stand-ins, so it runs in-process, as a user would paste it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support import run_cli
from test_docs import README, code_blocks, run_as_script

ROOT = Path(__file__).resolve().parents[2]
MAIN_JOB = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/python examples/agent_loop.py"
TEST_COMMAND = ".venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest"
# The top-level modules of the extras' packages: the main job must run without any of them.
EXTRAS_MODULES = (
    "mcp", "jwt", "tomli", "opentelemetry", "agents", "langgraph", "langchain", "langchain_core",
    "langchain_openai", "google", "pydantic_ai", "orjson", "jsonschema_rs", "pyarrow", "dask",
    "distributed", "pytest", "hypothesis",
)


def python_blocks() -> list[str]:
    return [b.code for b in code_blocks(README) if b.info == "python"]


def shell_blocks() -> list[str]:
    return [b.code for b in code_blocks(README) if b.info == "sh"]


def block_with(marker: str) -> str:
    (block,) = [b for b in python_blocks() if marker in b]
    return block


def test_every_block_of_the_readme_is_run_here() -> None:
    assert {block_with("run_many("), block_with("run_agent(")} == set(python_blocks())
    assert shell_blocks() == [MAIN_JOB + "\n", TEST_COMMAND + "\n", shell_blocks()[2]]
    assert shell_blocks()[2].count("xerj-tools validate") == 2


def test_the_main_job_command_installs_the_core_alone_and_the_test_command_adds_the_tests() -> None:
    assert MAIN_JOB in shell_blocks()[0] and "[test]" not in shell_blocks()[0]
    # The test command reuses the main job's venv; CI runs it exactly (with coverage options).
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()


def test_the_main_job_runs_with_the_core_alone() -> None:
    """examples/agent_loop.py with every extra's module made unimportable, and no key."""
    blocker = (
        "import sys\n"
        "class Blocked:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {EXTRAS_MODULES!r}:\n"
        "            raise ImportError(f'{name} is not in the core install')\n"
        "sys.meta_path.insert(0, Blocked())\n"
        "sys.path.insert(0, 'examples')\n"
        "import runpy\n"
        "runpy.run_path('examples/agent_loop.py', run_name='__main__')\n"
    )
    from test_examples import EXPECTED

    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "completed after 4 turns" in done.stdout and "[model: scripted stand-in" in done.stdout
    for text in EXPECTED["agent_loop.py"]:  # what tests/project/test_examples.py asks of every example
        assert text in done.stdout, done.stdout


def test_the_turn_by_hand_runs_with_no_key() -> None:
    snippet = block_with("run_many(")
    assert "tools=registry.chat_tools()" in snippet
    printed = json.loads(run_as_script(snippet, str(README)))
    assert printed["ok"] is True and "tool" not in printed and printed["total"] >= 1


def test_the_turn_by_hand_leaves_a_conversation_the_model_can_be_sent() -> None:
    """After the tour, `messages` holds the question, the model's turn and its answer, in an
    order the API takes: a second request with them reaches the model."""
    snippet = block_with("run_many(").replace(
        "ScriptedModel([Turn(tool_calls=[search])])",
        "ScriptedModel([Turn(tool_calls=[search]), Turn(text='Done.')])",
    ) + (
        "        roles = [m['role'] if isinstance(m, dict) else m.role for m in messages]\n"
        "        assert roles == ['user', 'assistant', 'tool'], roles\n"
        "        again = client.chat.completions.create(model='gpt-4.1-mini', messages=messages)\n"
        "        sent = model.requests[-1]['messages']\n"
        "        assert sent[1]['tool_calls'][0]['id'] == sent[2]['tool_call_id']\n"
        "        print(again.choices[0].message.content)\n"
    )
    assert run_as_script(snippet, str(README)).splitlines()[-1] == "Done."


def test_the_loop_runs_with_no_key() -> None:
    snippet = block_with("run_agent(")
    assert len(snippet.strip().splitlines()) < 16
    assert run_as_script(snippet, str(README)).strip() == "A saturated database pool slowed checkout."


@pytest.mark.parametrize("line", [0, 1])
def test_the_offline_validation_of_the_tour_runs(line: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = [ln for ln in shell_blocks()[2].splitlines() if "xerj-tools validate" in ln][line]
    argv = shlex.split(text, comments=True)
    assert argv[0] == ".venv/bin/xerj-tools"
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(*argv[1:])
    if line == 0:
        assert code == 0, out + err
        assert 'repaired $.size: "10" → 10' in out
    else:  # as its comment says
        assert "one of 3 is invalid, exit 1" in text
        assert (code, out.splitlines()[-1]) == (1, "3 calls: 2 valid (0 after repair), 1 invalid")
