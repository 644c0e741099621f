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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .._dispatch._core import ToolResult
from .._exceptions import ConfigurationError
from .._shapes import ToolCall

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["LOOP_OWNED", "MAX_CALLS_PER_TURN", "AgentOptions", "CreateOptions"]

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
        """A copy with `changes` (checked again); an unknown name raises `TypeError`, as Python
        does for a keyword a function lacks, with the nearest known name."""
        for name in changes:
            if name not in _FIELDS:
                near = difflib.get_close_matches(name, _FIELDS, n=1)
                maybe = f"; did you mean {near[0]!r}?" if near else ""
                raise TypeError(
                    f"AgentOptions.replace() got an unexpected keyword argument {name!r}{maybe}"
                )
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        """The fields that differ from their defaults; in `create_options`, each value whose key
        may hold a secret shows as ``<redacted>``."""
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name == "create_options":
                value = {k: "<redacted>" if _secret_key(k) else v for k, v in value.items()}
            shown.append(f"{f.name}={value!r}")
        return f"AgentOptions({', '.join(shown)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # `create_options` is a read-only mapping, which pickle and deepcopy cannot copy: the
        # fields go as a plain dict, and the copy is made (and checked) again from them.
        fields = {name: getattr(self, name) for name in _FIELDS}
        if self.create_options is not None:
            fields["create_options"] = dict(self.create_options)
        return _rebuilt, (type(self), fields)


_FIELDS = [f.name for f in dataclasses.fields(AgentOptions)]


def _rebuilt(cls: type[AgentOptions], fields: Mapping[str, Any]) -> AgentOptions:
    return cls(**fields)


def _secret_key(key: Any) -> bool:
    """Whether an option of this name may carry a credential (headers and bodies included)."""
    name = str(key).lower()
    return name.startswith("extra_") or any(
        word in name for word in ("key", "auth", "token", "secret", "password", "header")
    )
