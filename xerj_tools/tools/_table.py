"""The library's own tools by name, and the dispatcher's table of tools: its own that a registry
names, plain handlers wrapped as tools, yours; and what a table serves the model (advice and
hints that name only tools the table has).

A plain handler (``handlers={name: fn}``) becomes a `Tool` whose policy traits are inferred
from its arguments' names (see `Tool`); over a tool of the library's own name it keeps that
tool's checks and traits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from .._http._models import HttpRequest
from ._discovery import DESCRIBE_INDEX, LIST_INDICES
from ._document import GET_DOCUMENT
from ._limits import Limit
from ._memory import RECALL, STORE
from ._search import HYBRID, SEARCH, SEMANTIC, VECTOR
from ._tool import Handler, Tool, read_json

__all__ = [
    "HANDLERS",
    "XERJ_TOOLS",
    "handler_tool",
    "reading_tool",
    "served_advice",
    "served_hints",
    "tool_table",
]

XERJ_TOOLS: Mapping[str, Tool] = MappingProxyType(
    {
        t.name: t
        for t in (
            SEARCH,
            SEMANTIC,
            VECTOR,
            HYBRID,
            STORE,
            RECALL,
            GET_DOCUMENT,
            LIST_INDICES,
            DESCRIBE_INDEX,
        )
    }
)
"""The library's own tools by name (read-only)."""

HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {name: tool.build for name, tool in XERJ_TOOLS.items()}
)
"""The library's own tools' request builders by name (read-only; each is `Tool.build`)."""

# A plain handler's reply is read as the request it built says (`HttpRequest.kind`): the one
# place a kind string picks a reading, kept for the ``handlers=`` contract.
_BY_KIND: Mapping[str, Tool] = MappingProxyType(
    {"search": SEARCH, "memory_store": STORE, "memory_recall": RECALL}
)


def handler_tool(name: str, handler: Handler) -> Tool:
    """A plain handler as a `Tool`. Over a tool of the library's own name it keeps that tool's
    checks and policy traits; otherwise every trait is inferred (the policy fails closed)."""
    base = XERJ_TOOLS.get(name)
    if base is not None:
        return replace(base, build=handler, origin="handler")
    return Tool(name=name, build=handler, strict_arguments=False, origin="handler")


def reading_tool(tool: Tool, request: HttpRequest) -> Tool:
    """The tool that reads the reply to `request`: a plain handler's by its request's kind."""
    if tool.origin != "handler":
        return tool
    like = _BY_KIND.get(request.kind)
    if like is None:
        return replace(tool, read=read_json, fit="json", paging=None)
    advice = replace(tool.advice, refetch=like.advice.refetch)
    return replace(tool, read=like.read, fit=like.fit, paging=like.paging, advice=advice)


def tool_table(
    names: Iterable[str], handlers: Mapping[str, Handler] | None, tools: Iterable[Tool]
) -> dict[str, Tool]:
    """The dispatcher's tools: the library's own that `names` lists, then plain handlers, then
    your `Tool` objects (each replaces a tool of the same name)."""
    wanted = set(names)
    table = {name: tool for name, tool in XERJ_TOOLS.items() if name in wanted}
    for name, handler in (handlers or {}).items():
        table[name] = handler_tool(name, handler)
    for tool in tools:
        table[tool.name] = tool
    return table


def served_advice(
    tool: Tool, served: Collection[str]
) -> Callable[[HttpRequest], str | None] | None:
    """The tool's `too_large` advice for a dispatcher that serves the tools named `served`: an
    advice naming one of the library's tools that is not among them is left out (the error's
    own words stand), so that the model is never sent to a tool it does not have."""
    too_large = tool.advice.too_large
    if too_large is None:
        return None

    def advise(request: HttpRequest) -> str | None:
        said = too_large(request)
        return None if said is None or _absent(said, served) else said

    return advise


_NAMED = re.compile(r"\bxerj_[a-z_]+\b")


def served_hints(table: Mapping[str, Tool], limits: Mapping[str, Sequence[Limit]]) -> list[Tool]:
    """Each tool of `table` whose argument `hints` name one of the library's tools that `table`
    lacks, with those hints left out, so that no message sends the model to a tool it does not
    have (a hybrid search's ``aggs`` hint names ``xerj_search``); its limits are to be derived
    again. `limits` are the registry's by tool: limits of your own there
    (``load_registry(checks=...)``), not derived from the tool, are kept."""
    out = []
    for tool in table.values():
        hints = tool.advice.hints
        kept = {k: v for k, v in hints.items() if not _absent(v, table)}
        derived = tuple(limits.get(tool.name, ()))[1:] == tool.limits  # `Tool.limits_for`'s
        if len(kept) < len(hints) and derived:
            out.append(replace(tool, advice=replace(tool.advice, hints=kept)))
    return out


def _absent(text: str, served: Collection[str]) -> bool:
    return any(n in XERJ_TOOLS and n not in served for n in _NAMED.findall(text))
