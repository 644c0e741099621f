"""The dispatchers' options: keywords only, each checked when the dispatcher is made; the
`Timeout` and `Limits` value objects, checked when made."""

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
    Limits,
    Policy,
    RetryPolicy,
    Timeout,
    Tool,
)

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
    timeout: Timeout | float = Timeout(call=60.0, connect=5.0, read=30.0),  # noqa: B008
    verify: bool | str | ssl.SSLContext = True,
    limits: Limits = Limits(pool_size=10, max_in_flight="pool", max_response_bytes=32 * MiB, max_workers=8),  # noqa: B008
    repair: bool = True,
    budget: int | Budget = 12_000,  # DEFAULT_BUDGET
    budgets: Mapping[str, int | Budget] | None = None,
    max_buckets: int = 25,
    policy: Policy | None = None,
    sleep: Callable[[float], None] | None = None,  # time.sleep, asyncio.sleep
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
    assert defaults(Dispatcher) == expected == defaults(AsyncDispatcher)
    assert Timeout() == expected["timeout"] and Limits() == expected["limits"]


def test_one_signature_serves_both_dispatchers() -> None:
    """Written once (`BaseDispatcher.__init__`), typed per dispatcher by its client and sleep."""
    assert Dispatcher.__init__ is AsyncDispatcher.__init__
    with Dispatcher(url="http://127.0.0.1:9") as sync:
        assert sync._sleep is time.sleep
    asynchronous = AsyncDispatcher(url="http://127.0.0.1:9")
    assert asynchronous._sleep is not time.sleep and inspect.iscoroutinefunction(asynchronous._sleep)
    close(asynchronous)


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
def test_every_option_is_a_keyword_only_parameter_of_the_real_signature(kind: Any) -> None:
    init = kind.__init__
    assert "__signature__" not in vars(init)  # nothing rewritten at import
    parameters = list(inspect.signature(init).parameters.values())[1:]
    assert parameters[0].name == "registry"
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[1:])
    assert all(p.annotation is not p.empty for p in parameters)  # typed, for IDEs and mypy
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
    for value_object in (Timeout, Limits):  # each field with its default, in help() too
        doc = inspect.getdoc(value_object) or ""
        for field in dataclasses.fields(value_object):
            assert re.search(rf"- ``{field.name}``: [^`]*(`[^`]*`[^`]*)*Default: ", doc), field.name


def handler(arguments: Mapping[str, Any]) -> HttpRequest:
    return HttpRequest("GET", "/")


CUSTOM = Tool(name="notes_count", build=handler, description="Count notes.",
              parameters={"type": "object", "properties": {}})  # fmt: skip


def clock() -> float:
    return 42.0


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
    "timeout": (Timeout(call=5.0), lambda d: d.timeout.call),
    "verify": (False, lambda d: d._settings.verify),
    "limits": (Limits(pool_size=3), lambda d: (d._settings.pool_size, d._gate.limit)),
    "repair": (False, lambda d: d._core.repair),
    "budget": (Budget(tokens=900), lambda d: d._core.budget),
    "budgets": ({"xerj_search": 2000}, lambda d: d._core.budgets),
    "max_buckets": (5, lambda d: d._core.max_buckets),
    "policy": (Policy(max_size=7), lambda d: d.policy),
    "clock": (clock, lambda d: d._core.clock()),
}

# each field of the value objects: (a value for its keyword, what of a dispatcher shows it)
FIELD_EFFECTS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "Timeout.call": (Timeout(call=5.0), lambda d: d.timeout.call),
    "Timeout.connect": (Timeout(connect=1.5), lambda d: d._settings.connect_timeout),
    "Timeout.read": (Timeout(read=7.0), lambda d: (d._settings.read_timeout, d._gate._pool_timeout)),
    "Limits.pool_size": (Limits(pool_size=3), lambda d: (d._settings.pool_size, d._gate.limit)),
    "Limits.max_in_flight": (Limits(max_in_flight=4), lambda d: d._gate.limit),
    "Limits.max_response_bytes": (Limits(max_response_bytes=2048), lambda d: d._settings.max_response_bytes),
    "Limits.max_workers": (Limits(max_workers=2), lambda d: d.limits.max_workers),
}


def test_every_keyword_and_field_has_a_case() -> None:
    assert set(EFFECTS) == set(defaults(Dispatcher)) - {"registry", "client", "sleep"}
    assert set(FIELD_EFFECTS) == {
        f"{kind.__name__}.{f.name}" for kind in (Timeout, Limits) for f in dataclasses.fields(kind)
    }


