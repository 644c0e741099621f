"""`xerj-tools mcp` as a process: read the configuration, refuse what is unsafe, serve, stop.

Split from `mcp` (the server itself) so that each stays one screen of concern.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from .._dispatch._async import AsyncDispatcher
from .._dispatch._options import Settings
from .._dispatch._policy import Policy
from .._exceptions import ConfigurationError
from .._log_text import OneLineFormatter
from .._version import __version__
from ._mcp_auth import CallerVerifier, OAuthSettings
from ._mcp_callers import CallersFile
from ._mcp_connections import ConnectionLimits, descriptor_bound
from ._mcp_http import bind, is_loopback, parse_bind
from ._mcp_limits import CallLimits
from ._mcp_server import XerjServer, build_server, list_tools, serve_http, serve_stdio
from ._mcp_stdio import DEFAULT_MAX_MESSAGE_BYTES
from ._policy_file import load_policy_file

__all__ = ["serve"]

logger = logging.getLogger("xerj_tools")


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


def _auth_options(verifier: CallerVerifier, oauth: OAuthSettings | None) -> dict[str, Any]:
    from mcp.server.auth.settings import AuthSettings

    if oauth is None:
        # Bearer tokens of the callers file only: the SDK's settings want an issuer, used only
        # for the metadata that is published with a resource URL, which is not set here.
        fields: dict[str, Any] = {
            "issuer_url": "https://callers-file.invalid",
            "resource_server_url": None,
        }
    else:
        fields = {
            "issuer_url": oauth.issuer,
            "resource_server_url": oauth.resource,
            "required_scopes": list(oauth.scopes) or None,
            "validate_token_resource": False,  # the verifier checks `aud` against the resource
        }
    # From a mapping, so that the URLs keep their spelling (no trailing slash added): the
    # issuer in the metadata must equal the tokens' `iss` exactly (RFC 8414).
    return {"auth": AuthSettings.model_validate(fields), "token_verifier": verifier}


@dataclass
class Setup:
    """What `configure` made: the server, its default dispatcher, the HTTP app's options, the
    bound socket (None over stdio) and the bounds on its connections."""

    server: XerjServer
    dispatcher: AsyncDispatcher
    policy: Policy
    options: dict[str, Any]
    sock: socket.socket | None
    callers: CallersFile | None
    connections: ConnectionLimits


def configure(
    *,
    url: str | None = None,
    policy_path: str | None = None,
    http: str | None = None,
    allow_remote: bool = False,
    authorization: str | None = None,
    callers_path: str | None = None,
    oauth: OAuthSettings | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    stateless: bool = False,
    max_in_flight: int | None = None,
    max_connections: int | None = None,
    pool_size: int = 10,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Setup:
    """Check the options and build the server; `ConfigurationError` says what is wrong (among
    other things, a non-loopback bind without authentication, whatever `allow_remote` says)."""
    authorization = authorization or os.environ.get("XERJ_AUTH") or None
    policy = load_policy_file(policy_path) if policy_path is not None else Policy()
    if http is None and (callers_path or oauth or stateless or allowed_hosts or allowed_origins):
        raise ConfigurationError(
            "--callers, --oauth-*, --stateless, --allowed-host and --allowed-origin are for "
            "--http; over stdio the client that starts the server is its only caller"
        )
    if oauth is not None and callers_path is None:
        raise ConfigurationError(
            "--oauth-issuer needs --callers FILE: each OAuth subject is a caller there "
            "(oauth_subject = ...), with its policy"
        )
    if max_message_bytes < 1024:
        raise ConfigurationError("--max-message-bytes must be at least 1024")
    callers = CallersFile(callers_path) if callers_path is not None else None
    verifier = CallerVerifier(callers, oauth) if callers is not None else None
    host = parse_bind(http, allow_remote=allow_remote)[0] if http is not None else None
    if host is not None and not is_loopback(host) and verifier is None:
        raise ConfigurationError(
            f"refusing to serve on {host} without authentication: add --callers FILE (bearer "
            "tokens stored as hashes, each with its policy; xerj-tools mcp --new-token NAME "
            "makes one), and --oauth-issuer URL --oauth-resource URL to accept OAuth access "
            "tokens too"
        )
    limits = CallLimits(max_in_flight)
    # One configuration, checked before the socket is bound; each caller's policy replaces it.
    Settings(url=url, authorization=authorization, pool_size=pool_size)
    sock = bind(*parse_bind(http, allow_remote=allow_remote)) if http is not None else None

    def make(p: Policy) -> AsyncDispatcher:
        return AsyncDispatcher(url=url, authorization=authorization, pool_size=pool_size, policy=p)

    try:
        dispatcher = make(policy)
        server = build_server(dispatcher, verifier=verifier, make_dispatcher=make, limits=limits)
        server.allowed_hosts, server.allowed_origins = tuple(allowed_hosts), tuple(allowed_origins)
        options: dict[str, Any] = {
            "stateless_http": stateless,
            "max_request_body_size": max_message_bytes,
        }
        if verifier is not None:
            options.update(_auth_options(verifier, oauth))
        if sock is not None:  # the Host rule is checked now, not at the first request
            server.streamable_http_app(host=sock.getsockname()[0], **options)
    except ConfigurationError:
        if sock is not None:
            sock.close()
        raise
    connections = ConnectionLimits(max_connections=descriptor_bound(max_connections))
    return Setup(server, dispatcher, policy, options, sock, callers, connections)


def warnings(host: str | None, *, allow_remote: bool, callers: CallersFile | None) -> str:
    """The lines written after the start line about who can reach the server (may be "")."""
    if host is None:
        return ""
    if not is_loopback(host):
        return (
            f"xerj-tools mcp: warning: serving on {host}, reachable from other machines; "
            "every request must carry a caller's token. Put TLS in front (a reverse proxy): "
            "over plain HTTP a token can be read on the way\n"
        )
    if not allow_remote:
        return ""
    open_to_all = "" if callers else (
        "; there is no authentication (no --callers): any process on this machine that can "
        "reach the port can call the tools"
    )  # fmt: skip
    return (
        f"xerj-tools mcp: note: --allow-remote has no effect on a loopback address{open_to_all}\n"
    )


def serve(
    *,
    log_level: str = "warning",
    err: TextIO | None = None,
    policy_path: str | None = None,
    http: str | None = None,
    oauth: OAuthSettings | None = None,
    callers_path: str | None = None,
    stateless: bool = False,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **options: Any,
) -> int:
    """Run the server until the client leaves (stdio) or the process is interrupted (HTTP).

    `url` defaults to ``$XERJ_URL`` and the key to ``$XERJ_API_KEY``, as for `Dispatcher`;
    `authorization` (a ready header value) defaults to ``$XERJ_AUTH``, which XERJ's own MCP
    server reads, and wins over the key. Configuration errors raise `ConfigurationError`
    before anything is served (`configure`).

    SIGINT and SIGTERM stop it gracefully at any moment, even right after the start line:
    the HTTP server stops accepting, its sessions close, then the dispatcher. SIGTERM (a
    service manager's stop) returns 0; SIGINT raises `KeyboardInterrupt` after the stop,
    which the CLI reports as one line, ``xerj-tools: interrupted``, and exit status 130.
    """
    err = err or sys.stderr
    setup = configure(
        policy_path=policy_path, http=http, oauth=oauth, callers_path=callers_path,
        stateless=stateless, max_message_bytes=max_message_bytes, **options,
    )  # fmt: skip
    server, dispatcher, policy, sock, callers = (
        setup.server, setup.dispatcher, setup.policy, setup.sock, setup.callers
    )  # fmt: skip
    host = sock.getsockname()[0] if sock is not None else None
    shown = len(list_tools(dispatcher.registry, policy))
    where = "stdio"
    if sock is not None:
        host, port = sock.getsockname()[:2]
        where = f"streamable HTTP on http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
        where += " (stateless)" if stateless else ""
    # Logs go to stderr: on stdio, stdout carries the protocol.
    handler = logging.StreamHandler(err)
    # Every record on one line, whichever logger made it (a tool name can hold a newline).
    handler.setFormatter(OneLineFormatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)
    logger.setLevel(log_level.upper())
    signals = _Signals().__enter__()  # before the start line: a client may interrupt on seeing it
    access = ""
    if callers is not None:
        access = f"; {len(callers)} callers ({callers_path}"
        access += f", OAuth issuer {oauth.issuer})" if oauth else ")"
    err.write(
        f"xerj-tools mcp {__version__}: {shown} tools over {where}; XERJ at "
        f"{', '.join(dispatcher.urls)}; policy {policy_path or '(default)'}{access}\n"
    )
    err.write(warnings(host, allow_remote=bool(options.get("allow_remote")), callers=callers))
    err.flush()

    async def main() -> None:
        stdio_stopped = False
        stop = signals.event()
        async with dispatcher:  # the sessions end inside; the XERJ connections close on exit
            if sock is not None:
                await serve_http(
                    dispatcher,
                    sock,
                    stop=stop,
                    server=server,
                    connections=setup.connections,
                    **setup.options,
                )
            else:
                serving = asyncio.ensure_future(
                    serve_stdio(dispatcher, max_message_bytes, server=server)
                )
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
            if server.tenants is not None:
                await server.tenants.aclose()
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
