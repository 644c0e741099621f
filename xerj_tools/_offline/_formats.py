"""The formats recorded calls are kept in, as a table of detectors, one JSON record at a time.

Each `RecordFormat` says whether a record is its own (`claims`) and lists the record's tool calls
(`calls`); the first format in `FORMATS` that claims a record reads it. A new format is one more
entry (before `TRANSCRIPT`, which reads whatever the others leave). When an input yields no call
at all, `xerj-tools validate` names every format of the table as tried.

- **OpenAI Batch API output**: ``{"custom_id", "response": {"status_code", "body"}, "error"}``,
  each ``response.body`` a chat completion (or a Responses response); a request that failed
  (``error`` set, no body) has no call.
- **Fine-tuning JSONL**: ``{"messages": [...], "tools": [...]}``; the assistant messages'
  ``tool_calls`` are validated against the example's own ``tools`` when it has them (a
  registry built once per distinct list), else against the registry in use.
- **Transcripts and records**: Chat Completions, Responses and Anthropic Messages transcripts
  and responses, bare tool calls, ``{"name", "arguments"}`` records (`find_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._records import FoundCall, Unrecognised, find_calls

__all__ = ["FORMATS", "RecordFormat", "calls_in", "formats_tried"]

Found = FoundCall | Unrecognised


@dataclass(frozen=True)
class RecordFormat:
    name: str
    title: str
    claims: Callable[[Any], bool]
    calls: Callable[[Any], Iterator[Found]]


def _batch_output_claims(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and "custom_id" in record
        and ("response" in record or "error" in record)
    )


def _batch_output_calls(record: Any) -> Iterator[Found]:
    response = record.get("response")
    body = response.get("body") if isinstance(response, Mapping) else None
    if isinstance(body, (Mapping, list)):
        yield from find_calls(body)


def _fine_tuning_claims(record: Any) -> bool:
    # OpenAI function tools only: a request body of another API (Anthropic's `tools` are
    # `{name, input_schema}`) is a transcript validated against the registry in use.
    tools = record.get("tools") if isinstance(record, Mapping) else None
    return (
        isinstance(tools, list)
        and isinstance(record.get("messages"), list)
        and all(isinstance(tool, Mapping) and tool.get("type") == "function" for tool in tools)
    )


def _fine_tuning_calls(record: Any) -> Iterator[Found]:
    registry = _example_registry(record["tools"])
    for found in find_calls(record["messages"]):
        if isinstance(found, FoundCall) and registry is not None:
            found = FoundCall(
                found.name, found.arguments, found.call_id, found.line, found.index, found.api,
                registry,
            )  # fmt: skip
        yield found


_REGISTRIES: dict[str, Any] = {}  # the JSON text of an example's tools -> its registry


def _example_registry(tools: list[Any]) -> Any:
    """The registry of an example's own `tools` (with the XERJ tools' checks where the names are
    theirs), built once per distinct list; a list that is no valid tools file gives an error
    registry that reports it on each call."""
    from .._exceptions import ToolDefinitionError
    from .._schema._registry import registry_from_definitions

    key = json.dumps(tools, sort_keys=True, default=str)
    found = _REGISTRIES.get(key)
    if found is None:
        try:
            found = registry_from_definitions(tools)
        except ToolDefinitionError as exc:
            found = BadTools(str(exc))
        if len(_REGISTRIES) >= 256:  # bounded: a file of distinct tool lists stays flat
            _REGISTRIES.clear()
        _REGISTRIES[key] = found
    return found


class BadTools:
    """Stands in for the registry of an example whose `tools` are not valid definitions."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __contains__(self, name: object) -> bool:
        return False

    def validate(self, name: str, arguments: object, *, repair: bool = False) -> Any:
        from .._problems import ValidationResult

        return ValidationResult.failure("$", f"the example's tools are invalid: {self.message}")


BATCH_OUTPUT = RecordFormat(
    "batch-output", "OpenAI Batch API output", _batch_output_claims, _batch_output_calls
)
FINE_TUNING = RecordFormat(
    "fine-tuning",
    "fine-tuning JSONL (messages with tools)",
    _fine_tuning_claims,
    _fine_tuning_calls,
)
TRANSCRIPT = RecordFormat(
    "transcript",
    "Chat Completions, Responses and Anthropic Messages transcripts, and {name, arguments} records",
    lambda record: True,
    find_calls,
)
FORMATS: list[RecordFormat] = [BATCH_OUTPUT, FINE_TUNING, TRANSCRIPT]
"""The formats, most specific first; `TRANSCRIPT` last, as it claims every record."""


def calls_in(record: Any) -> Iterator[Found]:
    """The calls of one record, read by the first format that claims it."""
    for form in FORMATS:
        if form.claims(record):
            return form.calls(record)
    return iter(())


def formats_tried() -> str:
    """The formats of the table, for a message that says none of them found a call."""
    return "; ".join(form.title for form in FORMATS)
