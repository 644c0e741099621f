"""xerj-tools: let an OpenAI-style model search a XERJ engine through function calling.

registry = load_registry()                      # the XERJ tools, validated once
tools = registry.chat_tools()                   # pass as tools= to Chat Completions
with Dispatcher() as dispatcher:                # XERJ_URL / XERJ_API_KEY from the environment
    messages += dispatcher.dispatch_many(message.tool_calls)
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any
from typing import is_typeddict as _is_typeddict

from ._agent._agent_options import AgentOptions, CreateOptions
from ._agent._loop import arun_agent, astream_agent, run_agent, stream_agent
from ._agent._turns import (
    AgentEvent,
    AgentResult,
    RunFinished,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    ToolStats,
    TurnFinished,
)
from ._bounds import MAX_ARGUMENT_DEPTH
from ._dispatch._core import ToolResult
from ._dispatch._options import Limits, Timeout
from ._dispatch._policy import Policy, PolicyDenied
from ._exceptions import (
    ArgumentsError,
    ClosedError,
    ConfigurationError,
    EngineError,
    InvalidToolCallError,
    LoopError,
    MaxTurnsExceeded,
    MissingHandlerError,
    ModelError,
    ToolCallError,
    ToolDefinitionError,
    UnknownToolError,
    XerjToolsError,
)
from ._http._models import HttpRequest
from ._http._retry import RetryPolicy
from ._log_text import OneLine as _OneLine
from ._message._format import ERROR_CODES
from ._message._tokens import Budget, estimate_tokens
from ._offline._batch import merge_results, validate_batch
from ._problems import Problem, ValidationResult
from ._schema._registry import ToolRegistry, ToolSpec, load_registry
from ._shapes import (
    AnthropicToolResult,
    ChatToolMessage,
    GeminiFunctionResponse,
    ResponsesToolOutput,
    ToolCall,
    ToolMessage,
    parse_tool_call,
    turn_messages,
)
from ._shapes._usage import TokenUsage
from .tools import HANDLERS, XERJ_TOOLS, Advice, Handler, Limit, PolicyTraits, Received, Tool

if TYPE_CHECKING:
    from ._dispatch._async import AsyncDispatcher
    from ._dispatch._sync import Dispatcher

from ._version import __version__

__all__ = [
    "ERROR_CODES",
    "HANDLERS",
    "MAX_ARGUMENT_DEPTH",
    "XERJ_TOOLS",
    "Advice",
    "AgentEvent",
    "AgentOptions",
    "AgentResult",
    "AnthropicToolResult",
    "ArgumentsError",
    "AsyncDispatcher",
    "Budget",
    "ChatToolMessage",
    "ClosedError",
    "ConfigurationError",
    "CreateOptions",
    "Dispatcher",
    "EngineError",
    "GeminiFunctionResponse",
    "Handler",
    "HttpRequest",
    "InvalidToolCallError",
    "Limit",
    "Limits",
    "LoopError",
    "MaxTurnsExceeded",
    "MissingHandlerError",
    "ModelError",
    "Policy",
    "PolicyDenied",
    "PolicyTraits",
    "Problem",
    "Received",
    "ResponsesToolOutput",
    "RetryPolicy",
    "RunFinished",
    "TextDelta",
    "Timeout",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolCallStarted",
    "ToolDefinitionError",
    "ToolMessage",
    "ToolRegistry",
    "ToolResult",
    "ToolResultEvent",
    "ToolSpec",
    "ToolStats",
    "TurnFinished",
    "UnknownToolError",
    "ValidationResult",
    "XerjToolsError",
    "__version__",
    "arun_agent",
    "astream_agent",
    "estimate_tokens",
    "load_registry",
    "merge_results",
    "parse_tool_call",
    "run_agent",
    "stream_agent",
    "turn_messages",
    "validate_batch",
]

import logging as _logging


def _public(value: Any) -> Any:
    # Public classes and functions say where users import them from (`xerj_tools.ToolCall`,
    # not `xerj_tools._shapes.ToolCall`) in reprs, tracebacks, pickles and docs, as httpx2 does.
    # TypedDicts keep their home module: typing resolves their string annotations there.
    if isinstance(value, type) and _is_typeddict(value):
        return value
    if isinstance(value, type) or (callable(value) and hasattr(value, "__code__")):
        # On 3.10 a generic alias such as `Handler` passes `isinstance(x, type)` but is read-only.
        with contextlib.suppress(AttributeError, TypeError):
            value.__module__ = __name__
    return value


def __getattr__(name: str) -> Any:
    # The dispatchers pull in httpx2; offline validation (`xerj-tools validate`) never needs it.
    if name == "Dispatcher":
        from ._dispatch._sync import Dispatcher

        return _public(Dispatcher)
    if name == "AsyncDispatcher":
        from ._dispatch._async import AsyncDispatcher

        return _public(AsyncDispatcher)
    raise AttributeError(f"module 'xerj_tools' has no attribute {name!r}")


for _name in __all__:
    if _name not in ("Dispatcher", "AsyncDispatcher") and not _name.startswith("__"):
        _public(globals()[_name])


_logging.getLogger("xerj_tools").addHandler(_logging.NullHandler())
_logging.getLogger("xerj_tools").addFilter(_OneLine())  # one record, one line (`_log_text`)
