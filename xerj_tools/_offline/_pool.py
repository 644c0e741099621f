"""A process pool that hands back results in input order and always ends cleanly.

`in_order` runs a task over a stream of arguments in N worker processes, at most twice N in
flight (memory stays flat), and gives each result to the caller in input order. However the
caller stops (an exception in its hands, a reader gone from `validate … | head`, Ctrl-C, input
that stops being text), the pool ends only once no worker holds a task:

CPython's `Pool.terminate` puts a sentinel on the result queue under that queue's write lock,
which a worker also holds while it writes a result (multiprocessing/pool.py `_terminate_pool`,
`outqueue.put(None)`; 3.10 to 3.13). When the pool's result reader has already stopped, a worker
writing a large result (a range's reports) fills the pipe and waits for a reader that is gone,
the lock held, and `terminate` waits on that lock for ever. With no task in a worker's hands,
every worker is idle, `terminate` is the pool's ordinary end, and nothing can wait for ever.

Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and a worker that
dies of it loses its task, which the pool never answers. The parent alone is interrupted; the
tasks in flight (a few ranges of about a second's work) finish, their results unread.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterable
from multiprocessing.context import BaseContext
from typing import Any

__all__ = ["in_order"]


def _start(initializer: Callable[..., object], initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)


def in_order(
    context: BaseContext,
    jobs: int,
    task: Callable[..., Any],
    arguments: Iterable[tuple[Any, ...]],
    take: Callable[[tuple[Any, ...], Any], None],
    *,
    initializer: Callable[..., object],
    initargs: tuple[Any, ...] = (),
) -> None:
    """Call `task(*args)` for each `args` of `arguments` in `jobs` processes of `context`, and
    `take(args, result)` for each in input order. An exception from a task or from `take` is
    raised once the tasks in flight are done; a `UnicodeDecodeError` from `arguments` itself (the
    input stops being text) is raised after the results of the tasks already started are taken."""
    with context.Pool(jobs, _start, (initializer, initargs)) as pool:
        pending: deque[tuple[tuple[Any, ...], Any]] = deque()

        def take_one() -> None:
            args, result = pending.popleft()
            take(args, result.get())

        try:
            source = iter(arguments)
            while True:
                try:
                    args = next(source, None)
                except UnicodeDecodeError:
                    while pending:  # the input stops being text: what was read before counts
                        take_one()
                    raise
                if args is None:
                    break
                pending.append((args, pool.apply_async(task, args)))
                if len(pending) >= 2 * jobs:
                    take_one()
            while pending:
                take_one()
        finally:
            for _, result in pending:  # what the caller left: finished, never read
                result.wait()
