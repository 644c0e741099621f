"""The dispatchers' options: keywords only, each checked when the dispatcher is made."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import pydoc
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

import xerj_tools
from xerj_tools import (
    AgentOptions,
    AsyncDispatcher,
    Budget,
    ConfigurationError,
    Dispatcher,
    HttpRequest,
    Policy,
    RetryPolicy,
    Tool,
)
from xerj_tools._dispatch._options import Settings

MiB = 1024 * 1024


# The dispatchers' keywords and their defaults, written out: what callers get must not drift.
def dispatcher_keywords(
    registry: Any = None,
    *,
    url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    authorization: str | None = None,
    client: Any = None,
    handlers: Mapping[str, Any] | None = None,
    tools: Sequence[Tool] = (),
    retry: RetryPolicy | None = None,
    rerank_fallback: bool = True,
    rerank_memory_seconds: float = 300.0,
    connect_timeout: float = 5.0,
    read_timeout: float = 30.0,
    verify: bool | str | ssl.SSLContext = True,
    pool_size: int = 10,
    max_response_bytes: int = 32 * 1024 * 1024,
    repair: bool = True,
    budget: int | Budget = 12_000,  # DEFAULT_BUDGET
    budgets: Mapping[str, int | Budget] | None = None,
    max_buckets: int = 25,
    policy: Policy | None = None,
    max_workers: int = 8,
    max_in_flight: Any = "pool",
    deadline: float = 60.0,  # DEFAULT_DEADLINE
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None: ...


def defaults(function: Any) -> dict[str, Any]:
    return {
        p.name: p.default
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    }


def test_the_keywords_and_their_defaults_are_the_documented_ones() -> None:
    expected = defaults(dispatcher_keywords)
    now = defaults(Dispatcher)
    assert now == expected
    assert now["sleep"] is time.sleep
    async_now = defaults(AsyncDispatcher)
    assert set(async_now) == set(now) - {"max_workers"}
    assert {k: v for k, v in async_now.items() if k != "sleep"} == {
        k: v for k, v in expected.items() if k not in ("sleep", "max_workers")
    }
    # what the dispatchers check is what they take, with the same defaults
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert fields == {name: expected[name] for name in fields}
    assert set(expected) - set(fields) == {"registry", "client", "sleep"}


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
def test_every_option_is_a_keyword_only_parameter_of_the_real_signature(kind: Any) -> None:
    init = kind.__init__
    assert "__signature__" not in vars(init)  # nothing rewritten at import
    parameters = list(inspect.signature(init).parameters.values())[1:]
    assert parameters[0].name == "registry"
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[1:])
    assert "options" not in {p.name for p in parameters}


def test_help_of_the_dispatcher_lists_every_keyword_with_its_default() -> None:
    text = pydoc.render_doc(Dispatcher, renderer=pydoc.plaintext)
    doc = inspect.getdoc(Dispatcher) or ""
    for name in defaults(Dispatcher):
        assert re.search(rf"\b{name}\b", str(inspect.signature(Dispatcher))), name
        assert f"``{name}``" in text, name
        [line] = [x for x in doc.splitlines() if x.startswith(f"- ``{name}``: ")]
        paragraph = doc[doc.index(line) :].split("\n- ")[0]
        assert "Default" in paragraph, name
    assert "``max_workers``" not in (AsyncDispatcher.__doc__ or "").replace("no ``max_workers``", "")


def build(request: Mapping[str, Any]) -> HttpRequest:
    return HttpRequest("GET", "/")


CUSTOM = Tool(name="notes_count", build=build, description="Count notes.",
              parameters={"type": "object", "properties": {}})  # fmt: skip


def clock() -> float:
    return 42.0


def handler(arguments: Mapping[str, Any]) -> HttpRequest:
    return HttpRequest("GET", "/")


def revealed(dispatcher: Any) -> str | None:
    secret = dispatcher._endpoint.authorization
    return None if secret is None else secret.reveal()


# keyword -> (a value other than its default, what of a dispatcher shows it)
EFFECTS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "url": ("http://127.0.0.1:9", lambda d: d.url),
    "api_key": ("k" * 12, lambda d: revealed(d)),
    "authorization": ("Bearer t0ken", lambda d: revealed(d)),
    "handlers": ({"xerj_search": handler}, lambda d: d.tools["xerj_search"].build),
    "tools": ((CUSTOM,), lambda d: (d.tools.get("notes_count"), "notes_count" in d.registry.names)),
    "retry": (RetryPolicy.never(), lambda d: d.retry),
    "rerank_fallback": (False, lambda d: d._core.rerank_fallback),
    "rerank_memory_seconds": (0, lambda d: d._core.rerank_memory._ttl),
    "connect_timeout": (1.5, lambda d: d._settings.connect_timeout),
    "read_timeout": (7.0, lambda d: d._settings.read_timeout),
    "verify": (False, lambda d: d._settings.verify),
    "pool_size": (3, lambda d: (d._settings.pool_size, d._gate.limit)),
    "max_response_bytes": (2048, lambda d: d._settings.max_response_bytes),
    "repair": (False, lambda d: d._core.repair),
    "budget": (Budget(tokens=900), lambda d: d._core.budget),
    "budgets": ({"xerj_search": 2000}, lambda d: d._core.budgets),
    "max_buckets": (5, lambda d: d._core.max_buckets),
    "policy": (Policy(max_size=7), lambda d: d.policy),
    "max_workers": (2, lambda d: d._max_workers),
    "max_in_flight": (4, lambda d: d._gate.limit),
    "deadline": (5.0, lambda d: d.deadline),
    "clock": (clock, lambda d: d._core.clock()),
}


def test_every_checked_keyword_has_a_case() -> None:
    assert set(EFFECTS) == {f.name for f in dataclasses.fields(Settings)}


def close(*dispatchers: Any) -> None:
    for dispatcher in dispatchers:
        if isinstance(dispatcher, AsyncDispatcher):
            asyncio.run(dispatcher.aclose())
        else:
            dispatcher.close()


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize("name", list(EFFECTS))
def test_each_keyword_changes_the_dispatcher(kind: Any, name: str) -> None:
    if kind is AsyncDispatcher and name == "max_workers":
        pytest.skip("Dispatcher only")
    value, effect = EFFECTS[name]
    given, plain = kind(**{name: value}), kind()
    try:
        assert effect(given) != effect(plain)
    finally:
        close(given, plain)


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
def test_an_unknown_keyword_or_an_options_object_is_a_type_error(kind: Any) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'budgett'"):
        kind(budgett=8000)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'options'"):
        kind(options={"budget": 8000})
    with pytest.raises(TypeError, match="positional argument"):
        kind(None, "http://127.0.0.1:9")


def test_the_async_dispatcher_takes_no_max_workers() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'max_workers'"):
        AsyncDispatcher(max_workers=2)  # type: ignore[call-arg]


BAD: list[tuple[str, Any, str]] = [
    ("url", "ftp://x", "must look like http://host:9200"),
    ("url", "http://user:pw@host:9200", "put credentials in api_key="),
    ("url", [], "at least one XERJ URL"),
    ("url", 9200, "url must be a string"),
    ("api_key", 123, "api_key must be a string"),
    ("authorization", b"Bearer x", "authorization must be a string"),
    (
        "api_key",
        "sk-1\r\nX-Evil: 1",
        "the API key (api_key) holds a character an HTTP header cannot carry",
    ),
    (
        "authorization",
        "Bearer clé",
        "the authorization holds a character an HTTP header cannot carry",
    ),
    ("handlers", {"t": "not a function"}, "handlers must map tool names to functions"),
    ("tools", "xerj_search", "tools must be a sequence of Tool objects"),
    ("tools", [object()], "tools must be a sequence of Tool objects"),
    ("retry", 3, "retry must be a RetryPolicy"),
    ("rerank_fallback", "yes", "rerank_fallback must be True or False"),
    ("rerank_memory_seconds", -1, "rerank_memory_seconds must be zero or more seconds"),
    ("connect_timeout", 0, "connect_timeout must be a positive number of seconds"),
    ("read_timeout", float("nan"), "read_timeout must be a positive number of seconds"),
    ("verify", 1.5, "verify must be True, False, a CA bundle path or an SSLContext"),
    ("pool_size", 0, "pool_size must be an int of at least 1"),
    ("pool_size", True, "pool_size must be an int of at least 1"),
    ("max_response_bytes", 1.5, "max_response_bytes must be an int of at least 1"),
    ("repair", None, "repair must be True or False"),
    ("budget", 10, "a budget must be at least 1000 characters"),
    ("budget", Budget(tokens=10), "at least 250 tokens"),
    ("budgets", {"xerj_search": 5}, "a budget must be at least 1000 characters"),
    ("budgets", [("xerj_search", 5000)], "budgets must map tool names to budgets"),
    ("max_buckets", 0, "max_buckets must be an int of at least 1"),
    ("policy", {"max_size": 3}, "policy must be a Policy"),
    ("max_workers", 0, "max_workers must be an int of at least 1"),
    ("max_in_flight", 0, 'max_in_flight must be a positive int, None or "pool"'),
    ("max_in_flight", "all", 'max_in_flight must be a positive int, None or "pool"'),
    ("deadline", float("inf"), "deadline must be a positive number of seconds"),
    ("deadline", -2, "deadline must be a positive number of seconds"),
    ("clock", 3.0, "clock must be a function"),
]


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("name", "value", "message"), BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)]
)
def test_a_bad_value_is_refused_when_the_dispatcher_is_made(
    kind: Any, name: str, value: Any, message: str
) -> None:
    if kind is AsyncDispatcher and name == "max_workers":
        pytest.skip("Dispatcher only")
    with pytest.raises(ConfigurationError, match=re.escape(message)) as raised:
        kind(**{name: value})
    if name in ("api_key", "authorization"):
        assert str(value) not in str(raised.value)  # a credential is never quoted


def test_no_repr_shows_a_credential() -> None:
    secrets = {"api_key": "sk-live-123456789", "authorization": "Bearer tok-987654321"}
    dispatcher = Dispatcher(budget=8000, **secrets)
    settings = Settings(budget=8000, **secrets)
    close(dispatcher)
    for text in (repr(settings), str(settings), repr(dispatcher)):
        assert "sk-live-123456789" not in text and "tok-987654321" not in text
    assert repr(settings) == "Settings(api_key=<redacted>, authorization=<redacted>, budget=8000)"


def test_what_the_dispatcher_keeps_is_frozen_and_holds_copies() -> None:
    handlers = {"xerj_search": handler}
    budgets = {"xerj_search": 3000}
    tools = [CUSTOM]
    settings = Settings(
        handlers=handlers, budgets=budgets, tools=tools, url=["http://a:1", "http://b:2"]
    )
    handlers.clear(), budgets.clear(), tools.clear()
    assert dict(settings.handlers or {}) == {"xerj_search": handler}
    assert dict(settings.budgets or {}) == {"xerj_search": 3000} and settings.tools == (CUSTOM,)
    assert settings.url == ("http://a:1", "http://b:2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.budget = 5000  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.budgets["x"] = 1  # type: ignore[index]


def test_one_set_of_keywords_serves_both_dispatchers() -> None:
    keywords: dict[str, Any] = {"url": "http://127.0.0.1:9", "budget": 4000, "deadline": 3.0}
    sync, asynchronous = Dispatcher(**keywords), AsyncDispatcher(**keywords)
    assert (sync.url, sync._core.budget, asynchronous.deadline) == ("http://127.0.0.1:9", 4000, 3.0)
    assert asynchronous._core.budget == 4000
    close(sync, asynchronous)


@pytest.mark.parametrize("kind", [Policy, AgentOptions, Settings])
def test_options_objects_are_made_with_keywords_only(kind: Any) -> None:
    with pytest.raises(TypeError, match="positional argument"):
        kind(1)


def test_the_options_object_of_the_loop_is_exported_and_the_dispatchers_have_none() -> None:
    assert "AgentOptions" in xerj_tools.__all__ and "Policy" in xerj_tools.__all__
    assert not hasattr(xerj_tools, "DispatchOptions")


TYPED = """
from xerj_tools import AgentOptions, AsyncDispatcher, Dispatcher, Policy, run_agent

