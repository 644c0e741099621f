"""Read an operator's policy file (TOML or JSON) into a `Policy`, refusing anything doubtful.

The file holds `Policy`'s fields at its top level, spelled as in Python::

    allow_indices = ["docs", "tickets", "logs-*"]
    max_size = 50
    read_only = true
    namespace = "tenant-42"

A misspelt key, a key given twice, a wrong type, a value no index or namespace can match (see
`Policy`) or an unreadable file is an error that names the key: a guardrail that silently fell
back to its default would be worse than none.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._dispatch._policy import Policy
from ..._exceptions import ConfigurationError

__all__ = ["POLICY_KEYS", "load_policy_file", "policy_from_mapping", "unique_keys"]

# Each field of `Policy` and the kind of value it takes. A test checks this covers every field.
POLICY_KEYS: dict[str, str] = {
    "allow_indices": "patterns",
    "deny_indices": "patterns",
    "max_size": "count",
    "max_k": "count",
    "max_num_candidates": "count",
    "max_rerank_window": "count",
    "caps": "caps",
    "allow_rerank": "flag",
    "read_only": "flag",
    "namespace": "text",
    "namespace_prefix": "text",
    "max_argument_bytes": "count",
    "max_response_bytes": "count",
    "allow_remotes": "flag",
}
_KINDS = {
    "patterns": "a list of strings (glob patterns)",
    "count": "a positive integer",
    "caps": '"clamp" or "refuse"',
    "flag": "true or false",
    "text": "a non-empty string",
}


def _check(key: str, value: Any) -> Any:
    kind = POLICY_KEYS[key]
    if value is None and kind in ("count", "text"):
        return None  # JSON's null: no cap, no binding (TOML has no null; leave the key out)
    if kind == "patterns" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if kind == "count" and isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if kind == "caps" and value in ("clamp", "refuse"):
        return value
    if kind == "flag" and isinstance(value, bool):
        return value
    if kind == "text" and isinstance(value, str) and value:
        return value
    raise ConfigurationError(f"{key} must be {_KINDS[kind]}; got {json.dumps(value)[:60]}")


def policy_from_mapping(data: Any, source: str = "the policy") -> Policy:
    """A `Policy` from decoded TOML or JSON; `ConfigurationError` names the first bad key."""
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{source}: the top level must be a table of Policy fields")
    unknown = sorted(set(data) - set(POLICY_KEYS))
    if unknown:
        raise ConfigurationError(
            f"{source}: unknown key {unknown[0]!r}; the keys are {', '.join(POLICY_KEYS)}"
        )
    try:
        values = {key: _check(key, value) for key, value in data.items()}
        return Policy(**values)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{source}: {exc}") from None


def unique_keys(pairs: list[tuple[str, Any]], said: str = "; give each key once") -> dict[str, Any]:
    """JSON's objects as dicts, refusing a key given twice (`json` keeps the last, so a second
    ``"read_only": false`` would quietly undo the first, or swap a caller's token or policy;
    TOML refuses it itself). `said` ends the error's message."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigurationError(f"the key {key!r} is given twice{said}")
        seen[key] = value
    return seen


def _read_toml(text: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 reads TOML through tomli (in the `mcp` extra)
        try:
            tomllib = importlib.import_module("tomli")
        except ImportError:
            from ..._install import install_hint

            raise ConfigurationError(
                "reading a TOML policy on Python 3.10 needs tomli, in the `mcp` extra: "
                f"{install_hint('mcp')}; or give the policy as .json"
            ) from None
    return tomllib.loads(text)


def load_policy_file(path: str | Path) -> Policy:
    """Read ``*.toml`` or ``*.json`` into a `Policy`; `ConfigurationError` says what is wrong."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ConfigurationError(f"{path}: a policy file ends in .toml or .json")
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the policy file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: the policy file is not UTF-8 text") from None
    try:
        if suffix == ".toml":
            data = _read_toml(text)
        else:
            data = json.loads(text, object_pairs_hook=unique_keys)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError and json.JSONDecodeError both are
        kind = "TOML" if suffix == ".toml" else "JSON"
        raise ConfigurationError(f"{path}: not valid {kind}: {exc}") from None
    return policy_from_mapping(data, str(path))