def close(*dispatchers: Any) -> None:
    for dispatcher in dispatchers:
        if isinstance(dispatcher, AsyncDispatcher):
            asyncio.run(dispatcher.aclose())
        else:
            dispatcher.close()


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize("name", [*EFFECTS, *FIELD_EFFECTS])
def test_each_keyword_and_each_field_of_timeout_and_limits_changes_the_dispatcher(kind: Any, name: str) -> None:
    value, effect = {**EFFECTS, **FIELD_EFFECTS}[name]
    given, plain = kind(**{name.split(".")[0].lower(): value}), kind()  # "Timeout.call": timeout=
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


GROUPED = ["deadline", "connect_timeout", "read_timeout", "pool_size", "max_in_flight",
           "max_response_bytes", "max_workers"]  # fmt: skip


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize("name", GROUPED)
def test_a_knob_of_timeout_or_limits_is_no_keyword_of_its_own(kind: Any, name: str) -> None:
    """One way: ``timeout=Timeout(call=...)``, ``limits=Limits(pool_size=...)``."""
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{name}'"):
        kind(**{name: 2})


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
    ("timeout", 0, "timeout must be a positive number of seconds"),
    ("timeout", float("nan"), "timeout must be a positive number of seconds"),
    ("timeout", "5", "timeout must be a Timeout or a number of seconds, not str"),
    ("timeout", True, "timeout must be a Timeout or a number of seconds, not bool"),
    ("timeout", None, "timeout must be a Timeout or a number of seconds, not NoneType"),
    ("verify", 1.5, "verify must be True, False, a CA bundle path or an SSLContext"),
    ("limits", {"pool_size": 3}, "limits must be a Limits, not dict"),
    ("limits", 10, "limits must be a Limits, not int"),
    ("repair", None, "repair must be True or False"),
    ("budget", 10, "a budget must be at least 1000 characters"),
    ("budget", Budget(tokens=10), "at least 250 tokens"),
    ("budgets", {"xerj_search": 5}, "a budget must be at least 1000 characters"),
    ("budgets", [("xerj_search", 5000)], "budgets must map tool names to budgets"),
    ("max_buckets", 0, "max_buckets must be an int of at least 1"),
    ("policy", {"max_size": 3}, "policy must be a Policy"),
    ("clock", 3.0, "clock must be a function"),
]


@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("name", "value", "message"), BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)]
)
def test_a_bad_value_is_refused_when_the_dispatcher_is_made(
    kind: Any, name: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)) as raised:
        kind(**{name: value})
    if name in ("api_key", "authorization"):
        assert str(value) not in str(raised.value)  # a credential is never quoted


def test_no_repr_shows_a_credential() -> None:
    secrets = {"api_key": "sk-live-123456789", "authorization": "Bearer tok-987654321"}
    dispatcher = Dispatcher(budget=8000, **secrets)
    close(dispatcher)
    for text in (repr(dispatcher), str(dispatcher)):
        assert "sk-live-123456789" not in text and "tok-987654321" not in text


def test_what_the_dispatcher_keeps_is_frozen_and_holds_copies() -> None:
    handlers = {"xerj_search": handler}
    budgets = {"xerj_search": 3000}
    tools = [CUSTOM]
    urls = ["http://a:1", "http://b:2"]
    dispatcher = Dispatcher(handlers=handlers, budgets=budgets, tools=tools, url=urls)
    handlers.clear(), budgets.clear(), tools.clear(), urls.clear()
    assert dispatcher.tools["xerj_search"].build is handler and "notes_count" in dispatcher.tools
    assert dispatcher._core.budgets == {"xerj_search": 3000}
    assert dispatcher.urls == ("http://a:1", "http://b:2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        dispatcher.timeout.call = 5.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        dispatcher.limits.pool_size = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        dispatcher.tools["x"] = CUSTOM  # type: ignore[index]
    close(dispatcher)


# ------------------------------------------------------------------ Timeout and Limits


def test_the_value_objects_defaults_reach_the_client() -> None:
    # the defaults themselves: test_the_keywords_and_their_defaults_are_the_documented_ones
    with Dispatcher(url="http://127.0.0.1:9") as dispatcher:
        assert (dispatcher.timeout, dispatcher.limits) == (Timeout(), Limits())
        settings = dispatcher._settings
        assert (settings.connect_timeout, settings.read_timeout, settings.pool_size) == (5.0, 30.0, 10)
        assert settings.max_response_bytes == 32 * MiB and dispatcher._gate is not None
        assert dispatcher._gate.limit == 10


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (2.0, Timeout(call=2.0, connect=2.0, read=2.0)),  # each phase at most the whole
        (10, Timeout(call=10, connect=5.0, read=10)),
        (120.0, Timeout(call=120.0, connect=5.0, read=30.0)),  # the call's bound alone
    ],
)
@pytest.mark.parametrize("kind", [Dispatcher, AsyncDispatcher], ids=["sync", "async"])
def test_a_number_as_timeout_bounds_the_call_and_caps_each_phase(
    kind: Any, number: float, expected: Timeout
) -> None:
    dispatcher = kind(url="http://127.0.0.1:9", timeout=number)
    try:
        assert dispatcher.timeout == expected
        assert dispatcher._settings.connect_timeout == expected.connect
        assert dispatcher._settings.read_timeout == expected.read
    finally:
        close(dispatcher)


