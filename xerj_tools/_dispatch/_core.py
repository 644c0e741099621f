"""The sans-I/O core of dispatch: call -> validated request -> (rerank fallback) -> tool message.

Nothing here sends, sleeps or awaits. The sync and async dispatchers drive `DispatchCore.flow`,
a generator that yields each request to send and receives what came back, so the two drivers
share every decision.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .._exceptions import (
    ArgumentsError,
    ConfigurationError,
    EngineError,
    MissingHandlerError,
    ToolCallError,
    UnknownToolError,
)
from .._http._models import HttpRequest, Outcome, Reply
from .._http._rerank import EVERY_PROVIDER, RerankMemory, rerank_provider, rerank_refusal
from .._json import fast_raw
from .._message._budget import (
    DEFAULT_BUDGET,
    Budget,
    Fit,
    cap_buckets,
    checked_budget,
    fit_message,
    within,
)
from .._message._fit_hits import clean_envelope, clean_json, surely_longer
from .._message._format import dumps, engine_error, error_payload, sendable
from .._problems import ValidationResult
from .._schema._fused import checked_arguments
from .._schema._registry import ToolRegistry
from .._shapes import ToolCall, ToolMessage
from ..tools import Handler, Received, Tool
from ..tools._catalog import served_queries
from ..tools._listing import LISTING_TTL, IndexListing
from ..tools._mappings import MAPPING_TTL, MappingCache
from ..tools._paths import dot_segment
from ..tools._table import reading_tool, served_advice, served_hints, tool_table
from . import _index_guard as guard
from ._after import Flow, after_answer, with_known_vectors
from ._body_indices import may_name_indices
from ._policy import Policy, PolicyDenied
from ._trace import record, rerank_fallback

__all__ = ["DispatchCore", "ToolResult"]

logger = logging.getLogger("xerj_tools")

FALLBACK = "search repeated without rerank: engine order and engine scores"
REMEMBERED = "sent without rerank, which this node refused earlier: engine order and engine scores"


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one call: the tool message, the payload behind it and a few figures."""

    call: ToolCall
    payload: Mapping[str, Any] = field(repr=False)
    content: str = field(repr=False)
    attempts: int = 0
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.payload.get("ok"))

    @property
    def code(self) -> str | None:
        """The error code when the call failed, else None."""
        error = self.payload.get("error")
        return error.get("code") if isinstance(error, Mapping) else None

    @property
    def message(self) -> ToolMessage:
        """The tool message to append to the conversation, in the call's API shape."""
        return self.call.answer(self.content, ok=self.ok)


def _raised(tool_name: str, part: str, exc: Exception) -> ToolCallError:
    # Where it was raised, not its message: a message may quote the arguments or the answer.
    where = traceback.extract_tb(exc.__traceback__)[-1]
    logger.error(
        "%s for %s raised %s at %s:%s",
        part, tool_name, type(exc).__name__, where.filename, where.lineno,
    )  # fmt: skip
    return ToolCallError(f"the {part} raised {type(exc).__name__}", code="handler_error")


@dataclass(frozen=True)
class Prepared:
    """A call that passed validation: its request, the tool that built it and reads its answer
    (a plain handler's reader chosen by the request's kind: `reading_tool`), the repairs made,
    and its identity."""

    request: HttpRequest
    tool: Tool
    repairs: tuple[str, ...] = ()
    arguments: Mapping[str, Any] = field(default_factory=dict, repr=False)
    page_from: int | None = None  # where a hit list that can page started (its `paging`)
    body_indices: guard.BodyNames = ()  # the indices the query names in its body, where (`_body_indices`)
    policy: Policy = field(default_factory=Policy, repr=False)  # checked under; guards the answer

    @property
    def key(self) -> str:
        """Tool and canonical arguments: identical calls in one turn share it."""
        return self.tool.name + "\x00" + dumps(dict(sorted(self.arguments.items())))


