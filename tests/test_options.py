"""`DispatchOptions`: the dispatchers' keywords carried once, with the keyword forms kept."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
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
    AsyncDispatcher,
    Budget,
    ConfigurationError,
    Dispatcher,
    DispatchOptions,
    HttpRequest,
    Policy,
    RetryPolicy,
    Tool,
)
from xerj_tools._dispatch._options import AsyncDispatchKeywords, DispatchKeywords

MiB = 1024 * 1024


# The dispatchers' signatures as they were before `DispatchOptions` (main at 803c3bd), copied
# verbatim: the options' defaults must stay what callers got.
def dispatcher_before(
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


def test_the_defaults_are_those_of_the_keywords_before() -> None:
    before = defaults(dispatcher_before)
    fields = {f.name: f.default for f in dataclasses.fields(DispatchOptions)}
    assert fields == {name: before[name] for name in fields}
    # what is not an option stays a keyword of each dispatcher, with the same default
    assert set(before) - set(fields) == {"registry", "client", "sleep"}
    now = defaults(Dispatcher)
    assert {**before, "options": None} == now
    assert before["sleep"] is now["sleep"] is time.sleep
    async_now = defaults(AsyncDispatcher)
    assert set(async_now) == set(now) - {"max_workers"}


def test_the_keyword_types_mirror_the_fields() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(DispatchOptions)}

    def typed(keywords: type) -> dict[str, str]:
        return {k: getattr(v, "__forward_arg__", v) for k, v in keywords.__annotations__.items()}

    assert typed(DispatchKeywords) == fields
    assert typed(AsyncDispatchKeywords) == {k: v for k, v in fields.items() if k != "max_workers"}


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


# field -> (a value other than its default, what of a dispatcher shows it)
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


def test_every_field_has_a_case() -> None:
    assert set(EFFECTS) == {f.name for f in dataclasses.fields(DispatchOptions)}


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize("name", list(EFFECTS))
def test_a_keyword_and_the_same_option_make_the_same_dispatcher(kind: Any, name: str) -> None:
    if kind is AsyncDispatcher and name == "max_workers":
        pytest.skip("Dispatcher only")
    value, effect = EFFECTS[name]
    by_keyword = kind(**{name: value})
    by_options = kind(options=DispatchOptions(**{name: value}))
    plain = kind()
    try:
        assert by_keyword.options == by_options.options != plain.options
        assert effect(by_keyword) == effect(by_options) != effect(plain)
        assert getattr(by_options.options, name) == value or name in ("tools",)
    finally:
        for dispatcher in (by_keyword, by_options, plain):
            close(dispatcher)


def close(*dispatchers: Any) -> None:
    for dispatcher in dispatchers:
        if isinstance(dispatcher, AsyncDispatcher):
            asyncio.run(dispatcher.aclose())
        else:
            dispatcher.close()


def test_async_dispatcher_ignores_max_workers_in_options_but_refuses_the_keyword() -> None:
    close(AsyncDispatcher(options=DispatchOptions(max_workers=2)))
    with pytest.raises(TypeError, match=r"AsyncDispatcher.*'max_workers'"):
        AsyncDispatcher(max_workers=2)  # type: ignore[call-arg]


def test_a_keyword_beside_options_wins_and_the_rest_is_kept() -> None:
    base = DispatchOptions(budget=5000, deadline=9.0, api_key="k" * 12)
    dispatcher = Dispatcher(options=base, budget=8000)
    assert dispatcher.options == base.replace(budget=8000)
    assert (dispatcher._core.budget, dispatcher.deadline) == (8000, 9.0)
    assert base.budget == 5000  # frozen: the shared value is unchanged
    plain = Dispatcher(options=base)
    assert plain.options is base
    close(dispatcher, plain)


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
def test_an_unknown_keyword_is_a_type_error_with_the_nearest_name(kind: Any) -> None:
    with pytest.raises(
        TypeError, match=r"got an unexpected keyword argument 'budgett'; did you mean 'budget'"
    ):
        kind(budgett=8000)
    with pytest.raises(TypeError, match=r"'colour'$"):
        kind(colour="red")
    with pytest.raises(TypeError, match="options= takes a DispatchOptions, not dict"):
        kind(options={"budget": 8000}, budget=9000)
    with pytest.raises(
        TypeError, match=r"DispatchOptions.replace\(\) got an unexpected keyword argument 'dedline'"
    ):
        DispatchOptions().replace(dedline=3)


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


@pytest.mark.parametrize(
    ("name", "value", "message"), BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)]
)
def test_a_bad_value_is_refused_when_the_options_are_made(
    name: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        DispatchOptions(**{name: value})
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        DispatchOptions().replace(**{name: value})
    with pytest.raises(ConfigurationError) as raised:
        Dispatcher(**{name: value})
    if name in ("api_key", "authorization"):
        assert str(value) not in str(raised.value)  # a credential is never quoted


def test_the_repr_shows_what_differs_and_never_a_secret() -> None:
    options = DispatchOptions(
        api_key="sk-live-123456789", authorization="Bearer tok-987654321", budget=8000
    )
    dispatcher = Dispatcher(options=options)
    close(dispatcher)
    for text in (repr(options), str(options), repr(dispatcher)):
        assert "sk-live-123456789" not in text and "tok-987654321" not in text
    assert (
        repr(options)
        == "DispatchOptions(api_key=<redacted>, authorization=<redacted>, budget=8000)"
    )
    assert repr(DispatchOptions()) == "DispatchOptions()"


def test_the_options_are_frozen_and_hold_copies() -> None:
    handlers = {"xerj_search": handler}
    budgets = {"xerj_search": 3000}
    tools = [CUSTOM]
    options = DispatchOptions(
        handlers=handlers, budgets=budgets, tools=tools, url=["http://a:1", "http://b:2"]
    )
    handlers.clear(), budgets.clear(), tools.clear()
    assert dict(options.handlers or {}) == {"xerj_search": handler}
    assert dict(options.budgets or {}) == {"xerj_search": 3000} and options.tools == (CUSTOM,)
    assert options.url == ("http://a:1", "http://b:2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.budget = 5000  # type: ignore[misc]
    with pytest.raises(TypeError):
        options.budgets["x"] = 1  # type: ignore[index]
    assert dataclasses.replace(options, budget=6000).budget == 6000


def test_one_options_object_serves_both_dispatchers() -> None:
    options = DispatchOptions(url="http://127.0.0.1:9", budget=4000, deadline=3.0)
    sync, asynchronous = Dispatcher(options=options), AsyncDispatcher(options=options)
    assert sync.options is asynchronous.options is options
    assert (sync.url, sync._core.budget, asynchronous.deadline) == ("http://127.0.0.1:9", 4000, 3.0)
    close(sync, asynchronous)


def test_the_options_are_documented_field_by_field() -> None:
    doc = DispatchOptions.__doc__ or ""
    for f in dataclasses.fields(DispatchOptions):
        [line] = [x for x in doc.splitlines() if x.startswith(f"- ``{f.name}``: ")]
        assert "Default: " in line
    assert "``options``" in (Dispatcher.__doc__ or "") and "``options``" in (
        AsyncDispatcher.__doc__ or ""
    )


def test_the_options_are_exported_without_the_http_stack() -> None:
    assert xerj_tools.DispatchOptions is DispatchOptions and "DispatchOptions" in xerj_tools.__all__
    code = "import sys, xerj_tools; xerj_tools.DispatchOptions(budget=5000); print('httpx2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


TYPED = """
from xerj_tools import AgentOptions, AsyncDispatcher, Dispatcher, DispatchOptions, run_agent

