"""The tool object: everything the dispatcher knows about one tool, declared in one place."""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .._exceptions import EngineError
from .._http._models import HttpRequest, Outcome, Reply
from .._message._budget import Fit
from .._message._format import engine_error, unusable
from ._limits import Limit, known_arguments

__all__ = [
    "After", "FollowUp", "Handler", "IndexPolicy", "Origin", "Received", "Refetch", "Tool", "copy_args", "inferred_caps",
    "integral",
    "read_json",
]  # fmt: skip

Handler = Callable[[Mapping[str, Any]], HttpRequest]
"""Turns validated arguments into an `HttpRequest`. Pure: no I/O, no clock."""


Origin = Literal["published", "first-party", "custom", "handler"]
"""Where a tool comes from: the publishers' definitions in ``tools.json``, an addition of this
library (also in ``tools.json``), a `Tool` of yours, or a plain handler of yours (``handlers=``)."""


@dataclass(frozen=True)
class Received:
    """What XERJ sent back for one call, as a tool's `read` gets it."""

    tool: str
    reply: Reply
    request: HttpRequest
    rerank: Mapping[str, Any] | None = None  # the dispatcher's note when it dropped rerank
    attempts: int = 1
    # the names of the tools the dispatcher serves (None: not known), so that what the payload
    # advises names only those
    served: Collection[str] | None = None


class IndexPolicy(Protocol):
    """What a tool's `after` step asks of the operator's policy (a `Policy` is one)."""

    def allows_index(self, name: str) -> bool: ...


After = Callable[
    [dict[str, Any], IndexPolicy], Generator[HttpRequest, tuple[Outcome, int], dict[str, Any]]
]
"""A tool's step after its answer was read: yields follow-up reads (each answered with
``(outcome, attempts)``; never retried, not counted as the call's attempts) and returns the
payload, the operator's policy applied to what it lists."""

Refetch = Callable[[Collection[str]], "str | None"]
"""How to read whole a field the budget cut in a hit, given the names of the tools the
dispatcher serves: advice that names only those, or None."""

Reader = Callable[[Received], dict[str, Any]]
"""Turns an answered reply into the payload the model reads; raises `EngineError` (code
``invalid_response``) when the reply is not the result the tool needs."""


FollowUp = Callable[
    [Mapping[str, Any], dict[str, Any], Callable[[str], bool]],
    Generator[HttpRequest, tuple[Outcome, int], dict[str, Any]],
]
"""More requests after a successful answer, to make it true: called with the call's arguments,
the payload read so far and the policy's index check; yields each request, receives what came
back (outcome, attempts) and returns the final payload. `xerj_get_document` asks an alias's
other indices this way."""


def read_json(received: Received) -> dict[str, Any]:
    """The default reading: XERJ's JSON object, whole, as ``result``."""
    data = received.reply.data
    if not isinstance(data, dict) or unusable(received.reply, data) is not None:
        raise engine_error(received.reply, received.request)
    return {"ok": True, "result": data}


