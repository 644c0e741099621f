"""XERJ autoindex's catalog shaped into what the model reads: a listing's rows and a
description's ``catalog`` section. Pure: the documents come in, the payload goes out; the
shapes of the documents are in `xerj_tools.tools._catalog`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from .._json import clean, dumps
from ._ready_queries import _text, ready_query

__all__ = ["CATALOG_INDEX", "MAX_FIELD_CHARS", "described", "listed", "specs_of", "summary"]

CATALOG_INDEX = "autoindex-catalog"  # catalog.rs:9
MAX_FIELD_CHARS = 5_000  # characters of catalog field entries in one description; `next` pages
MAX_QUERIES = 6  # ready queries per dataset (autoindex writes at most five: catalog.rs:133-242)
TEXT_EXAMPLE_CHARS = 80  # a text example is there to show words; a keyword one is kept whole
# The types autoindex infers (infer/mod.rs:357-479, 529), by the group `xerj_describe_index`
# files them under.
_GROUP = {
    "keyword": "keyword", "text": "text", "semantic_text": "semantic_text", "long": "numeric",
    "double": "numeric", "boolean": "boolean", "date": "date",
}  # fmt: skip


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: Any, limit: int = 20, cut: int = 300) -> list[str]:
    """The strings of a list, at most `limit` of them, each cut at `cut` characters."""
    if not isinstance(value, list):
        return []
    kept = [v for v in value if isinstance(v, str)][:limit]
    return [v if len(v) <= cut else v[:cut] + "…" for v in kept]


def summary(source: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset's facts as a listing shows them: formats, files, time field and range."""
    out: dict[str, Any] = {}
    if formats := _strings(source.get("formats")):
        out["formats"] = formats
    if (files := _count(source.get("file_count"))) is not None:
        out["files"] = files
    if junk := _count(source.get("junk_records")):
        out["junk_records"] = junk
    if time_field := _text(source.get("time_field")):
        out["time_field"] = time_field
        low, high = _text(source.get("time_min")), _text(source.get("time_max"))
        if low and high:
            out["time_range"] = [low, high]
    if semantic := _text(source.get("semantic_field")):
        out["semantic_field"] = semantic
    return out


def listed(
    payload: dict[str, Any], datasets: Mapping[str, Mapping[str, Any]], read: bool
) -> dict[str, Any]:
    """A listing with the catalog's facts on each dataset's row and the catalog's own row
    marked as the catalog (`read`: whether the catalog search answered)."""
    rows = []
    for row in payload.get("indices") or ():
        entry = dict(row)
        if entry.get("name") == CATALOG_INDEX:
            entry["role"] = "catalog"
        elif (source := datasets.get(entry.get("name", ""))) is not None:
            entry.update(summary(source))
        rows.append(entry)
    out = {**payload, "indices": rows}
    if not read:
        note = (
            f"XERJ autoindex's catalog (`{CATALOG_INDEX}`) could not be read; names and counts "
            "are complete"
        )
    elif datasets:
        note = (
            "the rows with `formats` are datasets XERJ autoindex catalogued (in "
            f"`{CATALOG_INDEX}`, the catalog, not a dataset): describe one for its fields with "
            "example values and ready-to-send queries"
        )
    else:
        note = f"`{CATALOG_INDEX}` is XERJ autoindex's catalog; it describes none of these indices"
    out["notes"] = [*payload.get("notes", []), note]
    return out


