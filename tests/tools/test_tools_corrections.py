"""tools.json is the publishers' definitions plus exactly the corrections docs/tools-corrections.md
lists, each with the XERJ source that justifies it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from xerj_tools import XERJ_TOOLS

ROOT = Path(__file__).resolve().parents[2]
SEED = Path(__file__).parents[1] / "fixtures" / "tools.seed.json"  # a copy of what the publishers published
DOC = ROOT / "docs" / "tools-corrections.md"


def corrections() -> list[dict[str, Any]]:
    block = re.search(r"```json\n(.*?)\n```", DOC.read_text("utf-8"), re.S)
    assert block is not None, "docs/tools-corrections.md holds its list in one ```json block"
    return list(json.loads(block.group(1)))


def corrected_seed() -> list[dict[str, Any]]:
    tools = copy.deepcopy(json.loads(SEED.read_text("utf-8")))
    by_name = {t["function"]["name"]: t["function"] for t in tools}
    for fix in corrections():
        for name in fix["tools"]:
            node = by_name[name]["parameters"]["properties"]
            for key in fix["property"][:-1]:
                node = node[key]["properties"]
            prop = node[fix["property"][-1]]
            assert prop["description"].count(fix["replace"]) == 1, (name, fix["replace"])
            prop["description"] = prop["description"].replace(fix["replace"], fix["with"])
    return tools


def test_tools_json_is_the_seed_with_exactly_the_documented_corrections() -> None:
    tools = json.loads((ROOT / "tools.json").read_text("utf-8"))
    published = corrected_seed()
    assert tools[: len(published)] == published
    # After the publishers' definitions, only the library's first-party additions, in order.
    added = [t["function"]["name"] for t in tools[len(published):]]
    assert added == [name for name, tool in XERJ_TOOLS.items() if tool.origin == "first-party"]
    assert {n for n, t in XERJ_TOOLS.items() if t.origin == "published"} == {
        t["function"]["name"] for t in published
    }


def test_the_seed_fixture_is_the_publishers_file_when_it_is_at_hand() -> None:
    published = ROOT.parent / "shared" / "seeds" / "tools.seed.json"
    if not published.exists():
        pytest.skip("the publishers' seed is not beside this checkout")
    assert json.loads(published.read_text("utf-8")) == json.loads(SEED.read_text("utf-8"))


def test_every_correction_cites_xerj_and_says_what_it_removes() -> None:
    fixes = corrections()
    assert len(fixes) == 7
    for fix in fixes:
        assert re.search(r"engine/crates/[\w-]+/src/\w+\.rs(:\d+| @ [0-9a-f]{7})", fix["xerj"]), fix
        assert fix["replace"] != fix["with"]
    text = json.dumps(json.loads((ROOT / "tools.json").read_text("utf-8")))
    for false_claim in ("cohere\\\" uses Cohere", "fast approximate count", "Cosine-similarity threshold"):
        assert false_claim not in text


def test_the_model_now_reads_what_the_engine_does() -> None:
    tools = {t["function"]["name"]: t["function"]["parameters"]["properties"]
             for t in json.loads((ROOT / "tools.json").read_text("utf-8"))}
    assert "(1 + cosine) / 2" in tools["xerj_memory_store"]["dedup_threshold"]["description"]
    assert "no total" in tools["xerj_search"]["track_total_hits"]["description"]
    assert "num_candidates" in tools["xerj_vector_search"]["k"]["description"]
    for name in ("xerj_search", "xerj_hybrid_search"):
        assert 'There is no "cohere" provider' in tools[name]["rerank"]["description"]
    for name in ("xerj_search", "xerj_semantic_search", "xerj_vector_search", "xerj_hybrid_search"):
        rule = tools[name]["index"]["description"]
        assert 'XERJ itself globs only "*", "prefix*"' in rule and "resolved against the index list" in rule
