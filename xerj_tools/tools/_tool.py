"""The tool object: everything the dispatcher knows about one tool, declared in one place."""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from .._exceptions import ConfigurationError
from .._http._models import HttpRequest, Outcome, Reply
from .._message._budget import Fit
from .._message._format import engine_error, unusable
from ._limits import Limit, known_arguments

__all__ = [
    "Advice", "After", "Cap", "Handler", "IndexPolicy", "Origin", "PolicyTraits", "Reads", "Received", "Refetch", "Tool", "copy_args",
    "integral", "json_object", "read_json",
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


Reads = Generator[HttpRequest, tuple[Outcome, int], dict[str, Any]]
"""Further reads: yields each request, receives ``(outcome, attempts)``, returns the payload."""

After = Callable[[Mapping[str, Any], dict[str, Any], IndexPolicy], Reads]
"""A tool's step after a successful answer was read, before the policy checks the payload:
called with the call's arguments, the payload and the operator's policy; yields each further
request and receives ``(outcome, attempts)`` (one of ``kind="listing"`` is never retried nor
counted as the call's attempts); returns the payload, the policy applied to what it lists."""

Refetch = Callable[[Collection[str]], "str | None"]
"""How to read whole a field the budget cut in a hit, given the names of the tools the
dispatcher serves: advice that names only those, or None."""

Reader = Callable[[Received], dict[str, Any]]
"""Turns an answered reply into the payload the model reads; raises `EngineError` (code
``invalid_response``) when the reply is not the result the tool needs."""


def json_object(received: Received) -> dict[str, Any]:
    """The reply's JSON object; `EngineError` where it is none, or an error XERJ sent."""
    data = received.reply.data
    if not isinstance(data, dict) or unusable(received.reply, data) is not None:
        raise engine_error(received.reply, received.request)
    return data


def read_json(received: Received) -> dict[str, Any]:
    """The default reading: XERJ's JSON object, whole, as ``result``."""
    return {"ok": True, "result": json_object(received)}


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
# (`PolicyTraits.plain_args`): the URL's own index, vectors, and what a memory stores.
PLAIN_ARGUMENTS = frozenset(
    {"index", "namespace", "text", "metadata", "id", "query_vector", "vector"}
)

Cap = Literal["max_size", "max_k", "max_num_candidates", "max_rerank_window"]
"""A `Policy` cap that `PolicyTraits.caps` can hold an argument to."""

_CAP_NAMES: dict[str, Cap] = {
    "size": "max_size",
    "k": "max_k",
    "num_candidates": "max_num_candidates",
}


@dataclass(frozen=True, kw_only=True)
class PolicyTraits:
    """What the operator's `Policy` reads of a tool (`Tool.traits`). A trait left as None is
    inferred from the call's argument names, so that the policy fails closed."""

    index_args: tuple[str, ...] | None = None
    """The arguments that are index expressions (held to ``allow_indices``/``deny_indices``).
    None: every top-level argument named ``index``, ``indices``, ``index_*``, ``indices_*``,
    ``*_index`` or ``*_indices``, in any case."""
    listed_args: tuple[str, ...] = ()
    """The arguments that filter a listing of index names (``xerj_list_indices``'s ``pattern``)
    rather than name indices to read: each concrete name in one (no ``*``, not ``_all``) that
    the policy denies is refused before anything is sent, so that a denied name and an absent
    one are answered alike; the wildcards are left to the listing, which shows only what the
    policy allows."""
    namespace_args: tuple[str, ...] | None = None
    """The arguments that name memory namespaces (held to ``namespace``/``namespace_prefix``).
    None: every one named ``namespace``, ``namespaces``, ``namespace_*`` or ``*_namespace``."""
    caps: Mapping[str, Cap] | None = None
    """Argument → the `Policy` cap that bounds it (``{"size": "max_size"}``; a name that is no
    `Cap` raises `ConfigurationError`). None: ``size``, ``k`` and ``num_candidates`` to
    ``max_size``, ``max_k`` and ``max_num_candidates``."""
    writes: bool | None = None
    """Whether the tool changes data (refused under ``Policy(read_only=True)``). None: judged by
    its request, which writes unless it is a GET/HEAD or a POST to a read endpoint
    (``_search``, ``_count``…)."""
    queries: bool = True
    """Whether its arguments may hold query DSL, whose clauses can name indices to check."""
    plain_args: tuple[str, ...] | None = None
    """The top-level arguments that hold no query DSL, not read for index names. None: ``index``,
    ``namespace``, ``text``, ``metadata``, ``id``, ``query_vector`` and ``vector``."""
    rerank_arg: str | None = None
    """The argument that asks XERJ's reranker (held to ``allow_rerank`` and
    ``max_rerank_window``). None: ``rerank``."""

    def __post_init__(self) -> None:
        if self.caps is not None and (wrong := set(self.caps.values()) - set(get_args(Cap))):
            raise ConfigurationError(
                f"PolicyTraits.caps names {', '.join(map(repr, sorted(wrong)))}, which is no "
                f"Policy cap; the caps are {', '.join(get_args(Cap))}"
            )

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
        """The argument of this call that asks XERJ's reranker, if it holds one."""
        key = self.rerank_arg if self.rerank_arg is not None else "rerank"
        return key if arguments.get(key) is not None else None

    def plain_arguments(self) -> frozenset[str]:
        return PLAIN_ARGUMENTS if self.plain_args is None else frozenset(self.plain_args)

    def cap_arguments(self, arguments: Mapping[str, Any]) -> Mapping[str, Cap]:
        if self.caps is not None:
            return self.caps
        return {k: _CAP_NAMES[k] for k in arguments if k in _CAP_NAMES}


@dataclass(frozen=True, kw_only=True)
class Advice:
    """What the model is told to do instead, in the tool's own words (`Tool.advice`). Advice may
    name another tool: the dispatcher leaves out what names a library tool it does not serve."""

    too_large: Callable[[HttpRequest], str | None] | None = None
    """What to ask for instead when the answer to this request was too large to read. None: the
    error's own words."""
    refetch: str | Refetch | None = None
    """How to read whole a field the budget cut inside a hit: a sentence, or a `Refetch` given
    the names of the tools served. None: the fitter's advice, which names no tool."""
    index_not_found: str | None = None
    """What to do when XERJ answers ``index_not_found`` to a call with no index argument (a
    listing's filter). None: the error's own words. (A call with one is told the indices it may
    use.)"""
    hints: Mapping[str, str] = field(default_factory=dict)
    """An argument the schema does not list → a word on it (``{"_source": "the argument is
    called `source`"}``), said when `Tool.strict_arguments` refuses it."""

    def refetch_hint(self, served: Collection[str]) -> str | None:
        """`refetch` for a dispatcher that serves the tools named `served`."""
        if self.refetch is None or isinstance(self.refetch, str):
            return self.refetch
        return self.refetch(served)


@dataclass(frozen=True, kw_only=True)
class Tool:
    """One tool, declared once: how it checks, builds, reads and fits, and what the policy guards.

    Every field is given by keyword; only `name` and `build` are required
    (``Tool(name="count_docs", build=...)``). The fields are grouped as httpx groups
    ``Timeout``/``Limits``: what the policy reads of a tool is one `PolicyTraits` (``traits=``),
    what the model is told to do instead is one `Advice` (``advice=``), since the library's
    tools set each group together and most tools of yours need neither. The rest stay flat: a
    custom tool is mostly its definition (`description`, `parameters`), `build` and `read`.
    """

    name: str
    """The function name the model calls."""
    build: Handler
    """Validated arguments → the `HttpRequest` to send; pure, no I/O."""
    description: str | None = None
    """With `parameters`, the definition the model sees: given, the tool needs no tools file and
    the dispatcher adds it to its registry; left out, the registry must define this name."""
    parameters: Mapping[str, Any] | None = field(default=None, repr=False)
    """The arguments' JSON Schema (see `description`)."""
    title: str | None = None
    """A human title (MCP's ``title``)."""
    result_fields: Mapping[str, Any] | None = field(default=None, repr=False)
    """The payload's own fields as JSON Schema properties, beside ``ok``, ``error``,
    ``truncated``… (MCP publishes them in the tool's ``outputSchema``). None: the envelope."""
    read: Reader = read_json
    """The answered reply → the payload the model reads (default: the JSON as ``result``)."""
    answered: Callable[[Reply], bool] = is_2xx
    """Whether a reply is a result to `read` rather than an error (default: a 2xx status)."""
    after: After | None = None
    """Further reads after a successful answer (`After`): an alias's other indices asked for a
    document, a listing's aliases, a catalog. None (most tools): nothing."""
    fit: Fit = "json"
    """How the budget fits the payload: ``"hits"``, ``"memories"``, ``"document"`` or
    ``"json"`` (`xerj_tools._message._budget.Fit`)."""
    paging: str | None = None
    """The argument that pages a hit list (``"from"``), told to the model in ``next``; or None."""
    limits: tuple[Limit, ...] = ()
    """Rules beyond JSON Schema, each a `Limit` (its words, its quick yes, its JSON Schema
    fragment; `xerj_tools.tools._limits`)."""
    strict_arguments: bool = True
    """Refuse an argument the schema's ``properties`` do not list (`Advice.hints` explain some)."""
    traits: PolicyTraits = PolicyTraits()
    """What the operator's policy reads of the tool; by default each trait is inferred."""
    advice: Advice = Advice()
    """What the model is told to do instead of a too-large answer, a cut field, a wrong argument."""
    path: str | None = None
    """The URL template for tracing (``/{index}/_search``); ``/_doc/`` in it marks a tool that
    reads one index by name, as XERJ's document GET does."""
    origin: Origin = "custom"
    """Where the tool comes from (`Origin`)."""

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
        return (known_arguments(tuple(properties), self.advice.hints), *self.limits)

    def answer(self, received: Received) -> dict[str, Any]:
        """The payload for an answered reply: `read`, then the request's notes."""
        out = self.read(received)
        if not isinstance(out, dict):
            raise TypeError(f"the reader of {self.name} returned {type(out).__name__}, not a dict")
        if received.request.notes:
            out["notes"] = [*received.request.notes, *out.get("notes", [])]
        return out
