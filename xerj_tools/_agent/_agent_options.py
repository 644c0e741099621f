"""The agent loop's options: `AgentOptions`, and the options handed to ``create()``.

As openai-agents' `RunConfig` does for its runner, `AgentOptions` holds how `run_agent`,
`arun_agent`, `stream_agent` and `astream_agent` run: made once, checked once, passed as
``options=``, the one way to set them. The run's own inputs (`client`, `model`, `messages`,
`dispatcher`) are parameters of each entry point; the model's ``create()`` options travel in
`AgentOptions.create_options`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from .._dispatch._core import ToolResult
from .._exceptions import ConfigurationError
from .._shapes import ToolCall

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "LOOP_OWNED", "MAX_CALLS_PER_TURN", "AgentOptions", "CreateOptions", "ToolCallHook",
    "ToolResultHook",
]  # fmt: skip

ToolCallHook = Callable[[ToolCall], Any]
ToolResultHook = Callable[[ToolResult], Any]

MAX_CALLS_PER_TURN = 16
"""The calls of one model turn that are run; those past it are answered ``too_many_calls``.
Models make a few calls a turn (parallel calls are rarely more than five); 16 is two rounds of
the dispatcher's 8 workers, and 16 answers at the default budget of 12,000 characters are about
190,000 characters, some 48,000 tokens: the next model request still fits a 128k-token context
with the conversation beside it. Without a bound, 500 calls in one turn all ran and the next
request carried 6.6 MB."""


class CreateOptions(TypedDict, total=False):
    """Options the loop hands to ``client.chat.completions.create`` / ``client.responses.create``
    unchanged: the common ones, typed, for ``AgentOptions(create_options=CreateOptions(...))``.
    A plain dict there works as well, and takes any other option your client accepts."""

    temperature: float
    top_p: float
    tool_choice: str | Mapping[str, Any]
    parallel_tool_calls: bool
    max_tokens: int  # Chat Completions
    max_completion_tokens: int  # Chat Completions
    max_output_tokens: int  # Responses
    instructions: str  # Responses
    reasoning: Mapping[str, Any]  # Responses
    reasoning_effort: str  # Chat Completions
    stream_options: Mapping[str, Any]  # Chat Completions, streamed
    seed: int
    stop: str | list[str]
    user: str
    metadata: Mapping[str, str]
    extra_headers: Mapping[str, str]
    extra_body: Mapping[str, Any]
    timeout: float


# What each request's loop sets itself: the model and the transcript (``messages`` for Chat
# Completions, ``input`` for Responses) are its parameters, the tools come from the registry,
# and streaming is its `stream` parameter.
LOOP_OWNED = frozenset({"model", "messages", "input", "tools", "stream"})


def _owned(options: Mapping[str, Any]) -> None:
    if owned := sorted(set(options) & LOOP_OWNED):
        raise ConfigurationError(
            f"create() option(s) {', '.join(owned)} belong to the loop: model= and messages= are "
            "its own parameters, the tools come from the dispatcher's registry, and streaming is "
            "its stream= parameter"
        )


@dataclass(frozen=True, kw_only=True, repr=False)
class AgentOptions:
    """How the agent loop runs, checked when made; ``options=`` of `run_agent`, `arun_agent`,
    `stream_agent` and `astream_agent`; ``replace`` makes a changed copy. A bad value raises `ConfigurationError` here; the repr lists the fields that differ
    from their defaults, without the values of create() options that may carry a credential
    (``extra_headers``, ``extra_body``, ``extra_query``, names with key, auth, token...).

    - `api`: ``"chat"`` (Chat Completions) or ``"responses"``.
    - `max_turns`: model turns before the run ends with ``outcome="max_turns"``. Default: 10.
    - `max_repeats`: the loop guard; a call repeated more often in a run is answered
      ``repeated_call``. Default: 2.
    - `max_calls_per_turn`: the calls of one turn that are run; the rest are answered
      ``too_many_calls`` (`MAX_CALLS_PER_TURN`). Default: 16.
    - `on_tool_call`: called with each `ToolCall` before it runs; return False or a reason to
      deny it (the async loop awaits an async hook). Default: None.
    - `on_tool_result`: called with each `ToolResult`. Default: None.
    - `on_max_turns`: ``"return"`` the result, or ``"raise"`` `MaxTurnsExceeded`.
    - `stream`: True streams each model answer; None (the default) is the entry point's own
      default: False for `run_agent`/`arun_agent`, True for `stream_agent`/`astream_agent`.
    - `create_options`: options handed to the model's ``create()`` unchanged: the common ones
      typed by `CreateOptions` (``temperature``, ``tool_choice``, ``stream_options``...), or any
      your client takes; the loop's own (`LOOP_OWNED`) are refused. Default: None.
    """

    api: Literal["chat", "responses"] = "chat"
    max_turns: int = 10
    max_repeats: int = 2
    max_calls_per_turn: int = MAX_CALLS_PER_TURN
    on_tool_call: ToolCallHook | None = None
    on_tool_result: ToolResultHook | None = None
    on_max_turns: Literal["return", "raise"] = "return"
    stream: bool | None = None
    create_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.api not in ("chat", "responses"):
            raise ConfigurationError("api must be 'chat' or 'responses'")
        for value in (self.max_turns, self.max_repeats, self.max_calls_per_turn):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(
                    "max_turns, max_repeats and max_calls_per_turn must be at least 1"
                )
        if self.on_max_turns not in ("return", "raise"):
            raise ConfigurationError("on_max_turns must be 'return' or 'raise'")
        for name in ("on_tool_call", "on_tool_result"):
            if (hook := getattr(self, name)) is not None and not callable(hook):
                raise ConfigurationError(f"{name} must be a function or None")
        if self.stream is not None and not isinstance(self.stream, bool):
            raise ConfigurationError("stream must be True, False or None")
        if self.create_options is not None:
            if not isinstance(self.create_options, Mapping):
                raise ConfigurationError("create_options must be a mapping of create() options")
            _owned(self.create_options)
            object.__setattr__(self, "create_options", MappingProxyType(dict(self.create_options)))

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (checked again); an unknown name raises `TypeError`."""
        unexpected("AgentOptions.replace", changes, _FIELDS)
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        return options_repr(self, masked=("create_options",))

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt, (type(self), plain_fields(self))


