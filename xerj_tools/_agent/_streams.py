"""Closing a model's streamed answer however the loop leaves it: done, broken off or cancelled.

The `openai` streams close their HTTP response only once read to the end (``_streaming.py``,
``Stream.__stream__``'s ``finally``). A loop interrupted mid-answer that merely drops the stream
leaves the response open until the garbage collector finds it: on asyncio that is a task the
loop runs later, or an error logged at shutdown ("aclose(): asynchronous generator is already
running"), and the connection stays out of the pool meanwhile.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

__all__ = ["aclose_stream", "close_stream"]

logger = logging.getLogger("xerj_tools")


def close_stream(stream: Any) -> None:
    """Close `stream` (`openai.Stream.close`, a generator's `close`); without one, do nothing.

    A failure to close (a connection reset while letting go of it) is logged at debug level and
    goes no further: it would otherwise replace the error or the cancellation that ended the
    answer, or turn a caller's clean ``close()`` into an exception, for a response nobody reads
    any more."""
    close = getattr(stream, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            logger.debug("closing the model's streamed answer failed", exc_info=True)


async def aclose_stream(stream: Any) -> None:
    """The async twin: an async generator's `aclose`, else `openai.AsyncStream.close`."""
    close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
    if callable(close):
        try:
            out = close()
            if inspect.isawaitable(out):
                await out
        except Exception:
            logger.debug("closing the model's streamed answer failed", exc_info=True)
