"""The README's loop snippet runs as written, against the scripted model and the XERJ stand-in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from xerj_tools.testing import ScriptedModel, Turn, XerjStandIn

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_loop_snippet_runs() -> None:
    snippet = python_blocks()[0]
    assert "run_agent(" in snippet and len(snippet.strip().splitlines()) < 15
    script = [Turn(tool_calls=[("xerj_search", {"index": "docs", "query": {"match": {"body": "checkout"}}})]),
              Turn(text="A saturated database pool slowed checkout.")]
    with XerjStandIn() as xerj, ScriptedModel(script) as model:
        env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "scripted", "XERJ_URL": xerj.url}
        env.pop("XERJ_API_KEY", None)
        done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "A saturated database pool slowed checkout."
        assert [r.path for r in xerj.requests] == ["/docs/_search"]
        assert model.requests[0]["model"] == "gpt-4.1-mini"
