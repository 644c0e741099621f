"""`xerj-tools mcp`: the registry's tools as an MCP server, over stdio or streamable HTTP.

Every ``tools/call`` goes through an `AsyncDispatcher`, so an MCP client gets what a function
calling model gets: validation, audited repair, the operator's policy, retries, failover and the
budget. The tool message becomes the result's one text block; ``isError`` mirrors ``ok: false``.

    server = build_server(AsyncDispatcher(policy=load_policy_file("policy.toml")))

Built on the SDK's low-level `Server` because the tools' JSON Schemas are published as they
are (FastMCP derives schemas from Python signatures). Needs the ``mcp`` extra
(docs/usage.md#install).
"""

import importlib.util

if importlib.util.find_spec("mcp") is None:  # before any module of the server imports it
    from ..._install import missing_extra

    raise missing_extra("xerj_tools.integrations.mcp", "the MCP SDK", "mcp")

from ._auth import OAuthSettings
from ._callers import CallersFile
from ._http import parse_bind
from ._policy_file import load_policy_file
from ._serve import serve
from ._server import (
    ToolHints,
    XerjServer,
    build_server,
    instructions,
    list_tools,
    serve_http,
    serve_stdio,
)

__all__ = [
    "CallersFile",
    "OAuthSettings",
    "ToolHints",
    "XerjServer",
    "build_server",
    "instructions",
    "list_tools",
    "load_policy_file",
    "parse_bind",
    "serve",
    "serve_http",
    "serve_stdio",
]
