"""`xerj-tools mcp --http` for a team, over real HTTP on 127.0.0.1 with the MCP SDK's client:
Host and Origin checks on every bind, bearer tokens from a callers file (rotated without a
restart), OAuth access tokens from a local issuer, a policy, tools and limits per caller, the
call log, structured results, and a call cancelled when its client hangs up."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from xerj_tools._cli._main import main
from xerj_tools.testing import Fault, XerjStandIn

pytest.importorskip("mcp", reason="the MCP SDK is not installed")

from mcp_team_support import HEADERS, INIT, Issuer, Running, connect, tenants_node, text_of
from support import until_async

from xerj_tools.integrations.mcp._callers import hash_token

TOKEN_A, TOKEN_B, TOKEN_C = "xt_tenant-a-secret-1", "xt_tenant-b-secret-2", "xt_tenant-c-secret-3"
SEARCH = {"index": "tenant-a-docs", "query": {"match_all": {}}}


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with tenants_node() as stand_in:
        yield stand_in


@pytest.fixture
def callers(tmp_path: Path) -> Path:
    (tmp_path / "a.toml").write_text('allow_indices = ["tenant-a-*"]\nnamespace = "tenant-a"\n')
    (tmp_path / "b.toml").write_text(
        'allow_indices = ["tenant-b-*"]\nnamespace = "tenant-b"\nread_only = true\n'
    )
    path = tmp_path / "callers.toml"
    path.write_text(
        f"""
[[caller]]
name = "tenant-a"
token_sha256 = "{hash_token(TOKEN_A)}"
policy = "a.toml"
tools = ["xerj_search", "xerj_memory_recall", "xerj_get_document"]

[[caller]]
name = "tenant-b"
token_sha256 = "{hash_token(TOKEN_B)}"
oauth_subject = "agent-b"
policy = "b.toml"

