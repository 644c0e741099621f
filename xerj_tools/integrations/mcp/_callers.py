"""Who may call `xerj-tools mcp` over HTTP: the callers file, each caller's policy and limits.

A callers file (TOML or JSON) names each caller, how it proves who it is, and what it gets::

    max_concurrent = 8              # defaults for every caller below (optional)
    calls_per_minute = 600

    [[caller]]
    name = "tenant-a"               # the identity in the logs
    token_sha256 = "9f86d081…"      # a bearer token, stored only as its SHA-256 (hex)
    policy = "tenant-a.toml"        # relative to this file; default: the server's --policy
    tools = ["xerj_search", "xerj_memory_recall"]   # optional: list and allow only these
    max_concurrent = 4
    calls_per_minute = 120

    [[caller]]
    name = "tenant-b"
    oauth_subject = "agent-b"       # an OAuth access token whose claim (`sub`) is this value

The file is read again when it or a policy file it names changes (size or modification time),
so tokens rotate, policies narrow and callers come and go without a restart. A version is taken
only whole:

- it must have stopped changing: a changed file is read once its newest modification is
  `SETTLE_SECONDS` old (or it was seen unchanged that long), so a file being rewritten in place
  (``cat > callers.toml``, an editor that truncates, a tool writing line by line) is not read
  half-written: an empty file or a file cut between two callers would lock callers out, a file cut
  inside an entry could drop its restrictions;
- it must parse and validate, policies included;
- it must not widen a caller it still names on its own: an entry that named a ``policy`` (or a
  ``tools`` list) and no longer does would move that caller to the server's ``--policy`` (or to
  every tool), which is what a file cut before that line looks like. Such a version is refused;
  the caller moves only at a restart, or when its entry names the wider policy file outright.

A version that is refused is logged at ERROR and the last good one stays in force. Only hashes
are stored: a token is 32 random bytes, so one SHA-256 is as good as a slow hash against
guessing, and lookup by hash leaks nothing useful by its timing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._dispatch._policy import Policy
from ..._exceptions import ConfigurationError
from ._policy_file import _read_toml, load_policy_file, unique_keys

__all__ = ["SETTLE_SECONDS", "Caller", "CallersFile", "hash_token", "new_token"]

logger = logging.getLogger("xerj_tools")

_CALLER_KEYS = {
    "name", "token_sha256", "oauth_subject", "policy", "tools", "max_concurrent",
    "calls_per_minute",
}  # fmt: skip
_LIMIT_KEYS = ("max_concurrent", "calls_per_minute")

SETTLE_SECONDS = 0.1
"""How long a changed callers or policy file must have stopped changing before it is read: far
above the gap between two writes of one rewrite (microseconds for an editor or ``cat``), below
what a person notices. A request that finds a change younger than this waits for it to settle,
at most `_MAX_WAIT` s; a file still changing then serves that request with the version in force."""
_MAX_WAIT = 2 * SETTLE_SECONDS

Stamp = dict[Path, tuple[int, int] | None]  # each watched file: (mtime in ns, size), None if absent
PolicyLoader = Callable[[Path], Policy]


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def new_token() -> str:
    """A fresh bearer token: ``xt_`` and 32 random bytes, URL-safe."""
    return "xt_" + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The form a callers file stores a token in: its SHA-256, lowercase hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Caller:
    """One caller: its name (logged), its policy, the tools it is offered and its limits.

    `policy_path` None means the server's own policy; `tools` None means every tool the policy
    allows; a limit None means none (the server-wide bound still applies)."""

    name: str
    policy_path: Path | None = None
    tools: frozenset[str] | None = None
    max_concurrent: int | None = None
    calls_per_minute: int | None = None
    policy: Policy | None = field(default=None, compare=False, repr=False)


LOCAL = Caller("local")
"""The caller of a server without authentication (stdio, or HTTP on loopback)."""


def _limit(where: str, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigurationError(f"{where}: {key} must be a positive integer; got {json.dumps(value)}")


def _caller(
    entry: Any, index: int, base: Path, defaults: Mapping[str, Any], load: PolicyLoader
) -> Caller:
    where = f"caller {index + 1}"
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}: each [[caller]] is a table")
    unknown = sorted(set(entry) - _CALLER_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_CALLER_KEYS))}"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ConfigurationError(f"{where}: name must be a non-empty string")
    where = f"caller {name!r}"
    digest = entry.get("token_sha256")
    subject = entry.get("oauth_subject")
    if digest is None and subject is None:
        raise ConfigurationError(f"{where}: give token_sha256 or oauth_subject (or both)")
    if digest is not None and (
        not isinstance(digest, str)
        or len(digest) != 64
        or any(c not in "0123456789abcdef" for c in digest.lower())
    ):
        raise ConfigurationError(
            f"{where}: token_sha256 must be 64 hex digits (xerj-tools mcp --new-token NAME)"
        )
    if subject is not None and (not isinstance(subject, str) or not subject):
        raise ConfigurationError(f"{where}: oauth_subject must be a non-empty string")
    tools = entry.get("tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)
    ):
        raise ConfigurationError(f"{where}: tools must be a list of tool names")
    policy_path = entry.get("policy")
    policy = None
    if policy_path is not None:
        if not isinstance(policy_path, str) or not policy_path:
            raise ConfigurationError(f"{where}: policy must be a file name")
        policy_path = base / policy_path
        policy = load(policy_path)
    limits = {k: _limit(where, k, entry.get(k, defaults.get(k))) for k in _LIMIT_KEYS}
    return Caller(
        name.strip(),
        policy_path,
        frozenset(tools) if tools is not None else None,
        policy=policy,
        **limits,
    )


def parse_callers(
    data: Any, base: Path, load: PolicyLoader
) -> tuple[dict[str, Caller], dict[str, Caller]]:
    """(callers by token hash, callers by OAuth subject); `load` reads each policy file an
    entry names."""
    if not isinstance(data, Mapping):
        raise ConfigurationError("the top level must be a table")
    unknown = sorted(set(data) - {"caller", *_LIMIT_KEYS})
    if unknown:
        raise ConfigurationError(
            f"unknown key {unknown[0]!r}; the keys are caller, max_concurrent, calls_per_minute"
        )
    defaults = {k: _limit("the defaults", k, data.get(k)) for k in _LIMIT_KEYS}
    entries = data.get("caller", [])
    if not isinstance(entries, list):
        raise ConfigurationError("caller must be a list of tables ([[caller]])")
    by_token: dict[str, Caller] = {}
    by_subject: dict[str, Caller] = {}
    names: set[str] = set()
    for index, entry in enumerate(entries):
        caller = _caller(entry, index, base, defaults, load)
        if caller.name in names:
            raise ConfigurationError(f"caller {caller.name!r} is named twice")
        names.add(caller.name)
        if (digest := entry.get("token_sha256")) is not None:
            if digest.lower() in by_token:
                raise ConfigurationError(f"caller {caller.name!r}: the same token as another")
            by_token[digest.lower()] = caller
        if (subject := entry.get("oauth_subject")) is not None:
            if subject in by_subject:
                raise ConfigurationError(
                    f"caller {caller.name!r}: the same oauth_subject as another"
                )
            by_subject[subject] = caller
    return by_token, by_subject


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return unique_keys(pairs, " in one object")


def _narrowing_lost(before: Mapping[str, Caller], after: Mapping[str, Caller]) -> str | None:
    """Why `after` would widen a caller that `before` also names, or None."""
    for name, new in after.items():
        old = before.get(name)
        if old is None:
            continue
        if old.policy_path is not None and new.policy_path is None:
            return (
                f"caller {name!r} names no policy any more (it had {old.policy_path.name}), "
                "which would put it on the server's --policy; to mean that, name that policy "
                "file in its entry, or restart the server"
            )
        if old.tools is not None and new.tools is None:
            return (
                f"caller {name!r} lists no tools any more (it had {len(old.tools)}), which "
                "would offer it every tool; list them, or restart the server"
            )
    return None


class CallersFile:
    """The callers file, read at start (errors raise `ConfigurationError`) and again whenever
    it or a policy file it names changes; a later version is taken only when it has stopped
    changing, loads whole and widens no caller it still names (else it is logged and the last
    good one kept). `generation` counts the versions taken.

    `settle` and `clock` (wall-clock seconds, as file times are) are for tests."""

    def __init__(
        self,
        path: str | Path,
        *,
        settle: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.settle, self._clock = settle, clock
        self._stamp: Stamp = {}
        self._pending: tuple[Stamp, float] | None = None  # a changed stamp, first seen when
        self.generation = 0
        self.by_token: dict[str, Caller] = {}
        self.by_subject: dict[str, Caller] = {}
        self._load(strict=True)

    def _read(self) -> Any:
        suffix = self.path.suffix.lower()
        if suffix not in (".toml", ".json"):
            raise ConfigurationError("a callers file ends in .toml or .json")
        try:
            text = self.path.read_text("utf-8")
        except OSError as exc:
            raise ConfigurationError(f"cannot read it: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigurationError("it is not UTF-8 text") from None
        try:
            return (
                _read_toml(text) if suffix == ".toml" else json.loads(text, object_pairs_hook=_once)
            )
        except ValueError as exc:
            raise ConfigurationError(f"not valid {suffix[1:].upper()}: {exc}") from None

    def callers(self) -> dict[str, Caller]:
        """Every caller of the version in force, by name."""
        return {c.name: c for c in (*self.by_token.values(), *self.by_subject.values())}

    def _now(self) -> Stamp:
        return {path: _stat(path) for path in self._stamp or {self.path: None}}

    def _load(self, *, strict: bool) -> None:
        # Each file is stat'ed before it is read: a change after that read is seen next time.
        stamp: Stamp = {self.path: _stat(self.path)}

        def load(path: Path) -> Policy:
            stamp[path] = _stat(path)
            return load_policy_file(path)

        try:
            by_token, by_subject = parse_callers(self._read(), self.path.parent, load)
            if not strict:
                after = {c.name: c for c in (*by_token.values(), *by_subject.values())}
                if (widening := _narrowing_lost(self.callers(), after)) is not None:
                    raise ConfigurationError(widening)
        except ConfigurationError as exc:
            if strict:
                raise ConfigurationError(f"callers file {self.path}: {exc}") from None
            logger.error(
                "callers file %s not reloaded, the last good one stays: %s", self.path, exc
            )
            # Watched still: the policy files of the version in force, and those just tried.
            for path in self._stamp:
                stamp.setdefault(path, _stat(path))
        else:
            self.by_token, self.by_subject = by_token, by_subject
            self.generation += 1
            if not strict:
                logger.warning("callers file %s reloaded: %d callers", self.path, len(self))
        self._stamp, self._pending = stamp, None

    def _wait(self, stamp: Stamp) -> float:
        """Seconds until the changed files of `stamp` count as settled (0: now)."""
        now = self._clock()
        if self._pending is None or self._pending[0] != stamp:
            self._pending = (stamp, now)
        newest = max((s[0] for s in stamp.values() if s is not None), default=0) / 1e9
        # Settled when the newest write is `settle` old, or when the files were seen unchanged
        # for that long (a file time ahead of this clock, as on a network share, still settles).
        return max(0.0, min(self.settle - (now - newest), self.settle - (now - self._pending[1])))

    def refresh(self) -> None:
        """Read the files again if they changed since they were last read and have settled."""
        stamp = self._now()
        if stamp != self._stamp and self._wait(stamp) == 0:
            self._load(strict=False)

    async def settled(self) -> None:
        """`refresh`, after waiting for a change still being written to settle (at most
        `_MAX_WAIT` s; past it, the version in force serves this request)."""
        deadline = time.monotonic() + _MAX_WAIT
        while (stamp := self._now()) != self._stamp:
            wait = self._wait(stamp)
            if wait == 0:
                self._load(strict=False)
                return
            if time.monotonic() + wait > deadline:
                return
            await asyncio.sleep(wait)

    def for_token(self, token: str) -> Caller | None:
        self.refresh()
        return self.by_token.get(hash_token(token))

    def for_subject(self, subject: str) -> Caller | None:
        self.refresh()
        return self.by_subject.get(subject)

    def __len__(self) -> int:
        return len(self.callers())
