"""Small helpers several test files share: waiting for a condition, a port nothing listens on,
deeply nested values, the command line run in-process, the JSON-Schema-Test-Suite's cases,
whether an optional package is installed. (The tool call the tests send is conftest's
`chat_call`.)"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

T = TypeVar("T")


def until(condition: Callable[[], T], deadline: float = 60.0, *, poll: float = 0.005) -> T:
    """Wait for a condition (not for a time): poll until it holds, fail after `deadline` s."""
    stop = time.monotonic() + deadline
    while not (value := condition()):
        if time.monotonic() > stop:
            raise AssertionError("the condition never held")
        time.sleep(poll)
    return value


async def until_async(condition: Callable[[], T], deadline: float = 60.0, *, poll: float = 0.005) -> T:
    """`until` for a coroutine: the loop keeps running while it waits."""
    stop = time.monotonic() + deadline
    while not (value := condition()):
        if time.monotonic() > stop:
            raise AssertionError("the condition never held")
        await asyncio.sleep(poll)
    return value


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def closed_port() -> str:
    """The URL of a loopback port that was free a moment ago: a connection there is refused."""
    return f"http://127.0.0.1:{free_port()}"


def nested(levels: int, leaf: Any = 1, *, kind: Literal["array", "object"] = "array") -> Any:
    """`levels` arrays (or `{"k": …}` objects) inside one another, built without recursion."""
    value = leaf
    for _ in range(levels):
        value = [value] if kind == "array" else {"k": value}
    return value


def nested_bytes(depth: int, leaf: str = "x", key: str | None = None) -> bytes:
    """The JSON text of `nested` past any recursion limit: arrays, or objects keyed by `key`."""
    if key is None:
        return b"[" * depth + json.dumps(leaf).encode() + b"]" * depth
    return (b'{"' + key.encode() + b'":') * depth + json.dumps(leaf).encode() + b"}" * depth



class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_cli(*argv: str, stdin: str = "", err: io.StringIO | None = None) -> tuple[int, str, str]:
    """`xerj-tools ARGV` in-process: (exit status, stdout, stderr)."""
    from xerj_tools._cli._main import main

    out, err = io.StringIO(), err or io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def schema_suite_cases(keep: Callable[[Any], bool]) -> list[Any]:
    """The JSON-Schema-Test-Suite's cases (tests/fixtures) whose schema `keep` accepts, as
    pytest params ``(schema, data, valid)``."""
    import pytest

    suite = Path(__file__).parent / "fixtures" / "json-schema-test-suite"
    return [
        pytest.param(group["schema"], test["data"], test["valid"],
                     id=f"{path.stem}: {group['description']}: {test['description']}")
        for path in sorted(suite.glob("*.json"))
        for group in json.loads(path.read_text("utf-8"))
        for test in group["tests"]
        if keep(group["schema"])
    ]  # fmt: skip


def installed(module: str) -> bool:
    """Whether `module` can be imported here (an optional extra's package may be missing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package (`google`, `langchain`) is missing
        return False
