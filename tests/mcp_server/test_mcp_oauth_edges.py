"""OAuth access tokens at the edges, over real HTTP on 127.0.0.1 with a local issuer: a required
scope and the callers file's own tokens, scope claims of odd shapes, two callers whose tokens
share `sub` and `client_id`, and the leeway on `exp`."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from xerj_tools.testing import XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from mcp_team_support import HEADERS, INIT, Issuer, Running

from xerj_tools.integrations.mcp import OAuthSettings
from xerj_tools.integrations.mcp._callers import hash_token

RESOURCE = "http://127.0.0.1/mcp"
TOKEN = "xt_oauth-edges-bearer"


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn() as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    issuer = Issuer()
    yield issuer
    issuer.close()


@pytest.fixture
def callers(tmp_path: Path) -> Path:
    path = tmp_path / "callers.toml"
    path.write_text(
        f"""
[[caller]]
name = "bearer"
token_sha256 = "{hash_token(TOKEN)}"

[[caller]]
name = "tenant-a"
oauth_subject = "t-a"

[[caller]]
name = "tenant-b"
oauth_subject = "t-b"
"""
    )
    return path


def post(
    url: str, token: str, body: Any = INIT, session: str | None = None, method: str = "POST"
) -> httpx2.Response:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    return httpx2.request(method, url, json=body, headers=headers, timeout=10)


def test_callers_file_tokens_keep_working_beside_a_required_scope(
    xerj: XerjStandIn, callers: Path, issuer: Issuer
) -> None:
    oauth = OAuthSettings(issuer.url, RESOURCE, claim="tenant", scopes=("xerj",))
    with Running(url=xerj.url, callers_path=str(callers), oauth=oauth) as server:
        assert post(server.url, TOKEN).status_code == 200
        scoped = issuer.token(RESOURCE, tenant="t-a", scope="xerj other")
        assert post(server.url, scoped).status_code == 200
        assert post(server.url, issuer.token(RESOURCE, tenant="t-a")).status_code == 401


@pytest.mark.parametrize("scope", [5, {"a": 1}, [1, 2], True])
def test_a_scope_claim_of_another_shape_is_refused_not_an_error(
    xerj: XerjStandIn, callers: Path, issuer: Issuer, scope: Any, caplog: pytest.LogCaptureFixture
) -> None:
    oauth = OAuthSettings(issuer.url, RESOURCE, claim="tenant")
    with Running(url=xerj.url, callers_path=str(callers), oauth=oauth) as server:
        with caplog.at_level(logging.INFO):
            token = issuer.token(RESOURCE, tenant="t-a", scope=scope)
            assert post(server.url, token).status_code == 401
        assert "scope claim is neither text nor a list" in caplog.text
        assert not any(r.exc_info for r in caplog.records)
        assert post(server.url, issuer.token(RESOURCE, tenant="t-a")).status_code == 200


def test_two_callers_whose_tokens_share_sub_and_client_id_never_share_a_session(
    xerj: XerjStandIn, callers: Path, issuer: Issuer
) -> None:
    oauth = OAuthSettings(issuer.url, RESOURCE, claim="tenant")
    shared = {"sub": "one-user", "client_id": "one-client"}
    a = issuer.token(RESOURCE, tenant="t-a", **shared)
    b = issuer.token(RESOURCE, tenant="t-b", **shared)
    with Running(url=xerj.url, callers_path=str(callers), oauth=oauth) as server:
        opened = post(server.url, a)
        session = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(server.url, a, initialized, session).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert post(server.url, b, listing, session).status_code == 404
        assert post(server.url, b, None, session, method="DELETE").status_code == 404
        assert post(server.url, a, listing, session).status_code == 200
        # One caller's own tokens, renewed, keep the session (same sub, client, caller).
        renewed = issuer.token(RESOURCE, tenant="t-a", iat=int(time.time()) + 1, **shared)
        assert post(server.url, renewed, listing, session).status_code == 200


def test_exp_has_the_documented_30_s_of_leeway(
    xerj: XerjStandIn, callers: Path, issuer: Issuer
) -> None:
    oauth = OAuthSettings(issuer.url, RESOURCE, claim="tenant")
    now = int(time.time())
    with Running(url=xerj.url, callers_path=str(callers), oauth=oauth) as server:
        assert (
            post(server.url, issuer.token(RESOURCE, tenant="t-a", exp=now - 10)).status_code == 200
        )
        assert (
            post(server.url, issuer.token(RESOURCE, tenant="t-a", exp=now - 60)).status_code == 401
        )