def integral(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; XERJ's serde `usize` fields refuse it.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def copy_args(args: Mapping[str, Any], body: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if args.get(key) is not None:
            body[key] = integral(args[key])


def is_2xx(reply: Reply) -> bool:
    return 200 <= reply.status < 300


# The fail-closed rule for a tool whose traits are not declared: its top-level arguments are
# judged by their names (case-insensitive).
def _index_like(key: str) -> bool:
    k = key.lower()
    return (
        k in ("index", "indices")
        or k.startswith(("index_", "indices_"))
        or k.endswith(("_index", "_indices"))
    )


def _namespace_like(key: str) -> bool:
    k = key.lower()
    return (
        k in ("namespace", "namespaces") or k.startswith("namespace_") or k.endswith("_namespace")
    )


# Top-level arguments that hold no query DSL, for a tool that does not list its own
# (`Tool.plain_args`): the URL's own index, vectors, and what a memory stores.
PLAIN_ARGUMENTS = frozenset(
    {"index", "namespace", "text", "metadata", "id", "query_vector", "vector"}
)

_CAP_NAMES = {"size": "max_size", "k": "max_k", "num_candidates": "max_num_candidates"}


def inferred_caps(arguments: Mapping[str, Any]) -> dict[str, str]:
    return {k: _CAP_NAMES[k] for k in arguments if k in _CAP_NAMES}


@dataclass(frozen=True, kw_only=True)
class Tool:
    """One tool, declared once: how it checks, builds, reads and fits, and what the policy guards.
    Every field is given by keyword (``Tool(name="count_docs", build=...)``).

    - `name`: the function name. `description` and `parameters` (a JSON Schema) are the
      definition the model sees: give them and the tool needs no tools file, the dispatcher adds
      it to its registry; leave them out and the registry must hold a definition of that name.
    - `build`: validated arguments → `HttpRequest`; pure, no I/O.
    - `read`: the answered reply → the payload the model reads (default: the JSON as ``result``).
    - `limits`: rules beyond JSON Schema, each a `Limit` (its words, its quick yes, its JSON
      Schema fragment; `xerj_tools.tools._limits`). With `strict_arguments`, an argument the
      schema does not list is refused too (derived from the schema's ``properties``; `hints`
      explain some).
    - `fit`: ``"hits"``, ``"memories"``, ``"document"`` or ``"json"``; `paging`: the argument
      that pages a hit list (``"from"``), or None.
    - Policy traits. `index_args`: the arguments that are index expressions; `namespace_args`:
      memory namespaces; `caps`: argument → `Policy` attribute (``{"size": "max_size"}``);
      `writes`: the tool changes data (refused under ``Policy(read_only=True)``); `queries`: its
      arguments may hold query DSL that names indices. Left as None, a trait is inferred: any
      top-level argument named ``index``, ``indices``, ``index_*``, ``*_index`` (or ``*_indices``)
      is an index expression, ``namespace``, ``namespaces``, ``namespace_*`` or ``*_namespace``
      a namespace, ``size``/``k``/``num_candidates`` are capped, and a request that is not a
      GET/HEAD nor a POST to a read endpoint (``_search``, ``_count``, …) is a write.
    - `path`: the URL template for tracing (``/{index}/_search``); `too_large`: what the model
      can ask for instead when the answer is too large; `refetch`: how it reads whole a field
      the budget cut inside a hit (a sentence, or a `Refetch` given the names of the tools the
      dispatcher serves, so that it names only those; None: the fitter's advice, which names no
      tool); see `refetch_hint`; `answered`: whether a reply is a result
      to read (default: a 2xx status) rather than an error. `title`: a human title (MCP);
      `result_fields`: the payload's own fields as JSON Schema properties (beside ``ok``,
      ``error``, ``truncated``...; MCP publishes them in the tool's ``outputSchema``).
      `follow_up`: more requests after a successful answer (`FollowUp`).
    - `after`: run on an answered payload before the model reads it (`After`): follow-up reads
      and the policy applied to what the answer lists; None (most tools): nothing.
    """

    name: str
    build: Handler
    read: Reader = read_json
    limits: tuple[Limit, ...] = ()
    fit: Fit = "json"  # the fitting strategy (`xerj_tools._message._budget.Fit`)
    paging: str | None = None
    index_args: tuple[str, ...] | None = None
    namespace_args: tuple[str, ...] | None = None
    caps: Mapping[str, str] | None = None
    writes: bool | None = None
    queries: bool = True
    path: str | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    strict_arguments: bool = True
    too_large: Callable[[HttpRequest], str | None] | None = None
    refetch: str | Refetch | None = None
    answered: Callable[[Reply], bool] = is_2xx
    origin: Origin = "custom"
    title: str | None = None
    result_fields: Mapping[str, Any] | None = field(default=None, repr=False)
    follow_up: FollowUp | None = None
    after: After | None = None
    rerank_arg: str | None = None
    plain_args: tuple[str, ...] | None = None
    description: str | None = None
    parameters: Mapping[str, Any] | None = field(default=None, repr=False)

    def definition(self) -> dict[str, Any] | None:
        """The function definition this tool carries (Chat Completions form), or None when its
        definition lives in a tools file."""
        if self.parameters is None:
            return None
        function = {
            "name": self.name,
            "description": self.description or "",
            "parameters": self.parameters,
        }
        return {"type": "function", "function": function}

    def refetch_hint(self, served: Collection[str]) -> str | None:
        """The advice for a field cut inside one of this tool's hits, when the dispatcher serves
        the tools named `served` (None: the fitter says it, naming no tool)."""
        if self.refetch is None or isinstance(self.refetch, str):
            return self.refetch
        return self.refetch(served)

    def index_arguments(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        """The arguments of this call that the policy holds to its index rules."""
        if self.index_args is not None:
            return self.index_args
        return tuple(k for k in arguments if _index_like(k))

    def namespace_arguments(self, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        if self.namespace_args is not None:
            return self.namespace_args
        return tuple(k for k in arguments if _namespace_like(k))

    def rerank_argument(self, arguments: Mapping[str, Any]) -> str | None:
        """The argument of this call that asks XERJ's reranker, if it holds one (the policy's
        `allow_rerank` and `max_rerank_window` act on it)."""
        key = self.rerank_arg if self.rerank_arg is not None else "rerank"
        return key if arguments.get(key) is not None else None

    def plain_arguments(self) -> frozenset[str]:
        """The top-level arguments that hold no query DSL: the policy does not read them for
        index names."""
        return PLAIN_ARGUMENTS if self.plain_args is None else frozenset(self.plain_args)

    def cap_arguments(self, arguments: Mapping[str, Any]) -> Mapping[str, str]:
        return self.caps if self.caps is not None else inferred_caps(arguments)

    def limits_for(self, parameters: Mapping[str, Any]) -> tuple[Limit, ...]:
        """The limits attached to the tool's definition: unknown arguments (from the schema's
        property list, unless it allows others), then the tool's own."""
        properties = parameters.get("properties")
        if (
            not self.strict_arguments
            or not isinstance(properties, Mapping)
            or not properties
            or parameters.get("additionalProperties", False) is not False
        ):
            return self.limits
        return (known_arguments(tuple(properties), self.hints), *self.limits)

    def answer(self, received: Received) -> dict[str, Any]:
        """The payload for an answered reply: `read`, then the request's notes."""
        out = self.read(received)
        if not isinstance(out, dict):
            raise TypeError(f"the reader of {self.name} returned {type(out).__name__}, not a dict")
        if received.request.notes:
            out["notes"] = [*received.request.notes, *out.get("notes", [])]
        return out

    def refusal(self, reply: Reply, request: HttpRequest) -> EngineError:
        return engine_error(reply, request, self.too_large)
