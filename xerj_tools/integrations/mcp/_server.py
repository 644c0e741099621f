"""The MCP server: the registry's tools listed, and each ``tools/call`` answered through an
`AsyncDispatcher` (the package's docstring says what a client gets), served over stdio or HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from mcp import types
    from mcp.server.lowlevel import Server
except ImportError as exc:  # pragma: no cover - the CLI checks before importing this module
    from ..._install import missing_extra

    raise missing_extra("xerj_tools.integrations.mcp", "the MCP SDK", "mcp") from exc

from ..._bounds import value_problem
from ..._dispatch._async import AsyncDispatcher
from ..._dispatch._policy import Policy
from ..._exceptions import ToolCallError, UnknownToolError
from ..._message._format import dumps, error_payload
from ..._schema._registry import ToolRegistry
from ..._shapes import ToolCall
from ..._version import __version__
from ...tools import XERJ_TOOLS, Tool
from ._auth import CallerVerifier
from ._callers import LOCAL, Caller
from ._connections import ConnectionLimits
from ._http import HUNG_UP, HangUpWatch, HostOriginGuard, allowed_names, cancelled_on
from ._limits import CallLimits
from ._output import output_schema
from ._stdio import DEFAULT_MAX_MESSAGE_BYTES, bounded_stdio_server
from ._tenants import Tenants

__all__ = [
    "ToolHints",
    "XerjServer",
    "build_server",
    "instructions",
    "list_tools",
    "serve_http",
    "serve_stdio",
]

logger = logging.getLogger("xerj_tools")


def instructions(listing: Sequence[types.Tool]) -> str:
    """The server's instructions: every tool it lists (by title, else its description's first
    sentence), then how to read a result. Made from the listing, so a custom tool is named and
    a tool the policy leaves out is not."""
    named = "; ".join(f"{t.name}: {t.title or _first_sentence(t.description)}" for t in listing)
    return (
        f"Tools for a XERJ search engine{': ' + named if named else ''}. Every result is JSON with "
        '"ok"; on "ok": false, read error.code and error.hint, fix the call and try again.'
    )


def _first_sentence(text: str | None, limit: int = 120) -> str:
    first = (text or "").split(". ", 1)[0].strip().rstrip(".")
    return (first if len(first) <= limit else first[: limit - 1] + "…") or "no description"


@dataclass(frozen=True)
class ToolHints:
    """What an MCP client is told about a tool besides its schema."""

    title: str
    read_only: bool
    idempotent: bool

    def annotations(self) -> types.ToolAnnotations:
        # Each tool reaches only the configured XERJ nodes: a closed world. A store adds a
        # memory and never overwrites one without its `id`, so it is not destructive; it is
        # not idempotent either (each call without an `id` stores another memory).
        return types.ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=None if self.read_only else False,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


def list_tools(
    registry: ToolRegistry, policy: Policy | None = None, tools: Mapping[str, Tool] = XERJ_TOOLS
) -> list[types.Tool]:
    """The ``tools/list`` entries: the published schemas unchanged, with titles and hints.

    MCP has no strict mode: `inputSchema` is the tool's `parameters` as published, nothing is
    added. A client that fills an optional property it leaves out with ``null`` (the Inspector
    does) gets the audited repair ``$.size: null → omitted`` (docs/messages.md#repairs).

    A read-only policy leaves out the tools that write (a call to one is still refused).
    """
    listed = []
    for spec in registry:
        tool = tools.get(spec.name)
        if policy is not None and policy.read_only and tool is not None and tool.traits.writes:
            continue
        hints = None
        if tool is not None and tool.title is not None:
            # A tool that writes is neither read-only nor idempotent: each store without an `id`
            # adds another memory.
            unchanging = tool.traits.writes is False
            hints = ToolHints(tool.title, read_only=unchanging, idempotent=unchanging)
        listed.append(
            types.Tool(
                name=spec.name,
                title=hints.title if hints else None,
                description=spec.description,
                input_schema=json.loads(json.dumps(spec.parameters)),
                output_schema=output_schema(tool),
                annotations=hints.annotations() if hints else None,
            )
        )
    return listed


class XerjServer(Server[Any]):
    """The SDK's `Server`, whose HTTP app checks Host and Origin on every bind and cancels a
    call whose request the client closed (`_http`)."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    tenants: Tenants | None = None

    def streamable_http_app(self, *, host: str = "127.0.0.1", **options: Any) -> Any:
        from mcp.server.transport_security import TransportSecuritySettings

        # The SDK's own check is off: ours below runs on every bind, before authentication.
        options.setdefault(
            "transport_security", TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        names = allowed_names(host, self.allowed_hosts)
        app = super().streamable_http_app(host=host, **options)
        app.add_middleware(HangUpWatch)
        app.add_middleware(HostOriginGuard, names=names, origins=self.allowed_origins)
        return app


def build_server(
    dispatcher: AsyncDispatcher,
    *,
    verifier: CallerVerifier | None = None,
    make_dispatcher: Callable[[Policy], AsyncDispatcher] | None = None,
    limits: CallLimits | None = None,
) -> XerjServer:
    """A low-level MCP server that lists the dispatcher's tools and runs calls through it.

    With a `verifier` (HTTP with authentication), each request's caller picks the policy
    (a dispatcher from `make_dispatcher`), the tools listed and the limits (`limits`)."""
    tenants = Tenants(dispatcher, list_tools, verifier, make_dispatcher)
    limits = limits or CallLimits()
    everyone = verifier is None

    async def on_list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = tenants.caller(ctx)
        return types.ListToolsResult(tools=tenants.listing(caller) if caller else [])

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.monotonic()
        caller = tenants.caller(ctx)
        call = ToolCall(f"mcp-{ctx.request_id}", params.name, None)
        outcome = "error"
        try:
            payload = await _answer(tenants, limits, caller, ctx, params, call)
            outcome = "ok" if payload.get("ok") else str(payload["error"].get("code"))
        except asyncio.CancelledError:  # the client cancelled: the request in flight is dropped
            outcome = "cancelled by the client"
            raise
        finally:
            logger.info(
                "call by %s: %.64r %s in %.1f ms",
                caller.name if caller else "(unknown caller)",
                params.name,
                outcome,
                (time.monotonic() - started) * 1000,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=dumps(payload))],
            structured_content=dict(payload),
            is_error=not payload.get("ok"),
        )

    listing = tenants.listing(LOCAL)
    server = XerjServer(
        "xerj-tools",
        version=__version__,
        title="XERJ search and memory (xerj-tools)",
        instructions=instructions(listing if everyone else []),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    server.tenants = tenants
    return server


async def _answer(
    tenants: Tenants,
    limits: CallLimits,
    caller: Caller | None,
    ctx: Any,
    params: types.CallToolRequestParams,
    call: ToolCall,
) -> Mapping[str, Any]:
    if caller is None:  # its entry left the callers file since its token was checked
        reason = "this server no longer knows the caller's token (it left the callers file)"
        hint = "Changing the call will not help. Tell the user."
        return error_payload(ToolCallError(reason, code="unauthorized", hint=hint))
    if caller.tools is not None and params.name not in caller.tools:
        offered = ", ".join(t.name for t in tenants.listing(caller))
        reason = (
            f"no tool named {params.name[:64]!r} is offered to this caller; the tools: {offered}"
        )
        return error_payload(ToolCallError(reason, code="unknown_tool"))
    if params.name not in tenants.dispatcher(caller).registry.names:
        # No tool has that name: answered here, naming the tools this caller is offered, and
        # logged once, by the call log (the name is a client's text, shown as a bounded repr).
        listed = [t.name for t in tenants.listing(caller)]
        return error_payload(UnknownToolError(params.name, listed))
    refusal = limits.enter(caller)
    if refusal is not None:
        return refusal
    try:
        # The arguments go back to a JSON string so the dispatcher treats them exactly as a
        # model's: the policy's size cap is measured on it, then decoding, repair, validation.
        arguments = params.arguments if params.arguments is not None else {}
        # Past the input limits (too deep, a non-finite number) encoding would raise: hand the
        # object over as it is, and the dispatcher answers with the reason.
        raw: Any = (
            arguments
            if value_problem(arguments) is not None
            else json.dumps(arguments, ensure_ascii=False)
        )
        scope = getattr(getattr(ctx, "request", None), "scope", None) or {}
        async with tenants.use(caller) as dispatcher:
            run = dispatcher.run(ToolCall(call.call_id, params.name, raw))
            result = await cancelled_on(run, scope.get(HUNG_UP))
    finally:
        limits.leave(caller)
    if result is None:  # the client closed the request: its XERJ call was cancelled
        return error_payload(ToolCallError("the client closed the request", code="cancelled"))
    payload: Mapping[str, Any] = result.payload
    return payload


async def serve_stdio(
    dispatcher: AsyncDispatcher,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    *,
    server: XerjServer | None = None,
) -> None:
    """Serve over this process's stdin and stdout until the client closes stdin; a message
    longer than `max_message_bytes` is answered with an error and never held whole.
    `server` defaults to `build_server(dispatcher)`."""
    server = server or build_server(dispatcher)
    async with bounded_stdio_server(max_message_bytes) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(
    dispatcher: AsyncDispatcher,
    sock: socket.socket,
    path: str = "/mcp",
    *,
    stop: asyncio.Event | None = None,
    server: XerjServer | None = None,
    connections: ConnectionLimits | None = None,
    **options: Any,
) -> None:
    """Serve streamable HTTP on a bound socket until interrupted (SIGINT / SIGTERM).

    `server` defaults to `build_server(dispatcher)`; `options` go to its
    `streamable_http_app` (``stateless_http``, ``auth``, ``token_verifier``, …). With `stop`,
    the caller owns the signals: uvicorn installs no handlers of its own and shuts down
    gracefully (connections, then the sessions) once `stop` is set. `connections` bounds how
    long a request's head and body may take and how many connections are open
    (`_connections`; default `ConnectionLimits()`).
    """
    import uvicorn

    from ._connections import protocol_for

    host = sock.getsockname()[0]
    server = server or build_server(dispatcher)
    app = server.streamable_http_app(streamable_http_path=path, host=host, **options)
    limits = connections or ConnectionLimits()
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        http=protocol_for(limits),
        backlog=limits.accept_batch(),
    )
    if stop is None:
        await uvicorn.Server(config).serve(sockets=[sock])
        return

    class OwnSignals(uvicorn.Server):
        """uvicorn without its signal handlers (which re-raise the signal once shut down)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    uv = OwnSignals(config)

    async def watch() -> None:
        await stop.wait()
        uv.should_exit = True

    watcher = asyncio.ensure_future(watch())
    try:
        await uv.serve(sockets=[sock])
    finally:
        watcher.cancel()
