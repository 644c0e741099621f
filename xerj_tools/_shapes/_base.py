"""The neutral tool call, the answers it gets, and what every wire shape's adapter provides."""

from __future__ import annotations

import itertools
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypedDict

from .._exceptions import ArgumentsError, ConfigurationError, InvalidToolCallError
from .._problems import Problem, json_type
from ._usage import TokenUsage

__all__ = [
    "AnthropicToolResult",
    "Api",
    "Assembler",
    "Definable",
    "ChatToolMessage",
    "GeminiFunctionResponse",
    "ResponsesToolOutput",
    "Step",
    "ToolCall",
    "ToolMessage",
    "WireShape",
    "describe",
    "get",
    "shape_named",
]

Api = Literal["chat", "responses", "anthropic", "gemini"]

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 200

_MISSING = object()


def get(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` of a mapping, `obj.key` of anything else (an SDK object), else `default`."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def text(obj: Any, key: str) -> str:
    """`get(obj, key)` when it is a string, else ``""`` (left out, or not a string)."""
    value = get(obj, key)
    return value if isinstance(value, str) else ""


def has(obj: Any, key: str) -> bool:
    """Whether `obj` carries `key` at all, even as None (the SDK builds unknown kinds that way)."""
    if isinstance(obj, Mapping):
        return key in obj
    return getattr(obj, key, _MISSING) is not _MISSING


def describe(obj: Any) -> str:
    """What an object is, in a few words, for an error message: never its values."""
    what = type(obj).__name__
    kind = get(obj, "type")
    if isinstance(kind, str):
        what += f" of type {_REPR.repr(kind)}"
    if isinstance(obj, Mapping):
        keys = sorted(str(k) for k in itertools.islice(obj, 20))
        what += f" with keys {', '.join(keys[:8])}{', …' if len(keys) > 8 else ''}"
    return what


class ChatToolMessage(TypedDict):
    """The Chat Completions answer to a tool call."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


class ResponsesToolOutput(TypedDict):
    """The Responses API answer to a ``function_call`` (or ``custom_tool_call``) item."""

    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: str
    output: str


class AnthropicToolResult(TypedDict):
    """The Anthropic Messages answer to a ``tool_use`` block. A turn's answers travel together
    in one ``{"role": "user", "content": [...]}`` message (see `turn_messages`)."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: bool


class GeminiFunctionResponse(TypedDict):
    """The Gemini answer to a ``functionCall`` part: ``{"functionResponse": {"id"?, "name",
    "response": {...}}}``. A turn's answers travel together in one ``{"role": "user", "parts":
    [...]}`` content (see `turn_messages`)."""

    functionResponse: dict[str, Any]


ToolMessage = ChatToolMessage | ResponsesToolOutput | AnthropicToolResult | GeminiFunctionResponse


@dataclass(frozen=True)
class ToolCall:
    """A tool call in neutral form: id, tool name, raw arguments and the wire shape it came in.

    `api` names the shape (``"chat"``, ``"responses"``, ``"anthropic"`` or ``"gemini"``); the shape's adapter
    writes the answer.
    """

    call_id: str
    name: str
    # As the model sent it: a JSON string, or an object the SDK or a caller decoded. Anything
    # else (a number, a list) is kept as is and refused with a clear error, never converted.
    arguments: str | Mapping[str, Any] | Any = None
    api: Api = "chat"
    custom: bool = False  # a free-text custom tool call, which xerj-tools does not serve

    def __repr__(self) -> str:
        # reprlib cuts nesting and length: a repr of hostile arguments stays short and can
        # never recurse (the default dataclass repr raised RecursionError on deep ones).
        return (
            f"ToolCall(call_id={self.call_id!r}, name={self.name!r}, "
            f"arguments={_REPR.repr(self.arguments)}, api={self.api!r}, custom={self.custom!r})"
        )

    @property
    def shape(self) -> WireShape:
        """The adapter of the wire shape this call came in."""
        return shape_named(self.api)

    def answer(self, content: str, *, ok: bool = True) -> ToolMessage:
        """The message that answers this call, in its own shape. `ok` matters where the shape
        marks failures (Anthropic's ``is_error``); pass the result's ``ok``."""
        return self.shape.answer(self, content, ok=ok)

    def arguments_error(self) -> ArgumentsError | None:
        """What is wrong with the arguments' form before any schema looks at them, if anything
        (an Anthropic ``input`` that is not an object)."""
        return self.shape.arguments_error(self.arguments)


@dataclass
class Step:
    """What one model turn said: text, tool calls, transcript items and why it stopped."""

    text: str
    calls: list[ToolCall]
    items: list[dict[str, Any]]
    finish_reason: str
    usage: TokenUsage | None = None


class Assembler(Protocol):
    """Joins a streamed model turn: `feed` each chunk or event (its text delta back), then
    `step`."""

    def feed(self, chunk: Any) -> str | None: ...

    def step(self) -> Step: ...


_BY_NAME: dict[str, WireShape] = {}


class Definable(Protocol):
    """What a shape needs of a tool to write its definition (the registry's `ToolSpec` is one).

    The shapes type against this, not against the registry, so that the registry may import
    the shapes and never the other way round."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, Any]: ...
    @property
    def definition(self) -> Mapping[str, Any]: ...
    @property
    def strict(self) -> bool | None: ...


class WireShape(ABC):
    """One wire shape of tool calls: how a call looks, how it is answered, how a turn's answers
    join the transcript, how tool definitions are written, and where a recorded transcript holds
    its calls. Chat Completions and Responses also drive the agent loop (`create`, `step`,
    `assembler`). One instance per shape, made in its module."""

    name: ClassVar[Api]
    title: ClassVar[str]  # for people: "Chat Completions"
    # Where calls nest in a recorded transcript of this shape (keys of lists or objects).
    containers: ClassVar[tuple[str, ...]] = ()
    request_key: ClassVar[str | None] = None  # the create() argument holding the transcript
    # Where the arguments come decoded (Anthropic's ``input``, Gemini's ``args``): what they
    # must be, the start of the reason given when they are not an object.
    decoded_arguments: ClassVar[str | None] = None

    def __init__(self) -> None:
        _BY_NAME[self.name] = self

    def __repr__(self) -> str:
        return f"<wire shape {self.name}>"

    @abstractmethod
    def claims(self, obj: Any) -> bool:
        """Whether `obj` is a call in this shape (however malformed otherwise)."""

    @abstractmethod
    def read(self, obj: Any) -> ToolCall:
        """A claimed call in neutral form; its `call_id` is ``""`` when it has none."""

    def parse(self, obj: Any) -> ToolCall:
        """A claimed call; `InvalidToolCallError` when it has no id, since no answer could
        ever be paired with it."""
        call = self.read(obj)
        if not call.call_id:
            raise InvalidToolCallError(
                f"a {self.title} tool call without an id cannot be answered; got {describe(obj)}"
            )
        return call

    @abstractmethod
    def answer(self, call: ToolCall, content: str, *, ok: bool) -> ToolMessage:
        """The message that answers `call`."""

    @abstractmethod
    def answered(self, message: Any) -> str | None:
        """The id of the call `message` answers, when it is one of this shape's answers."""

    def group(self, answers: Sequence[Any]) -> list[Any]:
        """A turn's answers as transcript entries: one entry per answer, unless the shape
        says otherwise."""
        return list(answers)

    @abstractmethod
    def definition(self, spec: Definable) -> dict[str, Any]:
        """`spec` as this API's tool definition."""

    def definitions(self, registry: Iterable[Definable]) -> list[dict[str, Any]]:
        return [self.definition(spec) for spec in registry]

    def arguments_error(self, arguments: Any) -> ArgumentsError | None:
        if self.decoded_arguments is None or isinstance(arguments, Mapping):
            return None
        json_like = isinstance(arguments, (str, int, float, list)) or arguments is None
        kind = json_type(arguments) if json_like else type(arguments).__name__
        reason = f"{self.decoded_arguments}, got {kind}"
        return ArgumentsError(reason, problems=(Problem("$", reason),))

    # The agent loop: only the shapes with an OpenAI client behind them drive it.
    def create(self, client: Any) -> Callable[..., Any]:
        raise self._no_loop()

    def step(self, response: Any) -> Step:
        raise self._no_loop()

    def assembler(self) -> Assembler:
        raise self._no_loop()

    def _no_loop(self) -> ConfigurationError:
        return ConfigurationError(
            f"the agent loop runs on the OpenAI APIs ('chat', 'responses'), not {self.title}; "
            "dispatch its calls with Dispatcher.dispatch_many"
        )


def shape_named(api: str) -> WireShape:
    """The adapter of the wire shape called `api`."""
    shape = _BY_NAME.get(api)
    if shape is None:
        raise ConfigurationError(
            f"unknown wire shape {api!r}; known: {', '.join(sorted(_BY_NAME))}"
        )
    return shape