VALUE_BAD: list[tuple[Any, str, Any, str]] = [
    (Timeout, "call", float("inf"), "Timeout.call must be a positive number of seconds"),
    (Timeout, "call", -2, "Timeout.call must be a positive number of seconds"),
    (Timeout, "connect", 0, "Timeout.connect must be a positive number of seconds"),
    (Timeout, "read", float("nan"), "Timeout.read must be a positive number of seconds"),
    (Timeout, "read", "30", "Timeout.read must be a positive number of seconds"),
    (Timeout, "call", True, "Timeout.call must be a positive number of seconds"),
    (Limits, "pool_size", 0, "pool_size must be an int of at least 1"),
    (Limits, "pool_size", True, "pool_size must be an int of at least 1"),
    (Limits, "max_response_bytes", 1.5, "max_response_bytes must be an int of at least 1"),
    (Limits, "max_workers", 0, "max_workers must be an int of at least 1"),
    (Limits, "max_in_flight", 0, 'max_in_flight must be a positive int, None or "pool"'),
    (Limits, "max_in_flight", "all", 'max_in_flight must be a positive int, None or "pool"'),
]


@pytest.mark.parametrize(
    ("kind", "name", "value", "message"),
    VALUE_BAD,
    ids=[f"{k.__name__}.{n}-{i}" for i, (k, n, _, _) in enumerate(VALUE_BAD)],
)
def test_a_bad_value_is_refused_when_the_value_object_is_made(
    kind: Any, name: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}$"):
        kind(**{name: value})


def test_the_value_objects_are_frozen_and_compare_by_value() -> None:
    assert Timeout(read=7.0) == Timeout(read=7.0) != Timeout()
    assert hash(Limits(pool_size=3)) == hash(Limits(pool_size=3))
    assert repr(Timeout(call=5)) == "Timeout(call=5, connect=5.0, read=30.0)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().pool_size = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout'"):
        Timeout(timeout=5)  # type: ignore[call-arg]


@pytest.mark.parametrize("kind", [Policy, AgentOptions, Timeout, Limits])
def test_options_objects_are_made_with_keywords_only(kind: Any) -> None:
    with pytest.raises(TypeError, match="positional argument"):
        kind(1)


def test_the_options_object_of_the_loop_is_exported_and_the_dispatchers_have_none() -> None:
    assert "AgentOptions" in xerj_tools.__all__ and "Policy" in xerj_tools.__all__
    assert not hasattr(xerj_tools, "DispatchOptions")


TYPED = """
from xerj_tools import AgentOptions, AsyncDispatcher, Dispatcher, Limits, Policy, run_agent

d = Dispatcher(budget=8000, timeout=5.0, policy=Policy(max_size=5), limits=Limits(pool_size=4))
e = Dispatcher(budgett=8000)
f = Dispatcher(limits=Limits(pool_size="ten"))
g = AsyncDispatcher(max_workers=3)
run_agent(None, model="m", messages="hi", dispatcher=d, options=AgentOptions(max_turns=3))
run_agent(None, model="m", messages="hi", dispatcher=d, max_turns=3)
AgentOptions(max_turn=2)
Policy(("*",))
AsyncDispatcher(client=d)
Dispatcher(timeout="5")
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
    assert sorted({line.split(":")[1] for line in errors}, key=int) == ["5", "6", "7", "9", "10", "11", "12", "13"], run.stdout
    assert 'did you mean "budget"' in errors[0]


def test_the_loop_options_pickle_and_copy_whole() -> None:
    import copy
    import pickle

    loop = AgentOptions(max_turns=3, create_options={"temperature": 0})
    assert pickle.loads(pickle.dumps(loop)) == loop == copy.deepcopy(loop) == copy.copy(loop)
