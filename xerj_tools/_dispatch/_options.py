"""The dispatcher's options, carried once: `DispatchOptions`, and keywords turned into it.

As httpx groups its knobs in `Timeout` and `Limits`, a dispatcher's configuration is one frozen,
validated value: made once, shared by a `Dispatcher` and an `AsyncDispatcher`, changed with
``replace``. The keyword forms (``Dispatcher(url=..., budget=8000)``) stay: they are turned into
a `DispatchOptions` in one place (`from_keywords`), and on top of ``options=`` the keywords win
(``Dispatcher(options=base, deadline=10)`` is ``base.replace(deadline=10)``).

Why ``**keywords: Unpack[...]`` rather than 22 keywords written out per dispatcher: one list of
names, types and defaults (the dataclass, mirrored by a `TypedDict` that a test holds equal), and
the keywords a caller actually passed are known, which the rule above needs. `Unpack` comes from
`typing_extensions` under ``TYPE_CHECKING`` only (the `openai` SDK, a dependency, depends on it);
mypy and pyright check each keyword's name and type through it, and `advertise` gives each entry
point an `inspect.signature` that lists every keyword with its default, for `help()` and IPython.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import ssl
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from .._exceptions import ConfigurationError
from .._http._nodes import check_url, header_safe
from .._http._retry import RetryPolicy
from .._message._budget import DEFAULT_BUDGET, Budget, checked_budget
from ..tools import Handler, Tool
from ._keywords import advertise, names, options_repr, plain_fields, rebuilt, unexpected
from ._policy import Policy

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._http._gate import MaxInFlight

__all__ = [
    "DEFAULT_DEADLINE", "PARAMETERS", "AsyncDispatchKeywords", "DispatchKeywords", "DispatchOptions",
    "check_max_in_flight", "documented", "from_keywords",
]  # fmt: skip

DEFAULT_DEADLINE = 60.0
"""Seconds one call may take in all, by default: attempts, backoff waits and reads together."""

_T = TypeVar("_T", bound=type)


def _count(name: str, value: Any, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(f"{name} must be an int of at least {least}")


def _seconds(name: str, value: Any, zero: bool = False) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        least = "zero or more" if zero else "a positive number of"
        raise ConfigurationError(f"{name} must be {least} seconds")


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False")


def _of_type(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ConfigurationError(f"{name} must be {what} or None, not {type(value).__name__}")


def check_max_in_flight(value: Any) -> None:
    if value is None or value == "pool":
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError('max_in_flight must be a positive int, None or "pool"')


# The constructor keywords of both dispatchers, in words: `documented` renders them into each
# class's docstring, in signature order, so `help(Dispatcher)` lists every one of them and the
# two dispatchers cannot drift apart (a test checks that every keyword is there).
PARAMETERS: Mapping[str, str] = MappingProxyType(
    {
        "options": "a `DispatchOptions` holding the keywords below, made once and shared; a "
        "keyword given beside it wins. Default: None, every keyword's default.",
        "registry": "the `ToolRegistry` whose tools the model may call. Default: the bundled "
        "``tools.json`` (`load_registry()`).",
        "url": "XERJ's base URL, or a list of node URLs served round-robin with failover. Default: "
        "``$XERJ_URL`` (comma-separated for several nodes), else ``http://localhost:9200``.",
        "api_key": "sent as ``Authorization: ApiKey <key>``; never logged or shown. Default: "
        "``$XERJ_API_KEY``, else no credentials.",
        "authorization": 'a whole ``Authorization`` header value (``"Bearer <token>"``); it '
        "wins over `api_key`. Default: None.",
        "client": "your own {client}, left open by `{close}`; its pool, timeouts and TLS are "
        "yours. Default: None, an owned client built from the keywords below.",
        "handlers": "``{{tool name: handler}}``: a plain function from validated arguments to an "
        "`HttpRequest`, for a tool of your own or to replace one of the library's. Default: None.",
        "tools": "your own `Tool` objects (docs/tools.md), each defined in `registry` or carrying "
        "its definition. "
        "Default: none.",
        "retry": "how a XERJ request is retried (`RetryPolicy`). Default: ``RetryPolicy()``, 4 "
        "attempts within 30 seconds.",
        "rerank_fallback": "when XERJ refuses ``rerank``, repeat the search once without it and "
        "say so (False: answer ``rerank_unavailable``). Default: True.",
        "rerank_memory_seconds": "seconds a node's refusal of rerank is remembered, so later calls "
        "skip the doomed attempt; 0 remembers nothing. Default: 300.0.",
        "connect_timeout": "seconds to open a connection to a node. Default: 5.0.",
        "read_timeout": "seconds for each read or write on a connection, and to get a pooled "
        "connection. Default: 30.0.",
        "verify": "TLS verification: True, False, a CA bundle path or an `ssl.SSLContext`. "
        "Default: True.",
        "pool_size": "connections kept per owned client (and at most open at once). Default: 10.",
        "max_response_bytes": "largest decoded response body read, in bytes; a larger one answers "
        "``response_too_large``. Default: 33554432 (32 MiB), or the policy's lower cap.",
        "repair": "repair argument mistakes that have exactly one reading, and say so (False: "
        "strict). Default: True.",
        "budget": "the most a tool message may hold: characters (an int) or a `Budget` in tokens; "
        "a larger result is fitted with a note on what was cut. Default: 12000 characters.",
        "budgets": "``{{tool name: budget}}`` for tools that need another. Default: None.",
        "max_buckets": "aggregation buckets kept per bucket list; the rest are counted. "
        "Default: 25.",
        "policy": "the operator's guardrails (`Policy`). Default: None, which means "
        "``Policy()``: no dot-indices, no oversized arguments (docs/policy.md).",
        "max_workers": "threads that run a turn's calls at once in `dispatch_many` (`Dispatcher` "
        "only: `AsyncDispatcher` runs them as tasks and ignores it). Default: 8.",
        "max_in_flight": "requests on the wire at once, across threads or tasks; calls over it "
        "wait their turn, first come first served, within `deadline` and the pool timeout. "
        "``'pool'``: the pool's connection limit (a client of your own: its ``max_connections`` "
        "when readable, else no bound); an int sets it; None removes it (docs/configuration.md). "
        "Default: ``'pool'``.",
        "deadline": "seconds one call may take in all: attempts, backoff waits and reads together. "
        "Default: 60.0.",
        "sleep": "{sleep}, called with seconds; injectable so tests do not wait. "
        "Default: {sleep_default}.",
        "clock": "monotonic seconds for deadlines, backoff and elapsed times. Default: "
        "``time.monotonic``.",
    }
)


@dataclass(frozen=True, repr=False)
class DispatchOptions:
    """The configuration of a `Dispatcher` or an `AsyncDispatcher`, checked when it is made.

    ``Dispatcher(options=DispatchOptions(...))`` and ``Dispatcher(url=..., ...)`` are the same
    dispatcher; keywords given beside `options` change it (the keyword wins). Shared by both
    dispatchers: `max_workers` is `Dispatcher`'s alone (`AsyncDispatcher` runs a turn's calls as
    tasks and ignores it). What stays out: the `registry` (what is served, the first argument),
    the `client` and the `sleep` function, whose types differ between the two dispatchers.
    A bad value raises `ConfigurationError` here; the repr never shows `api_key` or
    `authorization`, and lists only the fields that differ from their defaults.
    """

    url: str | Sequence[str] | None = None
    api_key: str | None = None
    authorization: str | None = None
    handlers: Mapping[str, Handler] | None = None
    tools: Sequence[Tool] = ()
    retry: RetryPolicy | None = None
    rerank_fallback: bool = True
    rerank_memory_seconds: float = 300.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    verify: bool | str | ssl.SSLContext = True
    pool_size: int = 10
    max_response_bytes: int = 32 * 1024 * 1024
    repair: bool = True
    budget: int | Budget = DEFAULT_BUDGET
    budgets: Mapping[str, int | Budget] | None = None
    max_buckets: int = 25
    policy: Policy | None = None
    max_workers: int = 8
    max_in_flight: MaxInFlight = "pool"
    deadline: float = DEFAULT_DEADLINE
    clock: Callable[[], float] = field(default=time.monotonic)

    def __post_init__(self) -> None:
        if self.url is not None:
            urls = [u.strip() for u in self.url.split(",")] if isinstance(self.url, str) else None
            if urls is None:
                if not isinstance(self.url, Sequence) or not all(
                    isinstance(u, str) for u in self.url
                ):
                    raise ConfigurationError("url must be a string, a list of strings or None")
                urls = list(self.url)
                object.__setattr__(self, "url", tuple(self.url))
            if not urls or not all(urls):
                raise ConfigurationError("give at least one XERJ URL")
            for url in urls:
                check_url(url)
        for name in ("api_key", "authorization"):  # the value is never quoted
            _of_type(name, value := getattr(self, name), str, "a string")
            if value and not header_safe(value.strip()):
                what = "API key (api_key)" if name == "api_key" else name
                raise ConfigurationError(
                    f"the {what} holds a character an HTTP header cannot carry (non-ASCII, a line "
                    "break or a control character); check how it was copied"
                )
        if self.handlers is not None:
            if not isinstance(self.handlers, Mapping) or not all(
                isinstance(k, str) and callable(v) for k, v in self.handlers.items()
            ):
                raise ConfigurationError("handlers must map tool names to functions")
            object.__setattr__(self, "handlers", MappingProxyType(dict(self.handlers)))
        if isinstance(self.tools, (str, Mapping)) or not isinstance(self.tools, Collection):
            raise ConfigurationError("tools must be a sequence of Tool objects")
        if not all(isinstance(t, Tool) for t in self.tools):
            raise ConfigurationError("tools must be a sequence of Tool objects")
        object.__setattr__(self, "tools", tuple(self.tools))
        _of_type("retry", self.retry, RetryPolicy, "a RetryPolicy")
        _of_type("policy", self.policy, Policy, "a Policy")
        _flag("rerank_fallback", self.rerank_fallback)
        _flag("repair", self.repair)
        _seconds("rerank_memory_seconds", self.rerank_memory_seconds, zero=True)
        _seconds("connect_timeout", self.connect_timeout)
        _seconds("read_timeout", self.read_timeout)
        _seconds("deadline", self.deadline)
        if not isinstance(self.verify, (bool, str, ssl.SSLContext)):
            raise ConfigurationError(
                "verify must be True, False, a CA bundle path or an SSLContext"
            )
        for name in ("pool_size", "max_response_bytes", "max_buckets", "max_workers"):
            _count(name, getattr(self, name))
        checked_budget(self.budget)
        if self.budgets is not None:
            if not isinstance(self.budgets, Mapping):
                raise ConfigurationError("budgets must map tool names to budgets")
            for value in self.budgets.values():
                checked_budget(value)
            object.__setattr__(self, "budgets", MappingProxyType(dict(self.budgets)))
        check_max_in_flight(self.max_in_flight)
        if not callable(self.clock):
            raise ConfigurationError("clock must be a function returning monotonic seconds")

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (checked again); an unknown name raises `TypeError`."""
        unexpected(f"{type(self).__name__}.replace", changes, names(type(self)))
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        return options_repr(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt, (type(self), plain_fields(self))


def _document(cls: type) -> None:
    """The fields in words (`PARAMETERS`), added to `DispatchOptions`' docstring."""
    words = {"client": "", "close": "", "sleep": "", "sleep_default": ""}
    lines = ["", "Fields, each a keyword of the dispatchers too:", ""]
    for f in dataclasses.fields(cls):
        lines.append(f"- ``{f.name}``: {PARAMETERS[f.name].format(**words)}")
    cls.__doc__ = inspect.cleandoc(cls.__doc__ or "") + "\n" + "\n".join(lines) + "\n"


_document(DispatchOptions)


class AsyncDispatchKeywords(TypedDict, total=False):
    """`AsyncDispatcher`'s keywords: `DispatchOptions`' fields but `max_workers`."""

    url: str | Sequence[str] | None
    api_key: str | None
    authorization: str | None
    handlers: Mapping[str, Handler] | None
    tools: Sequence[Tool]
    retry: RetryPolicy | None
    rerank_fallback: bool
    rerank_memory_seconds: float
    connect_timeout: float
    read_timeout: float
    verify: bool | str | ssl.SSLContext
    pool_size: int
    max_response_bytes: int
    repair: bool
    budget: int | Budget
    budgets: Mapping[str, int | Budget] | None
    max_buckets: int
    policy: Policy | None
    max_in_flight: MaxInFlight
    deadline: float
    clock: Callable[[], float]


class DispatchKeywords(AsyncDispatchKeywords, total=False):
    """`DispatchOptions`' fields as keywords of `Dispatcher` (typed by ``Unpack``); those of
    `AsyncDispatcher` are the same without `max_workers`."""

    max_workers: int


def documented(
    client: str, close: str, sleep: str, sleep_default: str, keywords: type
) -> Callable[[_T], _T]:
    """Append the constructor's arguments, in order (its own, then `keywords`, the options it
    takes as keywords), to the class docstring, and give ``__init__`` the signature that lists
    every keyword with its default (`advertise`)."""

    def decorate(cls: _T) -> _T:
        words = {"client": client, "close": close, "sleep": sleep, "sleep_default": sleep_default}
        init = cls.__init__  # type: ignore[misc]
        names = keywords.__annotations__
        fields = [f for f in dataclasses.fields(DispatchOptions) if f.name in names]
        advertise(init, {f.name: f.default for f in fields}, {f.name: f.type for f in fields})
        lines = ["", "Arguments, every one optional (all but `registry` are keyword-only):", ""]
        for name in inspect.signature(init).parameters:
            if name in PARAMETERS:
                lines.append(f"- ``{name}``: {PARAMETERS[name].format(**words)}")
        cls.__doc__ = inspect.cleandoc(cls.__doc__ or "") + "\n" + "\n".join(lines) + "\n"
        return cls

    return decorate


def from_keywords(
    owner: str, options: DispatchOptions | None, keywords: Mapping[str, Any], known: Collection[str]
) -> DispatchOptions:
    """`options` (default: ``DispatchOptions()``) with `keywords` on top; `TypeError` for a
    keyword `owner` does not take, or an `options` that is no `DispatchOptions`."""
    unexpected(owner, keywords, known)
    if options is None:
        return DispatchOptions(**keywords)
    if not isinstance(options, DispatchOptions):
        raise TypeError(f"options= takes a DispatchOptions, not {type(options).__name__}")
    return options.replace(**keywords) if keywords else options