d = Dispatcher(budget=8000, deadline=5.0, options=DispatchOptions(budget=5000).replace(deadline=2.0))
e = Dispatcher(budgett=8000)
f = Dispatcher(pool_size="ten")
g = AsyncDispatcher(max_workers=3)
run_agent(None, model="m", messages="hi", dispatcher=d, max_turns=3, temperature=0)
run_agent(None, model="m", messages="hi", dispatcher=d, max_turn=3)
run_agent(None, model="m", messages="hi", dispatcher=d, options=AgentOptions(max_turns=2), stream=True)
"""


@pytest.mark.slow
def test_a_type_checker_checks_each_keyword(tmp_path: Any) -> None:
    """The keywords are typed (``Unpack``): mypy refuses an unknown name or a wrong type."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
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
    assert [line.split(":")[1] for line in errors] == ["5", "6", "7", "9"], run.stdout
    assert 'did you mean "budget"' in errors[0] and 'did you mean "max_turns"' in errors[3]


def test_the_options_pickle_and_copy_whole() -> None:
    import copy
    import pickle

    from xerj_tools import AgentOptions

    options = DispatchOptions(
        budgets={"xerj_search": 2000}, handlers={"xerj_search": handler}, api_key="k" * 12
    )
    loop = AgentOptions(max_turns=3, create_options={"temperature": 0})
    for value in (options, loop):
        assert (
            pickle.loads(pickle.dumps(value)) == value == copy.deepcopy(value) == copy.copy(value)
        )
