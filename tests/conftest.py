"""Shared fixtures: a XERJ stand-in on 127.0.0.1 and dispatchers in both flavours.

The suite runs on every core with pytest-xdist (in the test extras, `-n auto` in pyproject.toml):
`-n 0` runs it in one process. Tests marked `slow` run only when asked (`-m slow`, as CI does).
"""
# ruff: noqa: E402 (bytecode is turned back on before anything of the package is imported)

from __future__ import annotations

import os
import sys

# The suite's processes cache bytecode (in the clone's gitignored __pycache__ directories) even
# where PYTHONDONTWRITEBYTECODE is set: each interpreter a test starts (an example, the command
# line, an MCP server) would otherwise compile the package from source again (~0.25 s of CPU
# each), and each xdist worker the tests (pytest's assertion rewriting, ~4 s). Set here, before
# the package is imported, and for every subprocess through the environment.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import asyncio
import functools
import gc
import json
import signal
import ssl
from collections.abc import Callable, Iterator, MutableMapping
from types import FrameType
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

# No property test fails on wall time: Hypothesis' per-example deadline (200 ms) and its
# too-slow health check both measure the clock, which a loaded machine stretches. A test that
# sets its own settings keeps them; the examples are counted, never timed.
settings.register_profile("xerj", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("xerj")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores this process may use. A worker often waits (on
    an interpreter a test started, a socket, a server's deadline), and the extra one uses the
    core meanwhile (docs/testing.md#where-the-time-goes has the figures)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1

if TYPE_CHECKING:  # imported where used: pytest-xdist's controller loads this file, runs no test
    from xerj_tools import AsyncDispatcher, Dispatcher, ToolResult
    from xerj_tools.testing import XerjStandIn

# XERJ_TEST_TIME_LIMIT=N (CI: 10) lists, at the end, the tests not marked slow that took more
# than N seconds; nothing fails for it.
import time_limit

# The suite does not depend on the caller's environment: an exported XERJ_URL (as the MCP quick
# start suggests), OPENAI_API_KEY or OPENAI_BASE_URL would otherwise reach every Dispatcher() and
# OpenAI() made without arguments, and every subprocess. They are cleared here, before any test
# or worker starts; a test that needs one sets it (monkeypatch.setenv). The suite's own settings
# stay: XERJ_TEST_TIME_LIMIT, XERJ_HYPOTHESIS_EXAMPLES, XERJ_UPDATE_GOLDEN, XERJ_COMPAT_YAML_DIR,
# and XERJ_CONTRACT_URL / XERJ_CONTRACT_API_KEY, the node the live contract tests run on
# (tests/contract/test_contract.py, docs/testing.md).
SUITE_SETTINGS = frozenset({
    "XERJ_TEST_TIME_LIMIT", "XERJ_HYPOTHESIS_EXAMPLES", "XERJ_UPDATE_GOLDEN", "XERJ_COMPAT_YAML_DIR",
    "XERJ_CONTRACT_URL", "XERJ_CONTRACT_API_KEY",
})
CALLERS_PREFIXES = ("XERJ_", "OPENAI_", "GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_", "ANTHROPIC_")


def _clear_callers_environment(environ: MutableMapping[str, str]) -> list[str]:
    """Remove the caller's XERJ, OpenAI and Gemini settings from `environ`; return their names."""
    cleared = [k for k in environ if k.startswith(CALLERS_PREFIXES) and k not in SUITE_SETTINGS]
    for name in cleared:
        del environ[name]
    return sorted(cleared)


_clear_callers_environment(os.environ)

# Ctrl-C tests use `_thread.interrupt_main()`, which does nothing where SIGINT is ignored: so it is
# in a job a non-interactive shell starts in the background (.ci/run's parallel runs).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    """pytest rewrites the asserts of every package that ships a pytest plugin, when imported:
    langsmith (a LangGraph dependency), hypothesis, anyio. Where bytecode is not cached
    (PYTHONDONTWRITEBYTECODE) that is ~3 s of CPU per worker, for asserts no test reads."""
    must_rewrite = getattr(config.pluginmanager.rewrite_hook, "_must_rewrite", None)
    if isinstance(must_rewrite, set):
        must_rewrite -= {"langsmith", "hypothesis", "anyio"}
    time_limit.pytest_configure(config)


_module_running: list[str] = [""]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Before the first test of each module: collect the garbage, then freeze what is left (the
    imported packages, the registries, the caches) out of the collector's sight. A worker's heap
    grows to millions of objects as the tests import the SDKs, and every full collection walked
    all of them again: over a tenth of the suite's CPU. The module's own objects (its fixtures
    included: they are made after this) are collected as before; what is frozen outlives the
    module anyway."""
    module = item.nodeid.split("::", 1)[0]
    if module != _module_running[0]:
        _module_running[0] = module
        gc.collect()
        gc.freeze()


@pytest.fixture
def xerj() -> Iterator[XerjStandIn]:
    from xerj_tools.testing import XerjStandIn

    with XerjStandIn() as server:
        yield server


class SleepRecorder:
    """An injected sleep: records each wait, spends no wall time."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.waits.append(seconds)


class Runner:
    """One interface over `Dispatcher` and `AsyncDispatcher`, so tests run against both."""

    def __init__(self, mode: str, sleep: SleepRecorder, **options: Any) -> None:
        from xerj_tools import AsyncDispatcher, Dispatcher

        self.sync: Dispatcher | None = None
        self.aio: AsyncDispatcher | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if mode == "sync":
            self.sync = Dispatcher(sleep=sleep, **options)
        else:
            self._loop = asyncio.new_event_loop()
            self.aio = AsyncDispatcher(sleep=sleep.asleep, **options)

    def run(self, call: Any, **keywords: Any) -> ToolResult:
        if self.sync is not None:
            return self.sync.run(call, **keywords)
        assert self.aio is not None and self._loop is not None
        return self._loop.run_until_complete(self.aio.run(call, **keywords))

    def run_many(self, calls: list[Any], **keywords: Any) -> list[ToolResult]:
        if self.sync is not None:
            return self.sync.run_many(calls, **keywords)
        assert self.aio is not None and self._loop is not None
        return self._loop.run_until_complete(self.aio.run_many(calls, **keywords))

    def payload(self, name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
        """Dispatch a Chat Completions call; return the decoded message content."""
        result = self.run(chat_call(name, arguments, call_id))
        message = result.message
        assert message["tool_call_id"] == call_id  # type: ignore[typeddict-item]
        return json.loads(message["content"])  # type: ignore[typeddict-item]

    def close(self) -> None:
        if self.sync is not None:
            self.sync.close()
        if self.aio is not None and self._loop is not None:
            self._loop.run_until_complete(self.aio.aclose())
            self._loop.close()


def openai_client(base_url: str, mode: str = "sync", api_key: str = "scripted", **http: Any) -> Any:
    """The real OpenAI client (`mode` "sync" or "async") for a scripted model, without retries;
    `http` goes to its HTTP client (``event_hooks=``…).

    Its HTTP client shares one TLS context with the others: they speak plain HTTP to 127.0.0.1,
    and each would otherwise load the CA bundle into one of its own (~40 ms of CPU a client)."""
    import openai

    if mode == "sync":
        return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                             http_client=openai.DefaultHttpxClient(verify=shared_tls(), **http))
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                              http_client=openai.DefaultAsyncHttpxClient(verify=shared_tls(), **http))


def run_scripted(mode: str, script: list[Any], xerj: XerjStandIn, **options: Any) -> Any:
    """`run_agent` (`mode` "sync") or `arun_agent` ("async") of model "m" on the prompt "q", the
    model playing `script` and the tools answered by the stand-in; `options` are `AgentOptions`."""
    from xerj_tools import AgentOptions, AsyncDispatcher, Dispatcher, arun_agent, run_agent
    from xerj_tools.testing import ScriptedModel

    with ScriptedModel(script) as model:
        if mode == "sync":
            with openai_client(model.base_url) as client, Dispatcher(url=xerj.url) as dispatcher:
                return run_agent(client, model="m", messages="q", dispatcher=dispatcher, options=AgentOptions(**options))

        async def go() -> Any:
            async with openai_client(model.base_url, "async") as client, \
                    AsyncDispatcher(url=xerj.url) as dispatcher:
                return await arun_agent(client, model="m", messages="q", dispatcher=dispatcher, options=AgentOptions(**options))

        return asyncio.run(go())


@functools.cache
def shared_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def chat_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    """A Chat Completions tool call as the model emits it: arguments as a JSON string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def responses_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": raw}


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_runner(mode: str, sleeps: SleepRecorder) -> Iterator[Any]:
    runners: list[Runner] = []

    def make(**options: Any) -> Runner:
        runner = Runner(mode, sleeps, **options)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        runner.close()


@pytest.fixture
def runner(make_runner: Any, xerj: XerjStandIn) -> Runner:
    return make_runner(url=xerj.url)  # type: ignore[no-any-return]


def success_payload(
    tool: str, reply: Any, request: Any, rerank_note: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The payload tool `tool` makes of a 2xx reply (a first-party tool by name, else as the
    plain handler's request kind says): the reading stage alone, without a socket."""
    from xerj_tools.tools import Received
    from xerj_tools.tools._table import XERJ_TOOLS, handler_tool, reading_tool

    named = XERJ_TOOLS.get(tool) or handler_tool(tool, lambda _: request)
    return reading_tool(named, request).answer(Received(tool, reply, request, rerank_note))


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any connection to an address off 127.0.0.0/8 (or ::1): the SDKs under test must
    never reach their vendor."""
    import ipaddress
    import socket

    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if not ipaddress.ip_address(socket.getaddrinfo(host, None)[0][4][0]).is_loopback:
                raise AssertionError(f"a connection off loopback was attempted: {host}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def interrupted(job: Callable[[], None], files: tuple[str, ...], stop_at: int | None) -> int:
    """Run `job`, raising KeyboardInterrupt at line event `stop_at` of `files` (as a signal
    would land there); the number of line events seen."""
    seen = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal seen
        if not any(f in frame.f_code.co_filename for f in files):
            return None
        if event == "line":
            seen += 1
            if seen == stop_at:
                raise KeyboardInterrupt
        return trace

    sys.settrace(trace)
    try:
        job()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return seen
