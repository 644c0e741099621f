"""``python -m xerj_tools.testing`` and ``xerj-tools stand-in``: the XERJ stand-in, kept running.

It serves on 127.0.0.1 only (the stand-in never binds another address) until interrupted
(Ctrl-C, SIGINT or SIGTERM), and prints its URL first, on a line of its own, ``XERJ_URL=...``, so a
script can read the port that ``--port 0`` picked. It is a test double, not XERJ.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any, TextIO

__all__ = ["serve"]


def serve(args: argparse.Namespace, out: TextIO, stop: threading.Event | None = None) -> int:
    """Start the stand-in, print where it is, and serve until `stop` is set or interrupted."""
    from ._server import XerjStandIn

    stop = stop or threading.Event()
    try:
        stand_in = XerjStandIn(
            api_key=args.api_key,
            rerank=args.rerank,
            port=args.port,
            catalog=args.catalog,
        )
    except OSError as exc:
        out.write(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}; try --port 0\n")
        return 2
    previous: Any = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with stand_in:
        key = "required (the key given with --api-key)" if args.api_key else "none"
        out.write(f"XERJ_URL={stand_in.url}\n")
        out.write(
            f"XERJ stand-in (a test double, not XERJ) at {stand_in.url}: indices "
            f"{', '.join(sorted(stand_in.indices))}; API key: {key}; Ctrl-C to stop\n"
        )
        out.flush()
        try:
            stop.wait()  # a signal interrupts the wait (POSIX lock waits are interruptible)
        except KeyboardInterrupt:
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    out.write("stopped\n")
    out.flush()
    return 0
