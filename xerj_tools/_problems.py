"""What argument checking reports: `Problem`, `ValidationResult`, the `Check` callable and JSON paths.

Plain values with no checking logic, so that validation (`_validation`), repair (`_repair`), the
tools' own checks and the exceptions all import them from here and not from one another.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Check", "Problem", "ValidationResult", "json_path", "json_type"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a call's arguments: where (a JSON path such as
    ``$.queries[0].query``) and what, in words a model can act on."""

    path: str
    message: str

    def __init__(self, path: str, message: str) -> None:
        # The frozen dataclass's own __init__ sets each field with `object.__setattr__`; this
        # writes them straight to the instance's dict, the same object in 60% of the time (a
        # refused call makes several). Equality, order, hash, repr: the dataclass's.
        fields = self.__dict__
        fields["path"] = path
        fields["message"] = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


Check = Callable[[Mapping[str, Any]], Iterable[Problem]]
"""A check beyond JSON Schema: takes decoded arguments, yields problems. It must tolerate
arguments that failed the schema (it runs anyway, so that every problem is reported at once)."""


@dataclass(frozen=True)
class ValidationResult:
    """The outcome of `ToolRegistry.validate`: `ok`, the decoded `arguments`, and all `problems`.

    `arguments` is None when the input could not be decoded into a JSON object.
    """

    ok: bool
    arguments: dict[str, Any] | None
    problems: tuple[Problem, ...] = ()
    repairs: tuple[str, ...] = ()
    decode_error: bool = field(default=False, repr=False)

    def __init__(
        self,
        ok: bool,
        arguments: dict[str, Any] | None,
        problems: tuple[Problem, ...] = (),
        repairs: tuple[str, ...] = (),
        decode_error: bool = False,
    ) -> None:
        fields = self.__dict__  # (as `Problem.__init__`: the dataclass's fields, set faster)
        fields["ok"] = ok
        fields["arguments"] = arguments
        fields["problems"] = problems
        fields["repairs"] = repairs
        fields["decode_error"] = decode_error

    @classmethod
    def failure(cls, path: str, message: str, *, decode_error: bool = False) -> ValidationResult:
        return cls(False, None, (Problem(path, message),), decode_error=decode_error)

    def summary(self) -> str:
        return "; ".join(str(p) for p in self.problems)


def json_path(parts: Iterable[str | int]) -> str:
    """Render path parts as a JSON path: ``["queries", 0, "query"]`` -> ``$.queries[0].query``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}"
        else:
            out += "[" + json.dumps(part) + "]"
    return out


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded value (``"integer"``, ``"object"``, …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
