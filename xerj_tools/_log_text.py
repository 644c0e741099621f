"""Log lines that stay one line each, whatever a model, a client or a peer put in them.

A tool name, a call id or an engine's reason can hold a newline (which would start a forged log
line), a terminal escape (which a terminal would obey) or a lone surrogate (which a UTF-8 stream
cannot write). `OneLine`, a filter on the ``xerj_tools`` logger (installed by the package), shows
each of those as an escape in the record's message, for any handler an application attaches;
`OneLineFormatter` does the same for every record a handler formats, whichever logger made it
(`xerj-tools mcp` writes its stderr log with it: uvicorn's and the MCP SDK's records too).
"""

from __future__ import annotations

import logging
import re

__all__ = ["OneLine", "OneLineFormatter", "escaped"]

# C0 and C1 controls (newline, ESC, BEL, CSI…), DEL, the invisible or direction-changing format
# characters, and lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"
)


def escaped(text: str) -> str:
    """`text` with each of those characters shown as an escape (``\\n``, ``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    if match[0] in "\n\r\t":
        return repr(match[0])[1:-1]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class OneLine(logging.Filter):
    """Rewrites a record whose message would hold such a character to its escaped text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging's own handler reports it
            return True
        if _UNSAFE.search(message):
            record.msg, record.args = escaped(message), None
        return True


class OneLineFormatter(logging.Formatter):
    """A formatter whose message part is escaped; a traceback keeps its own lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escaped(super().formatMessage(record))
