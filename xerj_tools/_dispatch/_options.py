"""The dispatchers' options checked: the `Timeout` and `Limits` value objects, and the checks of
the other keywords.

The dispatchers take their options as keywords, the way `httpx.Client` does, with a value object
where one concern has several knobs that travel together: `Timeout` and `Limits` (httpx's own
two), `RetryPolicy`, `Policy` and `Budget`. `BaseDispatcher.__init__` checks each keyword with
the functions here, once for both dispatchers: a bad value raises `ConfigurationError` that
never quotes a credential.
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._exceptions import ConfigurationError
from .._http._nodes import checked_urls, header_safe
from .._message._budget import checked_budget
from ..tools import Tool

if TYPE_CHECKING:
    from .._http._gate import MaxInFlight

__all__ = [
    "DEFAULT_LIMITS", "DEFAULT_TIMEOUT", "Limits", "Timeout", "check_budgets", "check_credential",
    "check_handlers", "check_url_option", "check_verify", "checked_limits",
    "checked_timeout", "checked_tools", "count", "flag", "of_type", "seconds",
]  # fmt: skip


def count(name: str, value: Any, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(f"{name} must be an int of at least {least}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def seconds(name: str, value: Any, zero: bool = False) -> None:
    if not _number(value) or not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        least = "zero or more" if zero else "a positive number of"
        raise ConfigurationError(f"{name} must be {least} seconds")


def flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False")


def of_type(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ConfigurationError(f"{name} must be {what} or None, not {type(value).__name__}")


@dataclass(frozen=True, kw_only=True)
class Timeout:
    """How long a dispatcher waits, in seconds; checked when made.

    - ``call``: one call in all: its attempts, the waits between them and every read, the
      repeat without rerank and the index listing after ``index_not_found`` included. A call
      past it answers ``timeout`` with ``deadline`` in the error. Default: 60.0.
    - ``connect``: to open a connection to a node. Default: 5.0.
    - ``read``: per read or write, and to get a connection from the owned client's pool.
      Default: 30.0.

    A dispatcher given a number ``x`` as its ``timeout`` takes ``Timeout(call=x)`` with
    ``connect`` and ``read`` at most ``x``: like ``httpx.Client(timeout=x)``, one number bounds
    every phase, and the call as a whole.
    """

    call: float = 60.0
    connect: float = 5.0
    read: float = 30.0

    def __post_init__(self) -> None:
        for name in ("call", "connect", "read"):
            seconds(f"Timeout.{name}", getattr(self, name))


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How much a dispatcher holds at once; checked when made.

    - ``pool_size``: connections kept by the owned client (and at most open). Default: 10.
    - ``max_in_flight``: requests on the wire at once, the rest wait their turn: ``"pool"``
      (the pool's limit), an int, or None (no bound; docs/configuration.md). Default: ``"pool"``.
    - ``max_response_bytes``: the largest body read (a `Policy` may set a lower cap).
      Default: 33554432 (32 MiB).
    - ``max_workers``: threads that run a turn's calls at once in `Dispatcher.dispatch_many`;
      `AsyncDispatcher` runs a turn's calls as tasks and does not read it. Default: 8.
    """

    pool_size: int = 10
    max_in_flight: MaxInFlight = "pool"
    max_response_bytes: int = 32 * 1024 * 1024
    max_workers: int = 8

    def __post_init__(self) -> None:
        count("pool_size", self.pool_size)
        bound = self.max_in_flight  # None, "pool", or a positive int
        whole = isinstance(bound, int) and not isinstance(bound, bool) and bound >= 1
        if bound is not None and bound != "pool" and not whole:
            raise ConfigurationError('max_in_flight must be a positive int, None or "pool"')
        count("max_response_bytes", self.max_response_bytes)
        count("max_workers", self.max_workers)


DEFAULT_TIMEOUT = Timeout()
DEFAULT_LIMITS = Limits()


def checked_timeout(value: Any) -> Timeout:
    """A dispatcher's ``timeout``: a `Timeout`, or a number of seconds (see `Timeout`)."""
    if isinstance(value, Timeout):
        return value
    if not _number(value):
        raise ConfigurationError(
            f"timeout must be a Timeout or a number of seconds, not {type(value).__name__}"
        )
    seconds("timeout", value)
    return Timeout(
        call=value,
        connect=min(value, DEFAULT_TIMEOUT.connect),
        read=min(value, DEFAULT_TIMEOUT.read),
    )


def checked_limits(value: Any) -> Limits:
    if not isinstance(value, Limits):
        raise ConfigurationError(f"limits must be a Limits, not {type(value).__name__}")
    return value


def check_url_option(url: Any) -> None:
    if url is None:
        return
    if not isinstance(url, str) and not (
        isinstance(url, Sequence) and all(isinstance(u, str) for u in url)
    ):
        raise ConfigurationError("url must be a string, a list of strings or None")
    checked_urls(url)


def check_credential(name: str, value: Any) -> None:
    """`api_key` or `authorization`: the value is never quoted."""
    of_type(name, value, str, "a string")
    if value and not header_safe(value.strip()):
        what = "API key (api_key)" if name == "api_key" else name
        raise ConfigurationError(
            f"the {what} holds a character an HTTP header cannot carry (non-ASCII, a line "
            "break or a control character); check how it was copied"
        )


def check_handlers(handlers: Any) -> None:
    if handlers is not None and (
        not isinstance(handlers, Mapping)
        or not all(isinstance(k, str) and callable(v) for k, v in handlers.items())
    ):
        raise ConfigurationError("handlers must map tool names to functions")


def checked_tools(tools: Any) -> tuple[Tool, ...]:
    sequence = isinstance(tools, Collection) and not isinstance(tools, (str, Mapping))
    if not sequence or not all(isinstance(t, Tool) for t in tools):
        raise ConfigurationError("tools must be a sequence of Tool objects")
    return tuple(tools)


def check_budgets(budgets: Any) -> None:
    if budgets is None:
        return
    if not isinstance(budgets, Mapping):
        raise ConfigurationError("budgets must map tool names to budgets")
    for value in budgets.values():
        checked_budget(value)


def check_verify(verify: Any) -> None:
    if not isinstance(verify, (bool, str, ssl.SSLContext)):
        raise ConfigurationError("verify must be True, False, a CA bundle path or an SSLContext")
