"""What the framework adapters share about a run: the tools offered, the policy its context
selects, and the bound on the calls of one model turn.

A framework passes each tool call its run's context (openai-agents' `ToolContext`, pydantic-ai's
`RunContext`, ADK's `ToolContext`). An adapter's ``policy=`` is a `Policy` for every run, or a
function of that context that returns the run's `Policy` (the tenant's, the user's). The choice
fails closed: a function that raises or returns anything but a `Policy` (None included) gets the
call refused ``policy_denied`` with nothing sent, never run under the dispatcher's own policy,
which may be wider than the tenant's.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from .._agent._agent_options import MAX_CALLS_PER_TURN
from .._dispatch._answers import checked_max_calls, too_many_calls
from .._dispatch._policy import Policy
from .._exceptions import ConfigurationError

if TYPE_CHECKING:
    from .._dispatch._async import AsyncDispatcher
    from .._dispatch._core import ToolResult
    from .._dispatch._sync import Dispatcher
    from .._schema._registry import ToolRegistry
    from .._shapes import ToolCall

__all__ = ["MAX_CALLS_PER_TURN", "PolicyChoice", "RunGuard", "chosen_tools"]

logger = logging.getLogger("xerj_tools")

# A `Policy` for every run, a function of the framework's per-call context, or None (the
# dispatcher's own policy).
PolicyChoice = Policy | Callable[[Any], Policy] | None

_NO_POLICY = (
    "no policy could be chosen for this run (the application's policy function failed), so "
    "this call was not run; nothing was sent"
)


def chosen_tools(registry: ToolRegistry, names: Iterable[str] | None) -> list[str]:
    """The names of the tools an adapter offers: `names`, else the whole registry."""
    chosen = list(registry.names if names is None else names)
    unknown = [n for n in chosen if n not in registry]
    if unknown:
        raise ConfigurationError(f"no such tool in the registry: {', '.join(unknown)}")
    return chosen


class RunGuard:
    """An adapter's per-run choices, made before a call reaches the dispatcher: the policy that
    the run's context selects, and the bound on a turn's calls (`max_calls` per turn, counted as
    they start; the rest are answered ``too_many_calls`` without being run)."""

    KEPT_RUNS = 256  # runs whose current turn is counted; the least recent is forgotten first

    def __init__(
        self,
        dispatcher: AsyncDispatcher | Dispatcher,
        policy: PolicyChoice = None,
        max_calls: int | None = MAX_CALLS_PER_TURN,
    ) -> None:
        if policy is not None and not isinstance(policy, Policy) and not callable(policy):
            raise ConfigurationError(
                "policy= takes a Policy, or a function of the run's context that returns one; "
                f"got {type(policy).__name__}"
            )
        self._dispatcher = dispatcher
        self._choice = policy
        self._max_calls = checked_max_calls(max_calls)
        self._lock = threading.Lock()
        self._turns: OrderedDict[Hashable, _Turn] = OrderedDict()

    def check(
        self, call: ToolCall, run: Any, step: Hashable, context: Any
    ) -> tuple[Policy | None, ToolResult | None]:
        """The policy for `call` (None: the dispatcher's), or the answer that refuses it.

        `run` names the agent run (a string id, or an object that lives as long as the run);
        `step` names its model turn. The calls of a turn are counted as they start."""
        if (refused := self._over_bound(call, run, step)) is not None:
            return None, refused
        choice = self._choice
        if choice is None or isinstance(choice, Policy):
            return choice, None
        try:
            chosen = choice(context)
        except Exception as exc:  # the type only: an exception's text may quote the context
            failed = f"raised {type(exc).__name__}"
        else:
            if isinstance(chosen, Policy):
                return chosen, None
            failed = f"returned {type(chosen).__name__}, not a Policy"
        logger.error("the policy function %s; %s refused", failed, call.name)
        return None, self._dispatcher.answer(call, "policy_denied", _NO_POLICY)

    def _over_bound(self, call: ToolCall, run: Any, step: Hashable) -> ToolResult | None:
        if self._max_calls is None:
            return None
        key: Hashable = run if isinstance(run, str) else id(run)
        with self._lock:
            kept = self._turns.get(key)
            if kept is None or kept.step != step or not kept.same_run(run):
                kept = self._turns[key] = _Turn(run, step)
            position, kept.calls = kept.calls, kept.calls + 1
            self._turns.move_to_end(key)
            while len(self._turns) > self.KEPT_RUNS:
                self._turns.popitem(last=False)
        if position < self._max_calls:
            return None
        refusal = too_many_calls(self._max_calls)
        return self._dispatcher.answer(call, refusal.code, str(refusal))


class _Turn:
    """How many calls of a run's current turn have started. The run object is held, so that
    its address is not reused while it is counted."""

    __slots__ = ("calls", "run", "step")

    def __init__(self, run: Any, step: Hashable) -> None:
        self.run, self.step, self.calls = run, step, 0

    def same_run(self, run: Any) -> bool:
        return self.run is run or (isinstance(run, str) and self.run == run)
