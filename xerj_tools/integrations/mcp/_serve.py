"""`xerj-tools mcp` as a process: read the configuration, refuse what is unsafe, serve, stop.

`serve` is three steps, each usable alone: `configure` checks the options and builds the server
(nothing is served yet; the socket is bound), `serve_logging` writes the package's log to stderr
for as long as it runs, and `run` serves until the client leaves or a signal comes, then stops
in order. `serve_until` is the serving itself, for a caller that owns the event loop and says
when to stop. The server (listing, calls) is `_server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..._dispatch._async import AsyncDispatcher
from ..._dispatch._options import Limits, check_credential, check_url_option
from ..._dispatch._policy import Policy
from ..._exceptions import ConfigurationError
from ..._log_text import OneLineFormatter
from ..._version import __version__
from ._auth import CallerVerifier, OAuthSettings
from ._callers import CallersFile
from ._connections import ConnectionLimits, descriptor_bound
from ._http import bind, cancelled_on, is_loopback, parse_bind
from ._limits import CallLimits
from ._policy_file import load_policy_file
from ._server import XerjServer, build_server, list_tools, serve_http, serve_stdio
from ._stdio import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["Setup", "configure", "run", "serve", "serve_logging", "serve_until", "start_line"]

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
            with contextlib.suppress(RuntimeError):  # the loop has ended: nothing to wake
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
    """What `configure` made: the server, its default dispatcher and policy, the HTTP app's
    options, the bound socket (None over stdio), the callers file and the bounds on the
    connections; with what the start line names. Closing it (or leaving its ``with``) closes the
    socket; the dispatchers close when serving ends."""

    server: XerjServer
    dispatcher: AsyncDispatcher
    policy: Policy
    options: dict[str, Any]
    sock: socket.socket | None
    callers: CallersFile | None
    connections: ConnectionLimits
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    policy_path: str | None = None
    callers_path: str | None = None
    oauth: OAuthSettings | None = None
    allow_remote: bool = False

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()

    def __enter__(self) -> Setup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dispatcher_factory(
    url: str | None, authorization: str | None, pool_size: int
) -> Callable[[Policy], AsyncDispatcher]:
    """One configuration of the XERJ side for every dispatcher of the server: the default one
    and one per caller's policy (the policy is all that differs)."""
    check_url_option(url)  # checked once, here, before a socket is bound
    check_credential("authorization", authorization)
    limits = Limits(pool_size=pool_size)

    def make(policy: Policy) -> AsyncDispatcher:
        return AsyncDispatcher(url=url, authorization=authorization, limits=limits, policy=policy)

    return make


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
    address = parse_bind(http, allow_remote=allow_remote) if http is not None else None
    host = address[0] if address is not None else None
    if host is not None and not is_loopback(host) and verifier is None:
        raise ConfigurationError(
            f"refusing to serve on {host} without authentication: add --callers FILE (bearer "
            "tokens stored as hashes, each with its policy; xerj-tools mcp --new-token NAME "
            "makes one), and --oauth-issuer URL --oauth-resource URL to accept OAuth access "
            "tokens too"
        )
    limits = CallLimits(max_in_flight)
    # One configuration, checked before the socket is bound; each caller's policy replaces it.
    make = dispatcher_factory(url, authorization, pool_size)
    sock = bind(*address) if address is not None else None
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
    return Setup(
        server, dispatcher, policy, options, sock, callers, connections,
        max_message_bytes, policy_path, callers_path, oauth, allow_remote,
    )  # fmt: skip


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


def start_line(setup: Setup) -> str:
    """What the server says on stderr once it is ready: tools, transport, XERJ, policy and
    callers, then `warnings` about who can reach it."""
    dispatcher, sock, callers = setup.dispatcher, setup.sock, setup.callers
    shown = len(list_tools(dispatcher.registry, setup.policy))
    where, host = "stdio", None
    if sock is not None:
        host, port = sock.getsockname()[:2]
        where = f"streamable HTTP on http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
        where += " (stateless)" if setup.options.get("stateless_http") else ""
    access = ""
    if callers is not None:
        access = f"; {len(callers)} callers ({setup.callers_path}"
        access += f", OAuth issuer {setup.oauth.issuer})" if setup.oauth else ")"
    return (
        f"xerj-tools mcp {__version__}: {shown} tools over {where}; XERJ at "
        f"{', '.join(dispatcher.urls)}; policy {setup.policy_path or '(default)'}{access}\n"
    ) + warnings(host, allow_remote=setup.allow_remote, callers=callers)


