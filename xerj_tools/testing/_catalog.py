"""The stand-in's ``autoindex-catalog``: what ``xerj autoindex`` writes, made for its own corpus.

It is built as if autoindex had read each index of the corpus from one JSONL file named after it
and kept the index's name (autoindex would name it ``<prefix>-<slug>``: lib.rs:319). Paths are
engine/crates/xerj-autoindex/src at e6e8e6a:

- the field specs follow ``infer_fields`` (infer/mod.rs:337-562): boolean, then dates (95% of
  the strings parse; RFC 3339 and date-only here, dates.rs:43-79), long, double, then keyword or
  text by the 95th percentile of length and tokens and the share of distinct values, and the
  natural-language text field of 80 characters or more on average elected ``semantic_text``;
  cardinality is the count of distinct values, examples the first three distinct values of at
  most 120 characters (infer/mod.rs:223-242); the time field is the date field of the highest
  coverage (infer/mod.rs:564-576);
- the dataset document is ``dataset_doc`` (catalog.rs:78-102) with the notes of lib.rs:713-727,
  its ready queries ``build_sample_queries`` (catalog.rs:133-242; no pivot: autoindex's key
  overlap needs 25 shared values, correlate.rs:111-114, which this corpus never has);
- a file document per dataset (``file_doc``, catalog.rs:104-131) and the run's (lib.rs:829-845);
- the catalog's own mapping is ``catalog_mapping`` (catalog.rs:11-52), and an index of the
  corpus created without a mapping gets the one autoindex would have PUT (``build_mapping``,
  lib.rs:174-187, without the provenance fields); one created with a mapping keeps it, as
  ``ensure_index`` leaves an index that exists (esclient.rs:82-99).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["CATALOG_INDEX", "autoindex_mapping", "catalog_documents", "catalog_mapping"]

CATALOG_INDEX = "autoindex-catalog"  # catalog.rs:9
RUN_ID = "run-stand-in"

_KEYWORD = "keyword"
_CATALOG_TYPES = {
    "doc_kind": _KEYWORD, "slug": _KEYWORD, "index_name": _KEYWORD, "record_count": "long",
    "junk_records": "long", "bytes": "long", "file_count": "long", "formats": _KEYWORD,
    "time_field": _KEYWORD, "time_min": "date", "time_max": "date", "semantic_field": _KEYWORD,
    "fields_json": "text", "sample_queries_json": "text", "notes": "text", "path": _KEYWORD,
    "file_key": _KEYWORD, "format": _KEYWORD, "status": _KEYWORD, "reason": "text",
    "records": "long", "junk": "long", "run_id": _KEYWORD,
}  # fmt: skip
_DATE_FORMAT = "strict_date_optional_time||epoch_millis"
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def catalog_mapping() -> dict[str, Any]:
    """catalog.rs:11-52 (the correlation fields left out: this catalog has none)."""
    properties: dict[str, Any] = {}
    for name, kind in _CATALOG_TYPES.items():
        properties[name] = {"type": kind, **({"format": _DATE_FORMAT} if kind == "date" else {})}
    return {"properties": properties}


@dataclass
class _Acc:
    """``FieldAcc`` (infer/mod.rs:38-75, ``add`` at 122-200), the parts the specs read."""

    n: int = 0
    json_bool: int = 0
    bool_ok: int = 0
    long_ok: int = 0
    double_ok: int = 0
    date_hits: dict[str, int] = field(default_factory=dict)
    distinct: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    words: int = 0
    tokens: int = 0
    dates: list[datetime] = field(default_factory=list)

    def add(self, value: Any) -> None:
        if value is None or isinstance(value, dict):
            return
        if isinstance(value, list):
            for item in value:
                if not isinstance(item, list):
                    self.add(item)
            return
        self.n += 1
        if isinstance(value, bool):
            self.bool_ok += 1
            self.json_bool += 1
            self._distinct("true" if value else "false")  # no example (infer/mod.rs:132-137)
            return
        if isinstance(value, (int, float)):
            self.double_ok += 1
            self.long_ok += isinstance(value, int)
            text = json.dumps(value)
            self._distinct(text)
            self._example(text)
            return
        text = str(value).strip()
        self.bool_ok += text in ("true", "false")
        if re.fullmatch(r"[+-]?\d+", text):
            self.long_ok += 1
            self.double_ok += 1
        elif re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            self.double_ok += 1
        if (parsed := _date(text)) is not None:
            self.date_hits[parsed[1]] = self.date_hits.get(parsed[1], 0) + 1
            self.dates.append(parsed[0])
        for token in re.findall(r"[^\W_]+", text):  # split on what is not alphanumeric
            self.tokens += 1
            self.words += len(token) >= 3 and token.isascii() and token.isalpha()
        self.lengths.append(len(text))
        self.token_counts.append(len(text.split()))
        self._distinct(text)
        self._example(text)

    def _distinct(self, text: str) -> None:
        if text not in self.distinct:
            self.distinct.append(text)

    def _example(self, text: str) -> None:
        short = text[:120]
        if len(self.examples) < 3 and text and short not in self.examples:
            self.examples.append(short)


def _date(text: str) -> tuple[datetime, str] | None:
    """dates.rs:43-79, the two encodings a corpus of RFC 3339 and date-only strings needs."""
    if not 8 <= len(text) <= 40 or not text[0].isdigit():
        return None
    if _DATE_ONLY.match(text):
        try:
            return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc), "date-only"
        except ValueError:
            return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed.astimezone(timezone.utc), "rfc3339") if parsed.tzinfo else None


def _millis(moment: datetime) -> str:
    # dates.rs:112-114 `to_rfc3339_millis`
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _p95(samples: Sequence[int]) -> int:
    # infer/mod.rs:328-335
    ordered = sorted(samples)
    return ordered[(len(ordered) - 1) * 95 // 100] if ordered else 0


def _spec(name: str, acc: _Acc, records: int) -> dict[str, Any]:
    """infer/mod.rs:357-479: one field's spec, typed."""
    spec: dict[str, Any] = {"name": name, "es_type": "keyword"}
    covered = min(acc.n, records) / max(records, 1)
    spec.update(
        cardinality_est=len(acc.distinct), cardinality_overflow=False, null_ratio=1.0 - covered,
        avg_len=sum(acc.lengths) / max(len(acc.lengths), 1), coverage=covered,
        examples=list(acc.examples),
    )  # fmt: skip
    n = acc.n

    def most(count: int) -> bool:
        return count * 100 >= n * 95

    if acc.json_bool == n or (len(acc.lengths) == n and acc.bool_ok == n):
        spec["es_type"] = "boolean"
    elif acc.lengths and (total := sum(acc.date_hits.values())) and most(total):
        spec["es_type"] = "date"
        spec["date_enc"] = max(acc.date_hits.items(), key=lambda kv: kv[1])[0]
        spec["date_min"], spec["date_max"] = _millis(min(acc.dates)), _millis(max(acc.dates))
        spec["date_evidence"] = [f"{enc}: {count}" for enc, count in sorted(acc.date_hits.items())]
    elif acc.long_ok and most(acc.long_ok):
        spec["es_type"] = "long"
    elif acc.double_ok and most(acc.double_ok):
        spec["es_type"] = "double"
    else:
        ratio = len(acc.distinct) / n
        p95_len, p95_tokens = _p95(acc.lengths), _p95(acc.token_counts)
        keyword = (p95_len <= 128 and p95_tokens <= 3) or ratio < 0.1
        text = p95_tokens > 8 or p95_len > 256
        spec["es_type"] = (
            "keyword" if keyword and not text else "text" if text or ratio >= 0.5 else "keyword"
        )
    return spec


