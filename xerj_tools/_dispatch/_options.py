"""The dispatcher's keywords checked once: `Settings`, what `Dispatcher` and `AsyncDispatcher`
share.

The dispatchers take their options as keywords, the way `httpx.Client` does, with a value object
where one concern has several knobs that travel together (`RetryPolicy`, `Policy`, `Budget`).
`Settings` is the checked, frozen record of those keywords that both dispatchers build from: a
bad value raises `ConfigurationError` here, and its repr never shows a credential. It is not a
second way in: a dispatcher takes keywords only (docs/configuration.md says why).
"""

from __future__ import annotations

import math
import ssl
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigurationError
from .._http._nodes import check_url, header_safe
from .._http._retry import RetryPolicy
from .._message._budget import DEFAULT_BUDGET, Budget, checked_budget
from ..tools import Handler, Tool
from ._keywords import options_repr
from ._policy import Policy

if TYPE_CHECKING:
    from .._http._gate import MaxInFlight

__all__ = ["DEFAULT_DEADLINE", "Settings", "check_max_in_flight"]

DEFAULT_DEADLINE = 60.0
"""Seconds one call may take in all, by default: attempts, backoff waits and reads together."""


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


@dataclass(frozen=True, kw_only=True, repr=False)
class Settings:
    """A dispatcher's keywords (all but `registry`, `client` and `sleep`), checked when made.

    The defaults are the dispatchers' (their keywords are documented on `Dispatcher`); grouped
    as the signature groups them: where XERJ is, what is served, what the model reads, how a
    request is sent. Mappings given are copied, read-only; a list of URLs becomes a tuple.
    """

    # where XERJ is, and the credentials
    url: str | Sequence[str] | None = None
    api_key: str | None = None
    authorization: str | None = None
    # what is served
    handlers: Mapping[str, Handler] | None = None
    tools: Sequence[Tool] = ()
    # what the model may do and read
    policy: Policy | None = None
    repair: bool = True
    budget: int | Budget = DEFAULT_BUDGET
    budgets: Mapping[str, int | Budget] | None = None
    max_buckets: int = 25
    rerank_fallback: bool = True
    rerank_memory_seconds: float = 300.0
    # how a request is sent
    retry: RetryPolicy | None = None
    deadline: float = DEFAULT_DEADLINE
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    verify: bool | str | ssl.SSLContext = True
    pool_size: int = 10
    max_response_bytes: int = 32 * 1024 * 1024
    max_in_flight: MaxInFlight = "pool"
    max_workers: int = 8
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

    def __repr__(self) -> str:
        return options_repr(self)