class DispatchCore:
    """Every decision of dispatch, shared by `Dispatcher` and `AsyncDispatcher`.

    `policy` None means the default `Policy()`: every path (both dispatchers, the CLI's
    ``call --dry-run``, the integrations) is guarded alike.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        handlers: Mapping[str, Handler] | None,
        *,
        tools: Sequence[Tool] = (),
        rerank_fallback: bool,
        rerank_memory_seconds: float,
        repair: bool = True,
        budget: int | Budget = DEFAULT_BUDGET,
        budgets: Mapping[str, int | Budget] | None = None,
        max_buckets: int = 25,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # A Tool that carries its definition joins the registry: one home for a custom tool.
        registry = registry.with_definitions(
            [d for t in tools if (d := t.definition()) is not None]
        )
        table = tool_table(registry.names, handlers, tools)
        missing = [name for name in registry.names if name not in table]
        if missing:
            raise MissingHandlerError(missing)
        # A handler or Tool the model can never call (no definition to show it) is a mistake
        # to report now, not an `unknown_tool` answer at the first call.
        declared = [*(handlers or {}), *(t.name for t in tools)]
        if undefined := sorted({name for name in declared if name not in registry}):
            raise ConfigurationError(
                f"no definition for tool(s) {', '.join(undefined)}: give each Tool its "
                "description and parameters, or add it to the registry's tools file"
            )
        # Your tools' checks join their definitions (the library's own are attached on load).
        registry = registry.with_limits(
            {t.name: t.limits_for(registry[t.name].parameters) for t in tools}
        )
        # An argument hint that names a library tool not served here is left out.
        if rechecked := served_hints(table, {n: registry[n].limits for n in registry.names}):
            registry = registry.with_limits(
                {t.name: t.limits_for(registry[t.name].parameters) for t in rechecked}
            )
        if max_buckets < 1:
            raise ConfigurationError("max_buckets must be at least 1")
        self.registry = registry
        self.tools: Mapping[str, Tool] = MappingProxyType(table)
        self.rerank_fallback = rerank_fallback
        self.rerank_memory = RerankMemory(rerank_memory_seconds, clock)
        self.listing = IndexListing(LISTING_TTL, clock)
        self.mappings = MappingCache(MAPPING_TTL, clock)
        self.repair = repair
        self.budget = checked_budget(budget)
        self.budgets = {tool: checked_budget(value) for tool, value in (budgets or {}).items()}
        self.max_buckets = max_buckets
        # Guardrails on unless the operator says otherwise: no dot-indices, no oversized arguments.
        self.policy = policy if policy is not None else Policy()
        self.clock = clock

    def prepare(self, call: ToolCall, policy: Policy | None = None) -> Prepared | ToolCallError:
        """Validate (and repair) the call and build its request, or say what the model must fix;
        under `policy` (a call's own, ``policy=``) in place of the core's, checks to answer."""
        policy = self.policy if policy is None else policy
        spec = self.registry.get(call.name)
        if spec is None or call.custom:
            return UnknownToolError(call.name, self.registry.names)
        if (malformed := call.arguments_error()) is not None:  # the shape's own rule
            return malformed
        if too_large := policy.check_size(call.arguments):
            return too_large
        # validated, with integral numbers made ints (5e3 is 5000 to every cap and handler)
        checked = checked_arguments(spec, call.arguments, self.repair)
        if isinstance(checked, ValidationResult):
            code = "invalid_json" if checked.decode_error else "invalid_arguments"
            count = len(checked.problems)
            reason = (
                checked.problems[0].message if count == 1 else f"{count} problems in the arguments"
            )
            error = ArgumentsError(reason, problems=checked.problems, code=code)
            if checked.repairs:
                error.details["repairs"] = list(checked.repairs)
            return error
        arguments, repairs = checked
        tool = self.tools[call.name]
        read_body = tool.traits.queries and may_name_indices(call.arguments, arguments)
        applied = policy.apply(tool, arguments, read_body=read_body)
        if isinstance(applied, PolicyDenied):
            return applied
        arguments, notes = applied
        if notes and not (recheck := spec.validate(arguments)).ok:
            return PolicyDenied(
                "the operator's limits leave this call invalid: " + recheck.summary(),
                details={"refused": "limits"},
            )
        try:
            request = tool.build(arguments)
        except ToolCallError as exc:  # a custom handler may refuse a call in the model's terms
            return exc
        except Exception as exc:
            return _raised(call.name, "handler", exc)
        if (segment := dot_segment(request.path)) is not None:
            # Whatever handler built it: httpx2 would resolve it away (`dot_segment`): refused.
            return ArgumentsError(
                f"an argument became the path segment {segment!r}, which HTTP reads as a "
                "relative path; nothing was sent. Use a real name"
            )
        if (refused := policy.write_refusal(tool, request)) is not None:
            return refused
        if notes:
            request = replace(request, notes=(*request.notes, *notes))
        if request.template is None and tool.path is not None:
            request = replace(request, template=tool.path)
        tool = reading_tool(tool, request)
        page_from = None
        if tool.paging is not None and tool.paging in spec.parameters.get("properties", {}):
            value = (request.body or {}).get(tool.paging, 0)
            page_from = value if isinstance(value, int) else 0
        named = guard.body_indices(tool, arguments) if read_body else ()
        return Prepared(request, tool, repairs, arguments, page_from, named, policy)

    def flow(self, prepared: Prepared, node: str) -> Flow:
        """Yield each request to send; receive ``(outcome, attempts)``; return the payload."""
        tool, policy = prepared.tool, prepared.policy
        # index names resolved, held to the policy, sent concrete
        concrete = yield from guard.concrete_request(
            self.listing, policy, prepared, prepared.request, node
        )
        if isinstance(concrete, ToolCallError):
            return error_payload(concrete)
        request = concrete.request
        request = with_known_vectors(self, prepared, request, node)  # a cached mapping only
        note: dict[str, Any] | None = None
        provider = rerank_provider(request)
        if request.reranked and (remembered := self.rerank_memory.recall(node, provider)):
            if not self.rerank_fallback:
                return error_payload(EngineError(remembered, code="rerank_unavailable"))
            note = {"applied": False, "reason": remembered, "fallback": REMEMBERED}
            rerank_fallback(None)
            request = request.without_rerank()
        outcome, attempts = yield request
        # a closed index reached: sent again without it
        sent = yield from guard.resend_without_closed(tool, concrete, request, outcome)
        if isinstance(sent, dict):
            return sent
        concrete, request, outcome, more = sent
        attempts += more
        if isinstance(outcome, Reply) and (refusal := rerank_refusal(request, outcome)) is not None:
            if refusal.lasting:  # the node's configuration; a transient fault is not remembered
                scope = provider if refusal.provider_specific else EVERY_PROVIDER
                self.rerank_memory.remember(node, refusal.reason, scope)
            if not self.rerank_fallback:
                error = engine_error(outcome, request, served_advice(tool, self.tools))
                return error_payload(error, attempts=attempts)
            note = {"applied": False, "reason": refusal.reason, "fallback": FALLBACK}
            rerank_fallback(outcome.status)
            request = request.without_rerank()
            outcome, attempts = yield request
        payload = self.payload_for(tool, request, outcome, attempts, note)
        if payload.get("ok") and tool.after is not None:
            # before the policy checks the payload: what the tool's step adds is checked too
            payload = yield from tool.after(prepared.arguments, payload, policy)
            payload = served_queries(payload, self.tools)  # ready queries name tools served
        payload = guard.checked_answer(policy, payload, concrete.authorised)
        return (yield from after_answer(self, prepared, request, outcome, payload, node))

    def payload_for(
        self,
        tool: Tool,
        request: HttpRequest,
        outcome: Outcome,
        attempts: int,
        note: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The payload for what came back: the tool's reading of an answer, else the error."""
        try:
            answered = isinstance(outcome, Reply) and tool.answered(outcome)
            if answered and isinstance(outcome, Reply):
                payload = tool.answer(
                    Received(tool.name, outcome, request, note, attempts, self.tools)
                )
        except EngineError as exc:
            return error_payload(exc, attempts=attempts)
        except Exception as exc:  # a custom tool's reading: nothing raises out of dispatch
            return error_payload(_raised(tool.name, "reader", exc), attempts=attempts)
        if answered:
            # From here on the engine's values are finite and at most MAX_DEPTH deep, so
            # shaping and budget fitting (recursive) and serialising cannot fail on them.
            payload = clean_envelope(payload)  # its hits: as the budget reaches them (`_shape`)
            if "aggregations" in payload:
                payload["aggregations"] = cap_buckets(payload["aggregations"], self.max_buckets)
            return payload
        error = engine_error(outcome, request, served_advice(tool, self.tools))
        return error_payload(error, attempts=attempts)

    def _shape(
        self, name: str, payload: dict[str, Any], prepared: Prepared | None
    ) -> tuple[dict[str, Any], str]:
        """Add the repairs, then fit the payload into the tool's budget; return it serialized.

        The strategy is the prepared call's tool's own (`Tool.fit`; a plain handler's is chosen
        by its request's kind, `reading_tool`); an answer with no prepared call (a refusal) is
        fitted as hits when it holds a list of hits, else as any JSON."""
        if prepared is not None and prepared.repairs:
            payload = {**payload, "repairs": list(prepared.repairs)}
        limit = self.budgets.get(name, self.budget)
        hits = payload.get("hits")
        # a reader of the library's writes plain JSON, which orjson may measure and write
        plain = prepared is not None and prepared.tool.origin != "custom"
        short = not isinstance(hits, list) or len(hits) <= 10
        raw = fast_raw(payload) if plain and short else None
        if short and not (type(limit) is int and surely_longer(raw, limit)):
            # The usual case, serialized once (its hits too, which `clean_envelope` left); a
            # longer list is measured hit by hit instead, as is a short one orjson finds too long.
            cleaned, content = clean_json(payload, plain=plain, raw=raw)
            if within(content, limit):
                return cleaned, content
        page_from = prepared.page_from if prepared is not None else None

        def next_page(shown: int) -> dict[str, int] | None:
            return None if page_from is None else {"from": page_from + shown}

        fit: Fit
        if prepared is not None:
            fit = prepared.tool.fit
            # how to read a cut field whole, from the tool, naming only tools served here
            refetch = prepared.tool.advice.refetch_hint(self.tools)
        else:
            fit, refetch = ("hits" if isinstance(hits, list) else "json"), None
        return fit_message(
            payload, limit, fit=fit, next_page=next_page, plain=plain, refetch=refetch
        )

    def result(
        self,
        call: ToolCall,
        payload: dict[str, Any],
        attempts: int,
        started: float,
        prepared: Prepared | None = None,
    ) -> ToolResult:
        payload, content = self._shape(call.name, payload, prepared)
        result = ToolResult(call, payload, sendable(content), attempts, self.clock() - started)
        record(result)
        if logger.isEnabledFor(logging.DEBUG):
            outcome = "ok" if result.ok else result.code
            logger.debug(
                "%s %s: %s after %d attempt(s)", call.name, call.call_id, outcome, attempts
            )
        return result

    def refusal(self, call: ToolCall, error: ToolCallError, started: float) -> ToolResult:
        return self.result(call, error_payload(error), 0, started)

    def cancelled(self, call: ToolCall, started: float) -> ToolResult:
        reason = "the turn was interrupted before this call finished"
        return self.result(call, error_payload(EngineError(reason, code="cancelled")), 0, started)

    def answer(self, call: ToolCall, code: str, reason: str) -> ToolResult:
        """An answer made without XERJ (a denied or repeated call)."""
        return self.result(call, error_payload(ToolCallError(reason, code=code)), 0, self.clock())

    def duplicate(self, call: ToolCall, first: ToolResult, started: float) -> ToolResult:
        """The answer to a call identical to `first` in the same turn, which was sent once."""
        note = f"identical to call {first.call.call_id} in this turn; XERJ was asked once"
        payload = {**first.payload, "notes": [*first.payload.get("notes", []), note]}
        content = sendable(dumps(payload))
        if not within(content, self.budgets.get(call.name, self.budget)):
            # The first answer was fitted to the budget already (its `next` included): refitting
            # would drop hits behind `next`'s back, so the note gives way instead.
            payload, content = dict(first.payload), first.content
        result = ToolResult(call, payload, content, 0, self.clock() - started)
        record(result, copy_of=first.call.call_id)
        return result