@contextlib.contextmanager
def serve_logging(err: TextIO, level: str = "warning") -> Iterator[None]:
    """The server's log to `err` while the block runs, one line per record: the ``xerj_tools``
    logger at `level`, the MCP SDK's ``mcp`` logger from WARNING. The root logger is left
    alone: an application that runs the server keeps its own logging (records still propagate
    to its handlers). Handlers and level are put back on exit."""
    handler = logging.StreamHandler(err)
    # Every record on one line (a tool name can hold a newline).
    handler.setFormatter(OneLineFormatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    sdk_handler = logging.StreamHandler(err)
    sdk_handler.setFormatter(handler.formatter)
    sdk_handler.setLevel(logging.WARNING)
    sdk = logging.getLogger("mcp")  # a malformed message, a session's error: a client's text
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    sdk.addHandler(sdk_handler)
    try:
        yield
    finally:
        sdk.removeHandler(sdk_handler)
        logger.removeHandler(handler)
        logger.setLevel(previous)


async def serve_until(setup: Setup, stop: asyncio.Event) -> None:
    """Serve until `stop` is set or, over stdio, the client closes stdin. Then the HTTP server
    stops accepting and its sessions end (a stdio session is cancelled), then every dispatcher
    closes with its connections to XERJ."""
    server = setup.server
    async with setup.dispatcher:
        try:
            if setup.sock is not None:
                await serve_http(
                    setup.dispatcher,
                    setup.sock,
                    stop=stop,
                    server=server,
                    connections=setup.connections,
                    **setup.options,
                )
            else:
                stdio = serve_stdio(setup.dispatcher, setup.max_message_bytes, server=server)
                await cancelled_on(stdio, stop)
        finally:
            if server.tenants is not None:
                await server.tenants.aclose()


async def _until_signal(setup: Setup, signals: _Signals) -> None:
    await serve_until(setup, signals.event())
    if signals.received is not None:
        name = signal.Signals(signals.received).name
        logger.info("stopped on %s: sessions and XERJ connections closed", name)


def run(setup: Setup, err: TextIO) -> int:
    """Write the start line to `err`, serve until the client leaves (stdio) or SIGINT or SIGTERM
    (`serve_until`), and return 0; after SIGINT raise `KeyboardInterrupt`, once stopped.

    The signals are caught before the start line is written: a client may interrupt on seeing
    it, and an interrupt at any moment (even before the event loop runs) ends in the same stop.
    """
    with _Signals() as signals:
        err.write(start_line(setup))
        err.flush()
        asyncio.run(_until_signal(setup, signals))
    if signals.received == signal.SIGINT:
        raise KeyboardInterrupt  # after the clean stop: the CLI says "interrupted", exits 130
    return 0


def serve(
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
    log_level: str = "warning",
    err: TextIO | None = None,
) -> int:
    """Run the server until the client leaves (stdio) or the process is interrupted (HTTP):
    `configure`, then `run` with `serve_logging`.

    `url` defaults to ``$XERJ_URL`` and the key to ``$XERJ_API_KEY``, as for `Dispatcher`;
    `authorization` (a ready header value) defaults to ``$XERJ_AUTH``, which XERJ's own MCP
    server reads, and wins over the key. Configuration errors raise `ConfigurationError`
    before anything is served. The log (`log_level`) and the start line go to `err` (default:
    stderr; on stdio, stdout carries the protocol).

    SIGINT and SIGTERM stop it gracefully at any moment, even right after the start line:
    the HTTP server stops accepting, its sessions close, then the dispatcher. SIGTERM (a
    service manager's stop) returns 0; SIGINT raises `KeyboardInterrupt` after the stop,
    which the CLI reports as one line, ``xerj-tools: interrupted``, and exit status 130.
    """
    err = err or sys.stderr
    setup = configure(
        url=url, policy_path=policy_path, http=http, allow_remote=allow_remote,
        authorization=authorization, callers_path=callers_path, oauth=oauth,
        allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, stateless=stateless,
        max_in_flight=max_in_flight, max_connections=max_connections, pool_size=pool_size,
        max_message_bytes=max_message_bytes,
    )  # fmt: skip
    with setup, serve_logging(err, log_level):
        return run(setup, err)
