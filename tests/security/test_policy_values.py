"""A policy is checked when it is made and when its file is read: a key
given twice, or a value that would guard something other than what it says, is refused with a
message naming it; the server never starts with a weaker guardrail than the file reads as."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import pytest

from xerj_tools import ConfigurationError, Dispatcher, Policy
from xerj_tools._cli._main import main

from conftest import chat_call

needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None, reason="needs the mcp extra"
)

DUPLICATES = [
    pytest.param(
        "p.json",
        '{"read_only": true, "allow_indices": ["docs"], "read_only": false}',
        "'read_only'",
        id="json-flag",
    ),
    pytest.param(
        "p.json",
        '{"allow_indices": ["docs"], "allow_indices": ["*"]}',
        "'allow_indices'",
        id="json-allow-list",
    ),
    pytest.param("p.toml", "read_only = true\nread_only = false\n", "not valid TOML", id="toml"),
]


def load_policy_file(path: Path) -> Policy:
    """The MCP server's policy-file reader (the server's package needs the MCP SDK)."""
    pytest.importorskip("mcp.server", reason="the MCP SDK is not installed")
    from xerj_tools.integrations.mcp import load_policy_file as load

    return load(path)


@pytest.mark.parametrize(("name", "text", "named"), DUPLICATES)
def test_a_key_given_twice_is_refused(tmp_path: Path, name: str, text: str, named: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigurationError) as info:
        load_policy_file(tmp_path / name)
    assert named in str(info.value) and str(tmp_path / name) in str(info.value)
    if name.endswith(".json"):
        assert "given twice" in str(info.value)


def test_a_key_given_once_still_loads(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text('{"read_only": true, "allow_indices": ["docs"]}')
    assert load_policy_file(tmp_path / "p.json") == Policy(read_only=True, allow_indices=("docs",))


BAD_VALUES = [
    pytest.param(
        {"namespace_prefix": "tenant-42"},
        "would also admit 'tenant-420'",
        id="prefix-without-delimiter",
    ),
    pytest.param(
        {"namespace_prefix": "Tenant."}, "can begin no XERJ namespace", id="prefix-upper-case"
    ),
    pytest.param({"namespace_prefix": "a..b."}, "can begin no XERJ namespace", id="prefix-dot-dot"),
    pytest.param({"namespace_prefix": ""}, "can begin no XERJ namespace", id="prefix-empty"),
    pytest.param(
        {"namespace": "Tenant 42/../x"}, "Policy.namespace: invalid namespace", id="namespace"
    ),
    pytest.param({"namespace": "x-edges"}, "reserved", id="namespace-reserved"),
    pytest.param({"allow_indices": "docs"}, "must be a list of patterns", id="allow-a-string"),
    pytest.param({"deny_indices": ("",)}, "never matches an index name", id="deny-empty-pattern"),
    pytest.param(
        {"allow_indices": ("docs,logs",)}, "never matches an index name", id="allow-a-comma"
    ),
    pytest.param({"allow_indices": (" docs",)}, "never matches an index name", id="allow-a-space"),
    pytest.param(
        {"max_argument_bytes": 0}, "max_argument_bytes must be a positive integer", id="arg-cap-0"
    ),
    pytest.param(
        {"max_response_bytes": -1},
        "max_response_bytes must be a positive integer",
        id="response-cap",
    ),
    pytest.param({"max_size": True}, "max_size must be a positive integer", id="bool-cap"),
    pytest.param({"max_size": 5.0}, "max_size must be a positive integer", id="float-cap"),
    pytest.param(
        {"allow_remotes": "false"}, "allow_remotes must be True or False", id="string-flag"
    ),
    pytest.param({"read_only": 0}, "read_only must be True or False", id="int-flag"),
]


@pytest.mark.parametrize(("values", "message"), BAD_VALUES)
def test_a_value_that_guards_something_else_is_refused(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        Policy(**values)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "values",
    [
        {"namespace_prefix": "tenant-42."},
        {"namespace_prefix": "tenant-42-"},
        {"namespace_prefix": "t_"},
        {"namespace": "tenant-42"},
        {"allow_indices": ()},
        {"allow_indices": ("eu:logs-*", "docs")},
        {"max_argument_bytes": None},
        {"max_response_bytes": 1},
    ],
)
def test_sound_values_are_accepted(values: dict[str, Any]) -> None:
    Policy(**values)


def test_a_delimited_prefix_keeps_the_neighbour_out() -> None:
    # Nothing listens on port 9: the allowed call is retried, without waiting between attempts.
    with Dispatcher(
        url="http://127.0.0.1:9",
        policy=Policy(namespace_prefix="tenant-42."),
        sleep=lambda _seconds: None,
    ) as dispatcher:
        mine = dispatcher.run(
            chat_call("xerj_memory_recall", {"namespace": "tenant-42.a", "query": "q"})
        )
        theirs = dispatcher.run(
            chat_call("xerj_memory_recall", {"namespace": "tenant-420", "query": "q"})
        )
    assert mine.code != "policy_denied" and theirs.code == "policy_denied"


@needs_sdk  # `xerj-tools mcp` checks for the SDK before it reads the policy
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "dup.json",
            '{"read_only": true, "allow_indices": ["docs"], "read_only": false}',
            "given twice",
        ),
        ("prefix.toml", 'namespace_prefix = "tenant-42"\n', "would also admit 'tenant-420'"),
        ("ns.toml", 'namespace = "Tenant 42/../x"\n', "invalid namespace"),
        (
            "null.json",
            json.dumps({"max_argument_bytes": 0}),
            "max_argument_bytes must be a positive integer",
        ),
    ],
)
def test_the_server_does_not_start_on_such_a_file(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)
    err = io.StringIO()
    assert main(["mcp", "--policy", str(tmp_path / name)], stderr=err) == 2
    assert message in err.getvalue() and str(tmp_path / name) in err.getvalue()