def _natural(acc: _Acc) -> tuple[float, float] | None:
    """infer/mod.rs:78-120: word ratio and tokens per value, when the field reads as language."""
    ratio = acc.words / acc.tokens if acc.tokens else 0.0
    mean = sum(acc.token_counts) / len(acc.token_counts) if acc.token_counts else 0.0
    return (ratio, mean) if ratio >= 0.55 and mean >= 3.0 else None


def infer_fields(documents: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """infer/mod.rs:337-562 over `documents` (flat, as autoindex flattens them)."""
    accs: dict[str, _Acc] = {}
    for source in documents:
        for key, value in source.items():
            accs.setdefault(key, _Acc()).add(value)
    specs = [_spec(name, accs[name], len(documents)) for name in sorted(accs) if accs[name].n]
    wordy = [
        (s["avg_len"], i, natural)
        for i, s in enumerate(specs)
        if s["es_type"] == "text"
        and s["avg_len"] >= 80.0
        and (natural := _natural(accs[s["name"]])) is not None
    ]
    if wordy:
        _, i, (ratio, mean) = max(wordy, key=lambda w: (w[0], w[1]))
        specs[i]["es_type"] = "semantic_text"
        specs[i]["notes"] = [
            "hybrid lexical+vector body — elected because it looks like natural language "
            f"(word_ratio {ratio:.2f}, {mean:.1f} tokens/value); embedded server-side (lexical by "
            "default; Candle neural, proxy, or experimental ONNX if configured)"
        ]
    return specs


def _last_max(items: Sequence[Any], key: Any) -> Any:
    """Rust's ``Iterator::max_by``: the last of the greatest."""
    best = None
    for item in items:
        if best is None or key(item) >= key(best):
            best = item
    return best


def sample_queries(index: str, specs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """catalog.rs:133-210 `build_sample_queries` (its pivot, 212-240, needs a correlation)."""
    out: list[dict[str, Any]] = []
    request = f"POST /{index}/_search"
    filters = [
        s for s in specs if s["es_type"] == "keyword" and s["cardinality_est"] >= 2 and s["examples"]
    ]  # fmt: skip
    exact = _last_max(
        filters, lambda s: s["coverage"] + (1.0 if s["cardinality_est"] <= 1000 else 0.0)
    )
    if exact is not None:
        out.append({
            "class": "exact_filter", "title": f"Exact filter on {exact['name']}", "request": request,
            "body": {"query": {"term": {exact["name"]: exact["examples"][0]}}, "size": 3},
        })  # fmt: skip
    texts = [s for s in specs if s["es_type"] in ("text", "semantic_text") and s["examples"]]
    semantic = next((s["name"] for s in specs if s["es_type"] == "semantic_text"), None)
    if (text := _last_max(texts, lambda s: s["avg_len"])) is not None:
        words = [
            w for e in text["examples"] for w in e.split()
            if len(w) >= 4 and w.isascii() and w.isalnum()
        ]  # fmt: skip
        word = _last_max(words, len) or "data"
        out.append({
            "class": "full_text", "title": f"Full-text (BM25) match on {text['name']}",
            "request": request, "body": {"query": {"match": {text["name"]: word}}, "size": 3},
        })  # fmt: skip
        if semantic is not None:
            arms = [
                {"query": {"match": {semantic: word}}, "weight": 1},
                {"query": {"semantic": {"field": semantic, "query": word}}, "weight": 1},
            ]
            out.append({
                "class": "hybrid_lexical_vector",
                "title": f"Hybrid lexical+vector (RRF) on {semantic} — embedder set server-side "
                "(lexical by default; Candle neural, proxy, or experimental ONNX if configured)",
                "request": request,
                "body": {"query": {"hybrid": {"queries": arms}}, "size": 3},
                "note": "strip *_vector from hits client-side (semantic queries ignore _source "
                "filtering)",
            })  # fmt: skip
    time_field = time_field_of(specs)
    aggs: dict[str, Any]
    if time_field is not None:
        aggs = {"per_day": {"date_histogram": {"field": time_field, "calendar_interval": "day"}}}
        title = f"Daily activity (date_histogram on {time_field})"
    elif exact is not None:
        aggs = {"top": {"terms": {"field": exact["name"], "size": 10}}}
        title = f"Top values of {exact['name']}"
    else:
        return out
    out.append({"class": "analytics", "title": title, "request": request,
                "body": {"size": 0, "aggs": aggs}})  # fmt: skip
    return out


def time_field_of(specs: Sequence[Mapping[str, Any]]) -> str | None:
    # infer/mod.rs:564-576: the date field of the highest coverage, the first name on a tie
    dates = [s for s in specs if s["es_type"] == "date"]
    if not dates:
        return None
    return str(min(dates, key=lambda s: (-s["coverage"], s["name"]))["name"])


def autoindex_mapping(specs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """lib.rs:174-187 `build_mapping` (without its provenance fields)."""
    properties: dict[str, Any] = {}
    for spec in specs:
        kind = spec["es_type"]
        properties[spec["name"]] = (
            {"type": "date", "format": _DATE_FORMAT} if kind == "date" else {"type": kind}
        )
    return {"properties": properties}


def catalog_documents(
    corpus: Mapping[str, Sequence[Mapping[str, Any]]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The catalog's documents by id for `corpus` (index -> sources), and each dataset's specs."""
    docs: dict[str, dict[str, Any]] = {}
    all_specs: dict[str, list[dict[str, Any]]] = {}
    for index, sources in sorted(corpus.items()):
        specs = infer_fields(sources)
        all_specs[index] = specs
        size = sum(len(json.dumps(s, ensure_ascii=False)) + 1 for s in sources)
        time_field = time_field_of(specs)
        spec_of = {s["name"]: s for s in specs}
        low = spec_of[time_field]["date_min"] if time_field else None
        high = spec_of[time_field]["date_max"] if time_field else None
        notes = [f"{s['name']}: {n}" for s in specs for n in s.get("notes", [])]
        docs[f"ds:{index}"] = {
            "doc_kind": "dataset", "slug": index, "index_name": index, "formats": ["jsonl"],
            "record_count": len(sources), "junk_records": 0, "bytes": size, "file_count": 1,
            "time_field": time_field, "time_min": low, "time_max": high,
            "semantic_field": next((s["name"] for s in specs if s["es_type"] == "semantic_text"), None),
            "fields_json": json.dumps(specs, ensure_ascii=False),
            "sample_queries_json": [
                json.dumps(q, ensure_ascii=False) for q in sample_queries(index, specs)
            ],
            "notes": notes, "run_id": RUN_ID,
        }  # fmt: skip
        key = f"{index}-jsonl"
        docs[f"file:{key}"] = {
            "doc_kind": "file", "file_key": key, "path": f"{index}.jsonl", "format": "jsonl",
            "status": "indexed", "reason": None, "records": len(sources), "junk": 0,
            "bytes": size, "run_id": RUN_ID,
        }  # fmt: skip
    docs[f"run:{RUN_ID}"] = {
        "doc_kind": "run", "run_id": RUN_ID, "files_total": len(corpus),
        "files_indexed": len(corpus), "files_junk": 0,
        "records_total": sum(len(s) for s in corpus.values()), "junk_records_total": 0,
    }  # fmt: skip
    return docs, all_specs