[[caller]]
name = "tenant-c"
token_sha256 = "{hash_token(TOKEN_C)}"
policy = "a.toml"
calls_per_minute = 2
max_concurrent = 1
"""
    )
    return path


HTTP = [httpx2.Client(timeout=10)]  # one client: a new one per request costs more than the request


@pytest.fixture(scope="module", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    HTTP[0].close()


def post(url: str, headers: dict[str, str] | None = None, body: Any = INIT) -> httpx2.Response:
    if HTTP[0].is_closed:  # the module's fixture ran its teardown, and a test of it came back
        HTTP[0] = httpx2.Client(timeout=10)
    return HTTP[0].post(url, json=body, headers={**HEADERS, **(headers or {})})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- Host and Origin, on every bind -------------------------------------------------------------


def _loopback_alias_bindable() -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.2", 0))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1"])
def test_a_foreign_origin_or_host_is_refused_on_every_loopback_bind(
    xerj: XerjStandIn, host: str
) -> None:
    if host == "127.0.0.2" and not _loopback_alias_bindable():
        pytest.skip("127.0.0.2 cannot be bound here")
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6")
    with Running(url=xerj.url, http=f"[{host}]:0" if ":" in host else f"{host}:0") as server:
        own = server.base.split("//")[1]
        assert post(server.url, {"Origin": "http://attacker.example"}).status_code == 403
        assert post(server.url, {"Origin": "null"}).status_code == 403
        assert post(server.url, {"Origin": f"http://{own}@attacker.example"}).status_code == 403
        # DNS rebinding: the page's host name resolves to this address; its Host is foreign.
        rebound = {
            "Host": f"attacker.example:{server.port}",
            "Origin": f"http://attacker.example:{server.port}",
        }
        assert post(server.url, rebound).status_code == 421
        assert (
            post(server.url, {"Host": f"localhost:{server.port}@attacker.example"}).status_code
            == 421
        )
        assert post(server.url, {"Origin": server.base}).status_code == 200
        assert post(server.url).status_code == 200  # no Origin: not a browser


def test_allowed_origins_and_hosts_open_exactly_what_they_name(xerj: XerjStandIn) -> None:
    with Running(
        url=xerj.url, allowed_origins=["https://app.example.com"], allowed_hosts=["mcp.example.com"]
    ) as server:
        assert post(server.url, {"Origin": "https://app.example.com"}).status_code == 200
        assert (
            post(server.url, {"Origin": "https://app.example.com.attacker.example"}).status_code
            == 403
        )
        assert post(server.url, {"Host": "mcp.example.com"}).status_code == 200
        assert (
            post(
                server.url, {"Host": "mcp.example.com:443", "Origin": "https://mcp.example.com"}
            ).status_code
            == 200
        )
        assert post(server.url, {"Host": "other.example.com"}).status_code == 421


def test_a_foreign_origin_is_refused_before_authentication(
    xerj: XerjStandIn, callers: Path
) -> None:
    with Running(url=xerj.url, callers_path=str(callers)) as server:
        response = post(
            server.url, {"Origin": "http://attacker.example", "Authorization": f"Bearer {TOKEN_A}"}
        )
        assert response.status_code == 403
        assert post(server.url, {"Origin": "http://attacker.example"}).status_code == 403


# -- Authentication ------------------------------------------------------------------------------


def test_without_a_valid_token_nothing_is_served(xerj: XerjStandIn, callers: Path) -> None:
    with Running(url=xerj.url, callers_path=str(callers)) as server:
        missing = post(server.url)
        assert missing.status_code == 401 and "Bearer" in missing.headers["www-authenticate"]
        assert post(server.url, {"Authorization": "Bearer xt_wrong"}).status_code == 401
        assert post(server.url, {"Authorization": f"Basic {TOKEN_A}"}).status_code == 401
        assert post(server.url, {"Authorization": f"Bearer {TOKEN_A}"}).status_code == 200


def test_tokens_rotate_without_a_restart(
    xerj: XerjStandIn, callers: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Running(url=xerj.url, callers_path=str(callers)) as server:
        assert post(server.url, {"Authorization": f"Bearer {TOKEN_A}"}).status_code == 200
        rotated = "xt_tenant-a-rotated"
        text = callers.read_text().replace(hash_token(TOKEN_A), hash_token(rotated))
        callers.write_text(text + "\n")  # another size: seen even within the clock's resolution
        assert post(server.url, {"Authorization": f"Bearer {TOKEN_A}"}).status_code == 401
        assert post(server.url, {"Authorization": f"Bearer {rotated}"}).status_code == 200
        callers.write_text("[[caller]]\nname = 'broken'\n")  # a bad edit keeps the last good file
        with caplog.at_level(logging.ERROR, logger="xerj_tools"):
            assert post(server.url, {"Authorization": f"Bearer {rotated}"}).status_code == 200
        assert "not reloaded" in caplog.text


def test_a_remote_bind_without_authentication_refuses_to_start(callers: Path) -> None:
    for argv in (
        ["--http", "0.0.0.0:0"],
        ["--http", "0.0.0.0:0", "--allow-remote"],
        ["--http", "10.1.2.3:0", "--allow-remote"],
    ):
        err = io.StringIO()
        assert main(["mcp", *argv], stderr=err) == 2
        assert "--callers FILE" in err.getvalue()
    err = io.StringIO()  # with tokens, a wildcard bind must still name the host clients use
    assert (
        main(
            ["mcp", "--http", "0.0.0.0:0", "--allow-remote", "--callers", str(callers)], stderr=err
        )
        == 2
    )
    assert "--allowed-host" in err.getvalue()


def test_new_token_prints_a_token_and_its_entry() -> None:
    out = io.StringIO()
    assert main(["mcp", "--new-token", "tenant-x"], stdout=out) == 0
    token = out.getvalue().split("stored): ", 1)[1].split()[0]
    assert f'token_sha256 = "{hash_token(token)}"' in out.getvalue() and len(token) > 40


# -- A policy, tools and limits per caller -------------------------------------------------------


def test_two_callers_see_their_own_tools_and_data_only(xerj: XerjStandIn, callers: Path) -> None:
    async def scenario(url: str) -> None:
        async with connect(url, TOKEN_A) as a, connect(url, TOKEN_B) as b:
            # Sent before the server knows who is calling: the instructions name no tool.
            assert a.instructions.startswith("Tools for a XERJ search engine. Every result")
            listed_a = [t.name for t in (await a.list_tools()).tools]
            listed_b = [t.name for t in (await b.list_tools()).tools]
            assert listed_a == ["xerj_search", "xerj_memory_recall", "xerj_get_document"]
            assert "xerj_memory_store" not in listed_b and "xerj_hybrid_search" in listed_b

            hits = text_of(await a.call_tool("xerj_search", SEARCH))["hits"]
            assert [h["_id"] for h in hits] == ["a1"]
            for name, args in [
                ("xerj_search", {"index": "tenant-b-docs", "query": {"match_all": {}}}),
                ("xerj_search", {"index": "tenant-*", "query": {"match_all": {}}}),
                ("xerj_get_document", {"index": "tenant-b-docs", "id": "b1"}),
                ("xerj_memory_recall", {"namespace": "tenant-b", "query": "secret plan"}),
            ]:
                payload = text_of(await a.call_tool(name, args))
                assert payload["error"]["code"] == "policy_denied", (name, payload)
                assert "bravo" not in json.dumps(payload) and "B's secret" not in json.dumps(
                    payload
                )
            recalled = text_of(
                await a.call_tool("xerj_memory_recall", {"namespace": "tenant-a", "query": "plan"})
            )
            assert [m["text"] for m in recalled["hits"]] == ["A remembers the alpha plan"]
            # A tool left out of tenant A's list is refused, not run.
            refused = text_of(
                await a.call_tool("xerj_hybrid_search", {"index": "tenant-a-docs", "queries": []})
            )
            assert (
                refused["error"]["code"] == "unknown_tool"
                and "xerj_search" in refused["error"]["reason"]
            )

            hits_b = text_of(
                await b.call_tool(
                    "xerj_search", {"index": "tenant-b-docs", "query": {"match_all": {}}}
                )
            )["hits"]
            assert [h["_id"] for h in hits_b] == ["b1"]
            denied = text_of(await b.call_tool("xerj_search", SEARCH))
            assert denied["error"]["code"] == "policy_denied"

    with Running(url=xerj.url, callers_path=str(callers)) as server:
        run(scenario(server.url))


def test_each_call_is_logged_with_caller_tool_outcome_and_time_only(
    xerj: XerjStandIn, callers: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = "needle-4f1c"

    async def scenario(url: str) -> None:
        async with connect(url, TOKEN_A) as a:
            await a.call_tool(
                "xerj_search", {"index": "tenant-a-docs", "query": {"match": {"body": marker}}}
            )
            await a.call_tool(
                "xerj_search", {"index": "tenant-b-docs", "query": {"match": {"body": marker}}}
            )

    with (
        caplog.at_level(logging.INFO, logger="xerj_tools"),
        Running(url=xerj.url, callers_path=str(callers)) as server,
    ):
        run(scenario(server.url))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("call by")]
    assert len(lines) == 2
    assert lines[0].startswith("call by tenant-a: 'xerj_search' ok in ") and lines[0].endswith(
        " ms"
    )
    assert lines[1].startswith("call by tenant-a: 'xerj_search' policy_denied in ")
    assert marker not in caplog.text and TOKEN_A not in caplog.text and "alpha" not in caplog.text


def test_a_caller_past_its_limits_is_answered_rate_limited(
    xerj: XerjStandIn, callers: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(url: str) -> None:
        async with connect(url, TOKEN_C) as c:
            xerj.fail_next(Fault(delay=300, match="tenant-a-docs/_search"))
            slow = asyncio.ensure_future(c.call_tool("xerj_search", SEARCH))
            await until_async(lambda: any("tenant-a-docs" in r.path for r in xerj.requests))
            busy = text_of(await c.call_tool("xerj_search", SEARCH))  # max_concurrent = 1
            assert busy["error"]["code"] == "rate_limited" and busy["error"]["retryable"] is True
            assert (
                busy["error"]["retry_after"] > 0 and "max_concurrent = 1" in busy["error"]["reason"]
            )
            slow.cancel()  # the client cancels: its slot is free again
            await asyncio.gather(slow, return_exceptions=True)
            await until_async(lambda: "cancelled" in caplog.text)
            assert (
                text_of(await c.call_tool("xerj_search", SEARCH))["ok"] is True
            )  # the 2nd this minute
            third = text_of(await c.call_tool("xerj_search", SEARCH))
            assert (
                third["error"]["code"] == "rate_limited"
                and "calls_per_minute = 2" in third["error"]["reason"]
            )
            assert 55 < third["error"]["retry_after"] <= 60
        async with connect(url, TOKEN_A) as a:  # another caller is not held back by tenant C
            assert text_of(await a.call_tool("xerj_search", SEARCH))["ok"] is True

    xerj.clear()
    with (
        caplog.at_level(logging.INFO, logger="xerj_tools"),
        Running(url=xerj.url, callers_path=str(callers)) as server,
    ):
        run(scenario(server.url))


def test_the_server_wide_bound_answers_rate_limited(
    xerj: XerjStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(url: str) -> None:
        async with connect(url) as client:
            xerj.fail_next(Fault(delay=300, match="tenant-a-docs/_search"))
            slow = asyncio.ensure_future(client.call_tool("xerj_search", SEARCH))
            await until_async(lambda: any("tenant-a-docs" in r.path for r in xerj.requests))
            busy = text_of(await client.call_tool("xerj_search", SEARCH))
            assert (
                busy["error"]["code"] == "rate_limited"
                and "--max-in-flight" in busy["error"]["reason"]
            )
            slow.cancel()
            await asyncio.gather(slow, return_exceptions=True)
            await until_async(lambda: "cancelled" in caplog.text)
            assert text_of(await client.call_tool("xerj_search", SEARCH))["ok"] is True

    xerj.clear()
    with (
        caplog.at_level(logging.INFO, logger="xerj_tools"),
        Running(url=xerj.url, max_in_flight=1) as server,
    ):
        run(scenario(server.url))


# -- OAuth 2.1 resource server -------------------------------------------------------------------


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    issuer = Issuer()
    yield issuer
    issuer.close()


def test_oauth_access_tokens_from_the_issuer_pick_the_caller(
    xerj: XerjStandIn, callers: Path, issuer: Issuer
) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    from xerj_tools.integrations.mcp import OAuthSettings

    with Running(
        url=xerj.url,
        callers_path=str(callers),
        oauth=OAuthSettings(issuer.url, "http://127.0.0.1/mcp"),
    ) as server:
        resource = "http://127.0.0.1/mcp"
        metadata = httpx2.get(server.base + "/.well-known/oauth-protected-resource/mcp").json()
        assert metadata["resource"] == resource and metadata["authorization_servers"] == [
            issuer.url
        ]
        refused = post(server.url)
        assert (
            refused.status_code == 401
            and "oauth-protected-resource/mcp" in refused.headers["www-authenticate"]
        )

        good = issuer.token(resource, sub="agent-b")
        stranger = issuer.token(resource, sub="agent-z")
        other_audience = issuer.token("http://other.example/mcp", sub="agent-b")
        expired = issuer.token(resource, sub="agent-b", exp=int(time.time()) - 600)
        forged = issuer.token(
            resource,
            key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
            sub="agent-b",
        )
        for token in (stranger, other_audience, expired, forged):
            assert post(server.url, {"Authorization": f"Bearer {token}"}).status_code == 401
        assert post(server.url, {"Authorization": f"Bearer {good}"}).status_code == 200

        async def scenario() -> None:
            async with connect(server.url, good) as b:  # tenant B's policy: its index only
                listed = [t.name for t in (await b.list_tools()).tools]
                assert "xerj_memory_store" not in listed
                hits = text_of(
                    await b.call_tool(
                        "xerj_search", {"index": "tenant-b-docs", "query": {"match_all": {}}}
                    )
                )["hits"]
                assert [h["_id"] for h in hits] == ["b1"]
                denied = text_of(await b.call_tool("xerj_search", SEARCH))
                assert denied["error"]["code"] == "policy_denied"

        run(scenario())
    assert issuer.fetches >= 1


# -- Structured output ---------------------------------------------------------------------------


def test_every_tool_declares_an_output_schema_and_returns_structured_content(
    xerj: XerjStandIn,
) -> None:
    import jsonschema

    async def scenario(url: str) -> None:
        async with connect(url) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert all(
                t.output_schema and t.output_schema["required"] == ["ok"] for t in tools.values()
            )
            calls = [
                ("xerj_search", {"index": "tenant-a-docs", "query": {"match_all": {}}}),
                ("xerj_search", {"index": "nope", "query": {"match_all": {}}}),
                ("xerj_get_document", {"index": "tenant-a-docs", "id": "a1"}),
                ("xerj_memory_recall", {"namespace": "tenant-a", "query": "plan"}),
                ("xerj_memory_store", {"namespace": "tenant-a", "text": "one more"}),
            ]
            for name, args in calls:
                result = await client.call_tool(name, args)  # the SDK client validates it too
                assert result.structured_content == text_of(result)
                jsonschema.validate(result.structured_content, tools[name].output_schema)

    with Running(url=xerj.url) as server:
        run(scenario(server.url))


# -- A client that hangs up ----------------------------------------------------------------------


def test_closing_the_http_request_cancels_its_xerj_call(caplog: pytest.LogCaptureFixture) -> None:
    from rawserver import RawServer

    closed = threading.Event()

    def hold_until_closed(conn: socket.socket, server: RawServer) -> None:
        conn.settimeout(60)
        with contextlib.suppress(OSError):
            conn.recv(1)  # b"" once the dispatcher closes its request to XERJ
        closed.set()

    with (
        RawServer(hold_until_closed) as xerj,
        Running(url=xerj.url) as server,
        caplog.at_level(logging.INFO, logger="xerj_tools"),
    ):
        init = post(server.url)
        session = {
            "mcp-session-id": init.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        post(server.url, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "xerj_search", "arguments": SEARCH},
            }
        )
        head = "".join(f"{k}: {v}\r\n" for k, v in {**HEADERS, **session}.items())
        raw = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{head}Content-Length: {len(body)}\r\n\r\n{body}"
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(raw.encode())
            run(until_async(lambda: xerj.requests))  # XERJ holds the call's request
        # The client hung up: the server cancels the call, which closes XERJ's request long
        # before the dispatcher's 30 s read timeout would.
        assert closed.wait(15)
        run(until_async(lambda: "call by local: 'xerj_search' cancelled in" in caplog.text))


# -- The callers file, refused at start ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("c.toml", '[[caller]]\nname = "a"\n', "give token_sha256 or oauth_subject"),
        ("c.toml", '[[caller]]\nname = "a"\ntoken_sha256 = "abc"\n', "64 hex digits"),
        (
            "c.toml",
            f'[[caller]]\nname = "a"\ntoken_sha256 = "{"0" * 64}"\nread_only = true\n',
            "unknown key 'read_only'",
        ),
        (
            "c.toml",
            f'[[caller]]\nname = "a"\ntoken_sha256 = "{"0" * 64}"\n[[caller]]\nname = "a"\noauth_subject = "s"\n',
            "named twice",
        ),
        (
            "c.toml",
            f'[[caller]]\nname = "a"\ntoken_sha256 = "{"0" * 64}"\n[[caller]]\nname = "b"\ntoken_sha256 = "{"0" * 64}"\n',
            "the same token",
        ),
        (
            "c.toml",
            f'[[caller]]\nname = "a"\ntoken_sha256 = "{"0" * 64}"\ncalls_per_minute = 0\n',
            "positive integer",
        ),
        (
            "c.toml",
            f'[[caller]]\nname = "a"\ntoken_sha256 = "{"0" * 64}"\npolicy = "missing.toml"\n',
            "cannot read the policy file",
        ),
        (
            "c.json",
            '{"caller": [{"name": "a", "token_sha256": "'
            + "0" * 64
            + '", "policy": "x.toml", "policy": "y.toml"}]}',
            "given twice",
        ),
        ("c.yaml", "", "ends in .toml or .json"),
    ],
)
def test_a_bad_callers_file_stops_the_server_naming_the_problem(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    err = io.StringIO()
    assert main(["mcp", "--http", "127.0.0.1:0", "--callers", str(path)], stderr=err) == 2
    assert message in err.getvalue() and str(path) in err.getvalue()


def test_authentication_options_are_for_http_only(callers: Path) -> None:
    err = io.StringIO()
    assert main(["mcp", "--callers", str(callers)], stderr=err) == 2
    assert "are for --http" in err.getvalue()
    err = io.StringIO()
    assert (
        main(["mcp", "--http", "127.0.0.1:0", "--oauth-issuer", "http://127.0.0.1:1"], stderr=err)
        == 2
    )
    assert "go together" in err.getvalue()


def test_the_start_says_who_can_reach_the_server(callers: Path) -> None:
    from xerj_tools.integrations.mcp._callers import CallersFile
    from xerj_tools.integrations.mcp._serve import warnings

    assert warnings(None, allow_remote=False, callers=None) == ""
    assert warnings("127.0.0.1", allow_remote=False, callers=None) == ""
    note = warnings("127.0.0.1", allow_remote=True, callers=None)
    assert "--allow-remote has no effect" in note and "no authentication" in note
    assert "no authentication" not in warnings(
        "127.0.0.1", allow_remote=True, callers=CallersFile(callers)
    )
    remote = warnings("0.0.0.0", allow_remote=True, callers=CallersFile(callers))
    assert "reachable from other machines" in remote and "TLS" in remote