def specs_of(source: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The dataset's field specs by name, from its ``fields_json`` string; empty when it is
    not the JSON list autoindex writes (catalog.rs:80)."""
    raw = source.get("fields_json")
    try:
        specs = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for spec in specs if isinstance(specs, list) else ():
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            out.setdefault(spec["name"], clean(spec))
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _entry(spec: Mapping[str, Any], group: str | None) -> dict[str, Any]:
    """What the model reads of one field spec: its example values first."""
    kind = spec.get("es_type") if isinstance(spec.get("es_type"), str) else None
    out: dict[str, Any] = {}
    wordy = kind in ("text", "semantic_text")
    if examples := _strings(spec.get("examples"), 3, TEXT_EXAMPLE_CHARS if wordy else 120):
        out["examples"] = examples
    cardinality = _count(spec.get("cardinality_est"))
    if cardinality is not None:
        # catalog.rs:316-320 renders an overflowed count as "8192+"
        out["cardinality"] = (
            f"{cardinality}+" if spec.get("cardinality_overflow") is True else cardinality
        )
    nulls = _number(spec.get("null_ratio"))
    if nulls:
        out["null_ratio"] = round(nulls, 2)
    length = _number(spec.get("avg_len"))
    if wordy and length:
        out["avg_len"] = round(length)
    low, high = _text(spec.get("date_min")), _text(spec.get("date_max"))
    if kind == "date" and low and high:
        out["range"] = [low, high]
    if semantic := _text(spec.get("semantic")):
        out["semantic"] = semantic
    if kind is not None and group is not None and _GROUP.get(kind, "other") != group:
        # the mapping decides what a query does; the catalog's type says what autoindex saw
        out["catalog_type"] = kind
    if notes := _strings(spec.get("notes"), 5):
        out["notes"] = notes
    return out


def _page(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The fields the mapping's page shows, sorted, with the group each is under."""
    groups = payload.get("fields") or {}
    return sorted((path, group) for group, fields in groups.items() for path in fields)


def _cut(payload: dict[str, Any], kept: Collection[str], shown: int) -> None:
    """Narrow the page to the fields `kept` (a first part of it), with `next` to the rest."""
    groups: dict[str, Any] = {}
    for group, fields in payload["fields"].items():
        if isinstance(fields, dict):
            narrowed: Any = {p: v for p, v in fields.items() if p in kept}
        else:
            narrowed = [p for p in fields if p in kept]
        if narrowed:
            groups[group] = narrowed
    payload["fields"] = groups
    truncated = payload.get("truncated") or {}
    start, prefix = truncated.get("from", 0), truncated.get("prefix") or ""
    total = truncated.get("of", payload.get("field_count", shown))
    payload["truncated"] = {
        "shown": len(kept),
        "from": start,
        "of": total,
        "prefix": prefix or None,
    }
    had_next = "next" in payload
    payload["next"] = {"from": start + len(kept), **({"prefix": prefix} if prefix else {})}
    if not had_next:
        payload["notes"] = [
            *payload.get("notes", []),
            "the example values fill this page: call again with `next` for the rest",
        ]


def _section(source: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (records := _count(source.get("record_count"))) is not None:
        out["records"] = records
    out.update(summary(source))
    return out


def described(
    payload: dict[str, Any],
    datasets: Mapping[str, Mapping[str, Any]],
    allows: Callable[[str], bool],
) -> dict[str, Any]:
    """A description (`xerj_describe_index`'s payload) with the catalog's word on each dataset:
    its facts, the example values, cardinality and notes of the fields on this page, and, on
    the first page, its ready-to-send queries. The page is narrowed (with `next`) when the
    catalog's entries would pass `MAX_FIELD_CHARS`."""
    out = dict(payload)
    page = _page(out)
    specs = {name: specs_of(source) for name, source in datasets.items()}
    entries: dict[str, dict[str, Any]] = {name: {} for name in datasets}
    used = 0
    kept: list[str] = []
    for path, group in page:
        adds = {name: _entry(spec[path], group) for name, spec in specs.items() if path in spec}
        size = sum(len(dumps(e)) + len(path) + 4 for e in adds.values())
        if kept and used + size > MAX_FIELD_CHARS:
            break
        used += size
        kept.append(path)
        for name, entry in adds.items():
            entries[name][path] = entry
    if len(kept) < len(page):
        _cut(out, set(kept), len(page))
    truncated = payload.get("truncated") or {}
    first_page = not truncated.get("from") and not truncated.get("prefix")
    catalog: dict[str, Any] = {}
    for name, source in sorted(datasets.items()):
        section = _section(source)
        if entries[name]:
            section["fields"] = entries[name]
        field_notes = {
            f"{p}: {n}" for p, s in specs[name].items() for n in _strings(s.get("notes"))
        }
        if notes := [n for n in _strings(source.get("notes")) if n not in field_notes]:
            section["notes"] = notes  # lib.rs:713-727 repeats each field's notes here
        if first_page:
            queries = [
                q for raw in (source.get("sample_queries_json") or [])[:MAX_QUERIES]
                if (q := ready_query(raw, allows)) is not None
            ]  # fmt: skip
            if queries:
                section["queries"] = queries
        catalog[name] = section
    out["catalog"] = catalog
    return out