d = Dispatcher(budget=8000, deadline=5.0, policy=Policy(max_size=5))
e = Dispatcher(budgett=8000)
f = Dispatcher(pool_size="ten")
g = AsyncDispatcher(max_workers=3)
run_agent(None, model="m", messages="hi", dispatcher=d, options=AgentOptions(max_turns=3))
run_agent(None, model="m", messages="hi", dispatcher=d, max_turns=3)
AgentOptions(max_turn=2)
Policy(("*",))
"""


@pytest.mark.slow
def test_a_type_checker_checks_each_keyword(tmp_path: Any) -> None:
    """The keywords are real parameters: mypy refuses an unknown name or a wrong type."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "typed.py").write_text(TYPED)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "typed.py"],
                         cwd=tmp_path, env={**os.environ, "MYPYPATH": str(root)}, capture_output=True, text=True)  # fmt: skip
    # Only the snippet's own lines: with the oldest dependencies (no orjson, no jsonschema-rs,
    # httpx2's first typed release) mypy also has things to say about the library's imports.
    errors = [
        line
        for line in run.stdout.splitlines()
        if line.startswith("typed.py:") and ": error:" in line
    ]
    assert sorted({line.split(":")[1] for line in errors}, key=int) == ["5", "6", "7", "9", "10", "11"], run.stdout
    assert 'did you mean "budget"' in errors[0]


def test_the_loop_options_pickle_and_copy_whole() -> None:
    import copy
    import pickle

    loop = AgentOptions(max_turns=3, create_options={"temperature": 0})
    assert pickle.loads(pickle.dumps(loop)) == loop == copy.deepcopy(loop) == copy.copy(loop)
