"""What an options object needs (`AgentOptions`).

A repr lists what differs from the defaults and hides secrets; an options object pickles and
copies whole; ``replace`` refuses an unknown name with a `TypeError` naming the nearest one.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

__all__ = ["options_repr", "plain_fields", "rebuilt", "unexpected"]

_SECRETS = frozenset({"api_key", "authorization"})
_O = TypeVar("_O")


def plain_fields(options: Any) -> dict[str, Any]:
    """The fields of an options object, read-only mappings as dicts (what pickle and deepcopy
    can copy; `rebuilt` makes it again, checked)."""
    return {
        f.name: dict(v) if isinstance(v := getattr(options, f.name), MappingProxyType) else v
        for f in dataclasses.fields(options)
    }


def rebuilt(cls: Callable[..., _O], fields: Mapping[str, Any]) -> _O:
    return cls(**fields)


def options_repr(options: Any, masked: Collection[str] = ()) -> str:
    """The fields that differ from their defaults; a secret shows as ``<redacted>``, and so
    does, in a mapping field named in `masked`, each value whose key may hold one."""
    shown = []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if isinstance(value, Mapping) and f.name in masked:
            value = {k: "<redacted>" if _secret_key(k) else v for k, v in value.items()}
        elif isinstance(value, MappingProxyType):
            value = dict(value)
        shown.append(f"{f.name}={'<redacted>' if f.name in _SECRETS else repr(value)}")
    return f"{type(options).__name__}({', '.join(shown)})"


def _secret_key(key: Any) -> bool:
    """Whether an option of this name may carry a credential (headers and bodies included)."""
    name = str(key).lower()
    return name.startswith("extra_") or any(
        word in name for word in ("key", "auth", "token", "secret", "password", "header")
    )


def unexpected(owner: str, keywords: Collection[str], known: Collection[str]) -> None:
    """Raise `TypeError` (as Python does for a keyword a function lacks) for the first keyword
    not in `known`, with the nearest known name."""
    for name in keywords:
        if name not in known:
            near = difflib.get_close_matches(name, list(known), n=1)
            maybe = f"; did you mean {near[0]!r}?" if near else ""
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}{maybe}")
