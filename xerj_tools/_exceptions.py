"""The exception tree of xerj-tools, split by who has to act.

    XerjToolsError
    ├── ConfigurationError ........ the developer: fix the code or the configuration
    │   ├── ToolDefinitionError ... a tools file that is not valid (raised at load time)
    │   ├── MissingHandlerError ... a tool with no handler (raised when the dispatcher is built)
    │   ├── InvalidToolCallError .. something passed to `dispatch` that is not a tool call at all
    │   └── ClosedError ........... a dispatcher used after `close()` / `aclose()`
    ├── LoopError ................. the agent loop could not finish
    │   └── MaxTurnsExceeded ...... (only with ``on_max_turns="raise"``)
    └── ToolCallError ............. one call failed; rendered as an ``ok: false`` tool message
        ├── ModelError ............ the model: it can fix the call and try again
        │   ├── UnknownToolError .. (code ``unknown_tool``)
        │   └── ArgumentsError .... (codes ``invalid_json``, ``invalid_arguments``)
        └── EngineError ........... XERJ or the network: HTTP status, timeout, connection

`ToolCallError` never escapes `Dispatcher.dispatch`: it becomes the tool message the model
reads. `ConfigurationError` is raised at start-up so that a developer's mistake is found before
the first model turn. `asyncio.CancelledError` and `KeyboardInterrupt` are never caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._problems import Problem

__all__ = [
    "ArgumentsError",
    "ClosedError",
    "ConfigurationError",
    "EngineError",
    "InvalidToolCallError",
    "LoopError",
    "MaxTurnsExceeded",
    "MissingHandlerError",
    "ModelError",
    "ToolCallError",
    "ToolDefinitionError",
    "UnknownToolError",
    "XerjToolsError",
]


class XerjToolsError(Exception):
    """Base class of every exception raised by xerj-tools."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The subclasses' constructors take other arguments than `args` holds, so the default
        # (`cls(*args)`) cannot rebuild them: restore args and attributes without `__init__`,
        # so that an error survives a process pool or a task queue whole.
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[XerjToolsError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigurationError(XerjToolsError):
    """A mistake of the developer: bad configuration, tools file or handler table."""


class ToolDefinitionError(ConfigurationError):
    """A tool definition is not usable (schema, name or duplicate)."""

    def __init__(self, message: str, *, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class MissingHandlerError(ConfigurationError):
    """Tools in the registry have no handler, so the dispatcher could never run them."""

    def __init__(self, tool_names: Sequence[str]) -> None:
        names = ", ".join(sorted(tool_names))
        super().__init__(
            f"no handler for tool(s): {names}; pass handlers={{name: handler}} to the dispatcher"
        )
        self.tool_names = tuple(sorted(tool_names))


class InvalidToolCallError(ConfigurationError, TypeError):
    """The object given to `dispatch` is no tool call of a known shape (Chat Completions,
    Responses, Anthropic Messages), or one without an id."""


class ClosedError(ConfigurationError):
    """The dispatcher was closed (`close()` / `aclose()`): nothing was sent, no thread started.
    Calls already running when it was closed still get their answers."""


class LoopError(XerjToolsError):
    """The agent loop ended without a final answer."""


class MaxTurnsExceeded(LoopError):
    """`max_turns` model turns passed without a final answer; `result` holds the run so far."""

    def __init__(self, result: Any) -> None:
        super().__init__(f"no final answer after {result.turns} turns")
        self.result = result


class ToolCallError(XerjToolsError):
    """One tool call failed; the dispatcher turns it into an ``ok: false`` tool message.

    `code` is one of the stable error codes listed in docs/messages.md; `hint` tells the model what
    to do next; `retryable` says whether the same call may succeed later unchanged.
    """

    code: str = "error"
    retryable: bool = False

    def __init__(
        self,
        reason: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        retryable: bool | None = None,
        status: int | None = None,
        type: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        self.hint = hint
        self.status = status
        self.type = type
        self.details = dict(details or {})


class ModelError(ToolCallError):
    """The model's call cannot be run as emitted; the model can correct it."""


class UnknownToolError(ModelError):
    code = "unknown_tool"

    def __init__(self, tool_name: str, known: Sequence[str]) -> None:
        super().__init__(
            f"there is no tool named {tool_name!r}",
            hint="call one of: " + ", ".join(known),
        )
        self.tool_name = tool_name


class ArgumentsError(ModelError):
    """The arguments are not JSON, or do not satisfy the tool's schema and stated limits."""

    code = "invalid_arguments"

    def __init__(
        self,
        reason: str,
        *,
        problems: Sequence[Problem] = (),
        code: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(reason, code=code, hint=hint)
        self.problems = tuple(problems)


class EngineError(ToolCallError):
    """XERJ answered with an error, or could not be reached in time."""

    retryable = False
