"""The tools the dispatcher can run, one `Tool` object each.

`XERJ_TOOLS` holds the library's own: the publishers' definitions in ``tools.json`` and the
first-party additions beside them. A tool of yours is declared the same way and passed as
``Dispatcher(tools=[Tool(...)])``; a plain handler (``handlers={name: fn}``) is wrapped into a
`Tool` whose policy traits are inferred from its arguments' names (see `Tool`).
"""

from __future__ import annotations

from ._limits import Limit, int_range, not_blank, number_range
from ._table import HANDLERS, XERJ_TOOLS
from ._tool import Advice, After, Handler, Origin, PolicyTraits, Received, Tool, read_json

__all__ = [
    "HANDLERS",
    "XERJ_TOOLS",
    "Advice",
    "After",
    "Handler",
    "Limit",
    "Origin",
    "PolicyTraits",
    "Received",
    "Tool",
    "int_range",
    "not_blank",
    "number_range",
    "read_json",
]
