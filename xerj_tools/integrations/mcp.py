"""`xerj-tools mcp`: the registry's tools as an MCP server, over stdio or streamable HTTP.

Every ``tools/call`` goes through an `AsyncDispatcher`, so an MCP client gets what a function
calling model gets: validation, audited repair, the operator's policy, retries, failover and the
budget. The tool message becomes the result's one text block; ``isError`` mirrors ``ok: false``.

    server = build_server(AsyncDispatcher(policy=load_policy_file("policy.toml")))

Built on the SDK's low-level `Server` because the tools' JSON Schemas are published as they
are (FastMCP derives schemas from Python signatures). Needs ``pip install 'xerj-tools[mcp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

try:
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # pragma: no cover - the CLI checks before importing this module
    raise ImportError(
        "xerj_tools.integrations.mcp needs the MCP SDK: pip install 'xerj-tools[mcp]'"
    ) from exc

from .._async_dispatch import AsyncDispatcher
from .._bounds import value_problem
from .._calls import ToolCall
from .._exceptions import ConfigurationError
from .._policy import Policy
from .._registry import ToolRegistry
from .._version import __version__
from ..tools import XERJ_TOOLS, Tool
from ._policy_file import load_policy_file

__all__ = [
    "ToolHints",
    "build_server",
    "instructions",
    "list_tools",
    "load_policy_file",
    "parse_bind",
    "serve",
    "serve_http",
    "serve_stdio",
    "tool_hints",
]

logger = logging.getLogger("xerj_tools")


def instructions(listing: Sequence[types.Tool]) -> str:
    """The server's instructions: every tool it lists (by title, else its description's first
    sentence), then how to read a result. Made from the listing, so a custom tool is named and
    a tool the policy leaves out is not."""
    named = "; ".join(f"{t.name}: {t.title or _first_sentence(t.description)}" for t in listing)
    return (
        f"Tools for a XERJ search engine: {named}. Every result is JSON with "
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


def tool_hints(tool: Tool) -> ToolHints | None:
    """A tool's title and hints, from its `Tool` (a tool that writes is neither read-only nor
    idempotent: each store without an `id` adds another memory)."""
    if tool.title is None:
        return None
    return ToolHints(tool.title, tool.writes is False, tool.writes is False)


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
        if policy is not None and policy.read_only and tool is not None and tool.writes:
            continue
        hints = tool_hints(tool) if tool is not None else None
        listed.append(
            types.Tool(
                name=spec.name,
                title=hints.title if hints else None,
                description=spec.description,
                input_schema=json.loads(json.dumps(spec.parameters)),
                annotations=hints.annotations() if hints else None,
            )
        )
    return listed


def build_server(dispatcher: AsyncDispatcher) -> Server[Any]:
    """A low-level MCP `Server` that lists the dispatcher's tools and runs calls through it."""
    listing = list_tools(dispatcher.registry, dispatcher.policy, dispatcher.tools)

    async def on_list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
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
        call = ToolCall(f"mcp-{ctx.request_id}", params.name, raw)
        try:
            result = await dispatcher.run(call)
        except asyncio.CancelledError:  # the client cancelled: the request in flight is dropped
            logger.info("%s %s: cancelled by the client", params.name, call.call_id)
            raise
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)], is_error=not result.ok
        )

    return Server(
        "xerj-tools",
        version=__version__,
        title="XERJ search and memory (xerj-tools)",
        instructions=instructions(listing),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


async def serve_stdio(dispatcher: AsyncDispatcher) -> None:
    """Serve over this process's stdin and stdout until the client closes stdin."""
    server = build_server(dispatcher)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(
    dispatcher: AsyncDispatcher,
    sock: socket.socket,
    path: str = "/mcp",
    *,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve streamable HTTP on a bound socket until interrupted (SIGINT / SIGTERM).

    With `stop`, the caller owns the signals: uvicorn installs no handlers of its own and
    shuts down gracefully (connections, then the sessions) once `stop` is set.
    """
    import uvicorn

    host = sock.getsockname()[0]
    app = build_server(dispatcher).streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    if stop is None:
        await uvicorn.Server(config).serve(sockets=[sock])
        return

    class OwnSignals(uvicorn.Server):
        """uvicorn without its signal handlers (which re-raise the signal once shut down)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    server = OwnSignals(config)

    async def watch() -> None:
        await stop.wait()
        server.should_exit = True

    watcher = asyncio.ensure_future(watch())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()


class _Signals:
    """SIGINT and SIGTERM recorded, never raised: the server stops where it chooses to.

    Installed before the start line is written, so an interrupt at any moment (even before
    the event loop exists) ends in the same clean stop instead of a KeyboardInterrupt landing
    inside asyncio's own setup or teardown.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            self.received = signum
        if self._wake is not None:
            loop, event = self._wake
            loop.call_soon_threadsafe(event.set)

    def event(self) -> asyncio.Event:
        """An event set on the first signal (already set if one came before the loop ran)."""
        event = asyncio.Event()
        self._wake = (asyncio.get_running_loop(), event)
        if self.received is not None:
            event.set()
        return event


_LOOPBACK_NAMES = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it could resolve anywhere


def parse_bind(text: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT``, ``:PORT`` or ``PORT`` -> (host, port); loopback unless
    `allow_remote`: the HTTP transport has no authentication of its own."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigurationError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765); got {text!r}")
    if not allow_remote and not _is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve on {host}: it is not a loopback address and the MCP server has "
            "no authentication of its own. Bind to 127.0.0.1 (behind an authenticating proxy), "
            "or pass --allow-remote if every client that can reach it may use the tools"
        )
    return host, int(port_text)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def serve(
    *,
    url: str | None = None,
    policy_path: str | None = None,
    http: str | None = None,
    allow_remote: bool = False,
    authorization: str | None = None,
    log_level: str = "warning",
    err: TextIO | None = None,
) -> int:
    """Run the server until the client leaves (stdio) or the process is interrupted (HTTP).

    `url` defaults to ``$XERJ_URL`` and the key to ``$XERJ_API_KEY``, as for `Dispatcher`;
    `authorization` (a ready header value) defaults to ``$XERJ_AUTH``, which XERJ's own MCP
    server reads, and wins over the key. Configuration errors raise `ConfigurationError`
    before anything is served.

    SIGINT and SIGTERM stop it gracefully at any moment, even right after the start line:
    the HTTP server stops accepting, its sessions close, then the dispatcher. SIGTERM (a
    service manager's stop) returns 0; SIGINT raises `KeyboardInterrupt` after the stop,
    which the CLI reports as one line, ``xerj-tools: interrupted``, and exit status 130.
    """
    err = err or sys.stderr
    authorization = authorization or os.environ.get("XERJ_AUTH") or None
    policy = load_policy_file(policy_path) if policy_path is not None else Policy()
    sock = _bind(*parse_bind(http, allow_remote=allow_remote)) if http is not None else None
    try:
        dispatcher = AsyncDispatcher(url=url, authorization=authorization, policy=policy)
    except ConfigurationError:
        if sock is not None:
            sock.close()
        raise
    shown = len(list_tools(dispatcher.registry, policy))
    where = "stdio"
    if sock is not None:
        host, port = sock.getsockname()[:2]
        where = f"streamable HTTP on http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    # Logs go to stderr: on stdio, stdout carries the protocol.
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)
    logger.setLevel(log_level.upper())
    signals = _Signals().__enter__()  # before the start line: a client may interrupt on seeing it
    err.write(
        f"xerj-tools mcp {__version__}: {shown} tools over {where}; XERJ at "
        f"{', '.join(dispatcher.urls)}; policy {policy_path or '(default)'}\n"
    )
    err.flush()

    async def main() -> None:
        stdio_stopped = False
        stop = signals.event()
        async with dispatcher:  # the sessions end inside; the XERJ connections close on exit
            if sock is not None:
                await serve_http(dispatcher, sock, stop=stop)
            else:
                serving = asyncio.ensure_future(serve_stdio(dispatcher))
                stopping = asyncio.ensure_future(stop.wait())
                await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                if serving.done():
                    serving.result()
                else:
                    # The SDK's stdin reader sits in read(2) on a thread that nothing can wake:
                    # stop serving, close the dispatcher, then end the process without it.
                    serving.cancel()
                    stdio_stopped = True
        if signals.received is not None:
            name = signal.Signals(signals.received).name
            logger.info("stopped on %s: sessions and XERJ connections closed", name)
        if stdio_stopped:
            if signals.received == signal.SIGINT:
                err.write("xerj-tools: interrupted\n")
            err.flush()
            os._exit(130 if signals.received == signal.SIGINT else 0)

    try:
        asyncio.run(main())
    finally:
        signals.__exit__()
        if sock is not None:
            sock.close()
        logging.getLogger().removeHandler(handler)
    if signals.received == signal.SIGINT:
        raise KeyboardInterrupt  # after the clean stop: the CLI says "interrupted", exits 130
    return 0
