"""Operator guardrails: which indices and namespaces a model may touch, and how much it may ask.

A model's arguments are untrusted input that becomes a URL path and a query on the operator's
engine. XERJ keeps each memory namespace in an ordinary index (``.xerj-memory-<ns>``), so without
a policy one tenant's agent could read another's memories through the search tools.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._exceptions import ConfigurationError, ToolCallError
from .._http._models import HttpRequest
from ._body_indices import WRAPPER, named_indices

if TYPE_CHECKING:
    from ..tools import Tool

__all__ = ["Policy", "PolicyDenied", "call_policy"]

_WILDCARDS = "*?["
# Endpoints a POST may reach without changing data, for a tool that does not say whether it
# writes (`PolicyTraits.writes` None).
_READ_ENDPOINTS = frozenset(
    {"_search", "_msearch", "_count", "_mget", "_recall", "_explain", "_field_caps", "_terms_enum"}
)


class PolicyDenied(ToolCallError):
    """The operator's policy refuses this call (code ``policy_denied``); nothing was sent."""

    code = "policy_denied"


def _whole(value: Any) -> int | None:
    """An integer argument as a number the caps can compare: 5000, 5000.0 and 5e3 alike."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _literal_prefix(pattern: str) -> str:
    cut = min((pattern.find(c) for c in _WILDCARDS if c in pattern), default=len(pattern))
    return pattern[:cut]


def _may_overlap(part: str, pattern: str) -> bool:
    """Whether index expression `part` could name an index that `pattern` matches.

    Exact for a plain name; for a wildcard it compares the literal prefixes, which is cautious:
    ``*`` could reach ``.xerj-memory-x``, ``logs-*`` could not.
    """
    if part == "_all":
        return True
    if not any(c in part for c in _WILDCARDS):
        return fnmatch.fnmatchcase(part, pattern)
    a, b = _literal_prefix(part), _literal_prefix(pattern)
    return a.startswith(b) or b.startswith(a)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """What the operator allows the model to do; given to the dispatcher as ``policy=``.

    - `allow_indices` / `deny_indices`: glob patterns for every index argument of every tool
      (`PolicyTraits.index_args`; for a tool that declares none, every argument named like ``index``,
      ``indices``, ``index_*``, ``*_index``). Indices starting with ``.`` (XERJ's memory
      indices among them) are denied by default; a wildcard that could reach a denied index
      (``*``, ``_all``) is refused too.
    - `max_size`, `max_k`, `max_num_candidates`, `max_rerank_window`: caps, clamped (and the
      model told) or refused, by `caps`.
    - `allow_rerank`: False keeps document text on the node (the reranker sends it off).
    - `read_only`: no tool that writes (`xerj_memory_store`, any tool with `PolicyTraits(writes=True)`, and a tool
      that does not say whose request is not a read).
    - `namespace` (exactly this one) or `namespace_prefix` (a tenant's prefix): no tool can
      read or write outside it (`PolicyTraits.namespace_args`, or arguments named like ``namespace``).
    - `max_argument_bytes`: the largest arguments string accepted from the model.
    - `max_response_bytes`: stop reading an engine response past this size.
    - `allow_remotes`: False (the default) refuses cross-cluster expressions (``cluster:index``,
      any ``:``). True lets them through when the whole expression matches `allow_indices`
      (write ``"eu:logs-*"``) and neither it nor its index part matches `deny_indices`.

    The indices a query names in its body (a terms lookup's ``index``, ``_index`` in
    ``more_like_this``, and the like; see `xerj_tools._dispatch._body_indices`) are held to the same
    lists, and a ``wrapper`` query, whose content cannot be checked, is refused.
    """

    allow_indices: tuple[str, ...] = ("*",)
    deny_indices: tuple[str, ...] = (".*",)
    max_size: int | None = None
    max_k: int | None = None
    max_num_candidates: int | None = None
    max_rerank_window: int | None = None
    caps: Literal["clamp", "refuse"] = "clamp"
    allow_rerank: bool = True
    read_only: bool = False
    namespace: str | None = None
    namespace_prefix: str | None = None
    max_argument_bytes: int | None = 256 * 1024
    max_response_bytes: int | None = None
    allow_remotes: bool = False

    def __post_init__(self) -> None:
        if self.caps not in ("clamp", "refuse"):
            raise ConfigurationError("Policy.caps is 'clamp' or 'refuse'")
        if self.namespace is not None and self.namespace_prefix is not None:
            raise ConfigurationError("give Policy.namespace or Policy.namespace_prefix, not both")
        _check_values(self)

    def _index_refusal(self, expression: str) -> str | None:
        for part in expression.split(","):
            if ":" in part and not self.allow_remotes:
                return (
                    f"index {part!r} names a remote cluster (cluster:index); this agent may "
                    "search local indices only, so name one without ':'"
                )
            if part.startswith("-") and part != expression:
                continue  # an exclusion narrows the search; it cannot widen it
            # `cluster:index`: the index part must pass the deny list on its own.
            local = part.rpartition(":")[2]
            for pattern in self.deny_indices:
                if _may_overlap(part, pattern) or _may_overlap(local, pattern):
                    return f"index {part!r} is not allowed (it could reach indices matching {pattern!r}); name allowed indices explicitly"
            if not any(fnmatch.fnmatchcase(part, p) or part == p for p in self.allow_indices):
                return f"index {part!r} is not among the allowed indices ({', '.join(self.allow_indices)})"
        return None

    def _body_refusal(self, args: Mapping[str, Any], plain: frozenset[str]) -> PolicyDenied | None:
        for path, named in named_indices(args, plain):
            reason: str | None
            if named is WRAPPER:
                reason = (
                    "a wrapper query hides which indices it reads from the operator's policy; "
                    "send the query itself"
                )
            elif not isinstance(named, str):
                reason = f"an index named in the query must be one index name, got {named!r:.60}"
            else:
                reason = self._index_refusal(named)
            if reason is not None:
                return PolicyDenied(f"{path}: {reason}", details={"refused": "index", "path": path})
        return None

    def _listed_refusal(self, key: str, value: Any) -> str | None:
        parts = value.split(",") if isinstance(value, str) else []
        for place, part in enumerate(parts, 1):
            if part and "*" not in part and part != "_all" and not self.allows_index(part):
                which = f"name {place} of `{key}`" if len(parts) > 1 else f"`{key}`"
                return f"{which} is not among the indices this agent may list; list without it"
        return None

    def allows_index(self, name: str) -> bool:
        """Whether the model may search index `name` (used to list the indices it may use)."""
        return self._index_refusal(name) is None

    def _namespace_refusal(self, namespace: Any) -> str | None:
        if not isinstance(namespace, str):
            return None
        if self.namespace is not None and namespace != self.namespace:
            return f"namespace {namespace!r} is not allowed; use {self.namespace!r}"
        if self.namespace_prefix is not None and not namespace.startswith(self.namespace_prefix):
            return f"namespace {namespace!r} is not allowed; namespaces must start with {self.namespace_prefix!r}"
        return None

    def check_size(self, raw: Any) -> PolicyDenied | None:
        """Refuse arguments that are too large before they are validated: text (Chat Completions,
        Responses) as it came, an object that came decoded (an Anthropic ``tool_use`` input) by
        the size of its JSON text, so that the cap holds for every wire shape."""
        if self.max_argument_bytes is None:
            return None
        if isinstance(raw, Mapping):
            try:
                raw = json.dumps(raw, ensure_ascii=False, default=str)
            except (ValueError, TypeError, RecursionError):
                # Not JSON (a cycle, nested past the stack): validation refuses it with its reason.
                return None
        if not isinstance(raw, (str, bytes)):
            return None
        # "surrogatepass": a lone surrogate (valid JSON text, "\ud800") is measured here and
        # refused by validation with its path, not raised as UnicodeEncodeError.
        size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
        if size > self.max_argument_bytes:
            return PolicyDenied(
                f"the arguments are {size} bytes; the limit is {self.max_argument_bytes}"
            )
        return None

    def apply(
        self, tool: Tool, arguments: Mapping[str, Any], *, read_body: bool = True
    ) -> tuple[dict[str, Any], list[str]] | PolicyDenied:
        """Check validated arguments; return them (clamped where allowed) with notes, or a refusal.

        The traits the tool leaves undeclared are inferred from its arguments' names
        (`PolicyTraits`); the library's own tools are `XERJ_TOOLS`. `read_body` False skips
        reading the arguments' query DSL for index names: only for arguments whose text shows no
        clause that can name one (the dispatcher knows the text, `may_name_indices`).
        """
        name, traits, args = tool.name, tool.traits, dict(arguments)
        notes: list[str] = []
        for key in traits.index_arguments(args):
            for index in _names(args.get(key)):
                if reason := self._index_refusal(index):
                    return PolicyDenied(reason, details={"refused": "index"})
        for key in traits.listed_args:
            if reason := self._listed_refusal(key, args.get(key)):
                return PolicyDenied(reason, details={"refused": "index"})  # exists or not, alike
        if (
            read_body
            and traits.queries
            and (refusal := self._body_refusal(args, traits.plain_arguments())) is not None
        ):
            return refusal
        if traits.writes and self.read_only:
            return _read_only(name)
        for key in traits.namespace_arguments(args):
            for namespace in _names(args.get(key)):
                if (reason := self._namespace_refusal(namespace)) is not None:
                    return PolicyDenied(reason, details={"refused": "namespace"})
        reranks = traits.rerank_argument(args)
        if reranks is not None and not self.allow_rerank:
            return PolicyDenied(
                "rerank is not allowed here: it sends document text off the node; search without it",
                details={"refused": "rerank"},
            )
        for key, attr in traits.cap_arguments(args).items():
            cap = getattr(self, attr)
            value = _whole(args.get(key))
            if cap is not None and value is not None and value > cap:
                if self.caps == "refuse":
                    return PolicyDenied(
                        f"{key} {value} is above the limit of {cap}", details={"refused": key}
                    )
                args[key] = cap
                notes.append(f"{key} lowered from {value} to {cap} by the operator's policy")
        rerank = args.get(reranks) if reranks is not None else None
        window = _whole(rerank.get("window", 30)) if isinstance(rerank, dict) else None
        if (
            isinstance(rerank, dict)
            and reranks is not None
            and window is not None
            and self.max_rerank_window is not None
            and window > self.max_rerank_window
        ):
            if self.caps == "refuse":
                return PolicyDenied(
                    f"rerank.window {window} is above the limit of {self.max_rerank_window}",
                    details={"refused": "rerank.window"},
                )
            args[reranks] = {**rerank, "window": self.max_rerank_window}
            notes.append(
                f"rerank.window lowered from {window} to {self.max_rerank_window} by the operator's policy"
            )
        return args, notes

    def write_refusal(self, tool: Tool, request: HttpRequest) -> PolicyDenied | None:
        """Under `read_only`, refuse the request of a tool that does not say whether it writes
        (`PolicyTraits.writes` None) unless it is a GET/HEAD or a POST to a read endpoint."""
        if not self.read_only or tool.traits.writes is not None or not _writes(request):
            return None
        return _read_only(tool.name)


def call_policy(policy: object) -> Policy | None:
    """A call's own ``policy=``: None (the dispatcher's) or a `Policy`. Anything else raises
    before the call is looked at: a guardrail given in a form the dispatcher cannot read must
    not let the call run under another (wider) policy."""
    if policy is None or isinstance(policy, Policy):
        return policy
    raise ConfigurationError(
        f"policy= takes a Policy (or None for the dispatcher's own); got {type(policy).__name__}"
    )


_COUNTS = (
    "max_size", "max_k", "max_num_candidates", "max_rerank_window", "max_argument_bytes",
    "max_response_bytes",
)  # fmt: skip
_DELIMITERS = "._-"


def _check_values(policy: Policy) -> None:
    """Refuse, when the policy is made, a value that would guard nothing or everything other
    than what it says: a guardrail that misreads its own setting is worse than none."""
    for name in _COUNTS:
        value = getattr(policy, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ConfigurationError(f"Policy.{name} must be a positive integer; got {value!r:.60}")
    for name in ("allow_rerank", "read_only", "allow_remotes"):
        if not isinstance(getattr(policy, name), bool):
            raise ConfigurationError(f"Policy.{name} must be True or False")
    for name in ("allow_indices", "deny_indices"):
        patterns = getattr(policy, name)
        if isinstance(patterns, str) or not all(isinstance(p, str) for p in patterns):
            raise ConfigurationError(
                f"Policy.{name} must be a list of patterns, not {patterns!r:.60}"
            )
        for pattern in patterns:
            if not pattern or pattern != pattern.strip() or "," in pattern:
                raise ConfigurationError(
                    f"Policy.{name}: {pattern!r:.60} never matches an index name (empty, spaces "
                    "around it, or a comma); give each pattern as its own item"
                )
    if policy.namespace is not None:
        from ..tools._paths import namespace_problem

        if (problem := namespace_problem(policy.namespace, "Policy.namespace")) is not None:
            raise ConfigurationError(
                f"{problem.path}: {problem.message}; no memory call could pass"
            )
    prefix = policy.namespace_prefix
    if prefix is not None:
        # XERJ's namespaces (memory_api.rs:101-124): a-z 0-9 _ - ., starting with a letter or digit.
        if (
            not prefix
            or not all(c.isascii() and (c.isalnum() or c in _DELIMITERS) for c in prefix)
            or prefix != prefix.lower()
            or not prefix[0].isalnum()
            or ".." in prefix
        ):
            raise ConfigurationError(
                f"Policy.namespace_prefix {prefix!r:.60} can begin no XERJ namespace (a-z 0-9 _ - ., "
                "starting with a letter or digit); no memory call could pass"
            )
        if prefix[-1] not in _DELIMITERS:
            raise ConfigurationError(
                f"Policy.namespace_prefix {prefix!r:.60} would also admit {prefix + '0'!r:.60} and "
                f"any name it begins; end it with a delimiter, as in {prefix + '.'!r:.60}"
            )


def _names(value: Any) -> list[str]:
    """The names an index or namespace argument holds: a string, or strings in a list."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _writes(request: HttpRequest) -> bool:
    method = request.method.upper()
    if method in ("GET", "HEAD"):
        return False
    last = request.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return not (method == "POST" and last in _READ_ENDPOINTS)


def _read_only(tool: str) -> PolicyDenied:
    return PolicyDenied(
        f"this agent is read-only: {tool} writes, so it is not allowed", details={"refused": tool}
    )
