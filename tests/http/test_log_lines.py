"""Every log record stays one line, whatever text a model or a client chose: a tool name or a
call id holding a newline cannot forge a line, and a terminal escape or a lone surrogate is shown
as an escape, both in the `xerj_tools` logger's records (for any handler) and in what
`xerj-tools mcp` writes to stderr (for every logger)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from xerj_tools import Dispatcher
from xerj_tools._log_text import OneLineFormatter, escaped
from xerj_tools.testing import XerjStandIn

from conftest import chat_call

FORGED = "xerj_search\n2026-12-04 00:00:00 xerj_tools INFO: call by admin: 'xerj_search' ok"
HOSTILE = [FORGED, "\x1b[31mred\x1b[0m", "x\u202eevil", "lone \udfff", "cr\rlf"]


@pytest.fixture(scope="module")
def xerj() -> Iterator[XerjStandIn]:
    with XerjStandIn() as stand_in:
        yield stand_in


def clean(text: str) -> bool:
    return not any(c in text for c in "\n\r\x1b\u202e\udfff")


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_tool_name_or_call_id_stays_on_one_line(
    xerj: XerjStandIn, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="xerj_tools")
    with Dispatcher(url=xerj.url) as dispatcher:
        result = dispatcher.run(chat_call(name, {}, call_id=name))
    assert result.code == "unknown_tool"
    records = [r for r in caplog.records if r.name == "xerj_tools"]
    assert records and all(clean(r.getMessage()) for r in records)
    assert any(escaped(name) in r.getMessage() for r in records)


def test_the_servers_formatter_keeps_any_loggers_record_on_one_line() -> None:
    formatter = OneLineFormatter("%(name)s %(levelname)s: %(message)s")
    record = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, "%s", (FORGED,), None)
    line = formatter.format(record)
    assert "\n" not in line and line.startswith("uvicorn.error WARNING: xerj_search\\n2026")


def test_an_unknown_tool_over_mcp_is_logged_once_on_one_line(
    xerj: XerjStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    from mcp_team_support import Running, connect, text_of

    async def scenario(url: str) -> dict[str, object]:
        async with connect(url) as session:
            return text_of(await session.call_tool(FORGED, {}))

    caplog.set_level(logging.DEBUG, logger="xerj_tools")
    with Running(url=xerj.url) as server:
        payload = asyncio.run(scenario(server.url))
    assert payload["error"]["code"] == "unknown_tool"  # type: ignore[index]
    assert "xerj_search" in payload["error"]["hint"]  # type: ignore[index]
    mentions = [r.getMessage() for r in caplog.records if "call by admin" in r.getMessage()]
    assert len(mentions) == 1 and mentions[0].startswith('call by local: "xerj_search\\n2026')
