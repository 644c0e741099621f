"""`xerj-tools mcp`'s options and how they reach the server (the rest of the CLI: `_cli._main`)."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from .._exceptions import ConfigurationError

__all__ = ["add_mcp_arguments", "run_mcp"]


def add_mcp_arguments(mcp: argparse.ArgumentParser) -> None:
    mcp.add_argument(
        "--policy", help="the operator's policy: a .toml or .json file of Policy fields"
    )
    mcp.add_argument(
        "--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp (default: stdio)"
    )
    mcp.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on a non-loopback address (needs --callers: every caller authenticates)",
    )
    mcp.add_argument(
        "--callers",
        metavar="FILE",
        help="who may call over HTTP: bearer tokens (as SHA-256) and OAuth subjects, each with "
        "its policy, tools and limits (.toml or .json; re-read when it changes)",
    )
    mcp.add_argument("--new-token", metavar="NAME", help="print a new token and its callers entry")
    mcp.add_argument("--oauth-issuer", metavar="URL", help="accept this issuer's JWT access tokens")
    mcp.add_argument(
        "--oauth-resource", metavar="URL", help="this server's public URL (the tokens' audience)"
    )
    mcp.add_argument("--oauth-jwks", metavar="URL", help="the issuer's keys (default: discovered)")
    mcp.add_argument(
        "--oauth-claim", default="sub", help="the claim matched to oauth_subject (default: sub)"
    )
    mcp.add_argument(
        "--oauth-scope", action="append", default=[], help="a scope every token needs (repeatable)"
    )
    mcp.add_argument(
        "--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
        help="another Host the server answers to (behind a proxy); repeatable",
    )  # fmt: skip
    mcp.add_argument(
        "--allowed-origin", action="append", default=[], metavar="ORIGIN",
        help="a browser origin allowed to call (e.g. https://app.example.com); repeatable",
    )  # fmt: skip
    mcp.add_argument(
        "--stateless", action="store_true",
        help="no MCP sessions: any replica behind a load balancer serves any request",
    )  # fmt: skip
    mcp.add_argument(
        "--max-in-flight", type=int, metavar="N",
        help="calls running at once, server-wide; more are answered rate_limited (default: no bound)",
    )  # fmt: skip
    mcp.add_argument(
        "--max-connections", type=int, metavar="N",
        help="HTTP connections open at once; one more evicts the one idle longest (default: "
        "1000, at most 3/4 of the open-file limit)",
    )  # fmt: skip
    mcp.add_argument(
        "--pool-size", type=int, default=10, metavar="N",
        help="connections to XERJ per policy (default: 10)",
    )  # fmt: skip
    mcp.add_argument(
        "--max-message-bytes", type=int, default=4 * 1024 * 1024, metavar="N",
        help="the largest MCP message read, stdio or HTTP (default: 4 MiB)",
    )  # fmt: skip
    mcp.add_argument("--url", help="XERJ base URL (default: $XERJ_URL, else http://localhost:9200)")
    mcp.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="warning"
    )


def run_mcp(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        from .._install import install_hint

        raise ConfigurationError(
            f"the MCP server needs the MCP SDK, the `mcp` extra: {install_hint('mcp')}"
        )
    from ..integrations.mcp import OAuthSettings, serve

    if args.new_token is not None:
        return _new_token(args.new_token, out)
    oauth = None
    if args.oauth_issuer or args.oauth_resource:
        if not (args.oauth_issuer and args.oauth_resource):
            raise ConfigurationError("--oauth-issuer and --oauth-resource go together")
        oauth = OAuthSettings(
            args.oauth_issuer, args.oauth_resource, args.oauth_jwks, args.oauth_claim,
            tuple(args.oauth_scope),
        )  # fmt: skip
    for name in ("max_in_flight", "max_connections", "pool_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ConfigurationError(f"--{name.replace('_', '-')} must be at least 1")
    return serve(
        url=args.url,
        policy_path=args.policy,
        http=args.http,
        allow_remote=args.allow_remote,
        log_level=args.log_level,
        err=err,
        callers_path=args.callers,
        oauth=oauth,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        stateless=args.stateless,
        max_in_flight=args.max_in_flight,
        max_connections=args.max_connections,
        pool_size=args.pool_size,
        max_message_bytes=args.max_message_bytes,
    )


def _new_token(name: str, out: TextIO) -> int:
    from ..integrations.mcp._callers import hash_token, new_token

    token = new_token()
    out.write(
        f"token (give it to the caller; it is not stored): {token}\n"
        f"add to the callers file:\n\n[[caller]]\nname = {json.dumps(name)}\n"
        f'token_sha256 = "{hash_token(token)}"\n'
    )
    return 0