_FIELDS = tuple(f.name for f in dataclasses.fields(AgentOptions))

# What makes `AgentOptions` pickle and copy whole, show no secret in its repr (its one mapping
# of a client's options, `create_options`, is masked by key), and refuse an unknown name in
# `replace` with the nearest one.

_O = TypeVar("_O")


def plain_fields(options: Any) -> dict[str, Any]:
    """The fields of an options object, read-only mappings as dicts (what pickle and deepcopy
    can copy; `rebuilt` makes it again, checked)."""
    return {
        f.name: dict(v) if isinstance(v := getattr(options, f.name), MappingProxyType) else v
        for f in dataclasses.fields(options)
    }


def rebuilt(cls: Callable[..., _O], fields: Mapping[str, Any]) -> _O:
    return cls(**fields)


def options_repr(options: Any, masked: Collection[str] = ()) -> str:
    """The fields that differ from their defaults; in a mapping field named in `masked`, each
    value whose key may hold a secret shows as ``<redacted>``."""
    shown = []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if isinstance(value, Mapping) and f.name in masked:
            value = {k: "<redacted>" if _secret_key(k) else v for k, v in value.items()}
        elif isinstance(value, MappingProxyType):
            value = dict(value)
        shown.append(f"{f.name}={value!r}")
    return f"{type(options).__name__}({', '.join(shown)})"


def _secret_key(key: Any) -> bool:
    """Whether an option of this name may carry a credential (headers and bodies included)."""
    name = str(key).lower()
    return name.startswith("extra_") or any(
        word in name for word in ("key", "auth", "token", "secret", "password", "header")
    )


def unexpected(owner: str, keywords: Collection[str], known: Collection[str]) -> None:
    """Raise `TypeError` (as Python does for a keyword a function lacks) for the first keyword
    not in `known`, with the nearest known name."""
    for name in keywords:
        if name not in known:
            near = difflib.get_close_matches(name, list(known), n=1)
            maybe = f"; did you mean {near[0]!r}?" if near else ""
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}{maybe}")
