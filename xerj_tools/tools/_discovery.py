"""`xerj_list_indices` and `xerj_describe_index`: the model sees the data before it queries.
First-party tools; their definitions follow the publishers' in ``tools.json``.

- `xerj_list_indices`: ``GET /_cat/indices`` (or ``/_cat/indices/{pattern}``; router.rs:216-220,
  es_compat.rs:393-488 at e6e8e6a), text rows ``green open <name> <uuid> 1 0 <docs.count> 0
  <size> <size> <size>`` (es_compat.rs:459-468), then ``GET /_resolve/index/*`` for the aliases
  (router.rs:353, es_compat.rs:15816-15863: ``aliases: [{name, indices}]``, from memory). A
  concrete name that is no index is 404 ``index_not_found_exception``, a pattern matching
  nothing an empty 200 (es_compat.rs:418-427); only index names are compared, never aliases
  (es_compat.rs:424-429), and a ``-name`` is a literal name. The policy is applied to every name
  listed; a concrete name of `pattern` the policy denies is refused before anything is sent
  (`PolicyTraits.listed_args`), whether or not it exists, so the answer tells nothing of it. An alias is
  shown beside its indices only when its name and every index behind it are allowed; a data
  stream (an alias over ``.ds-<name>-NNNNNN``, engine.rs:1165-1184) is listed by its own name
  when that name is allowed, its backing indices with it (`_index_guard.allowed_behind`).
- `xerj_describe_index`: ``GET /{index}/_mapping`` (router.rs:251-252, es_compat.rs:1458-1497;
  see `xerj_tools.tools._mappings`): the fields grouped the way a query is written. `index` may be
  a pattern or a comma list, as ``get_mapping`` expands it (`resolve_index_selector`,
  es_compat.rs:14131-14162: ``_all``, ``*``, ``prefix*``/``*suffix`` over index names, exact
  names kept); the dispatcher resolves an alias or data stream to its indices first, since
  XERJ answers an alias with a mapping derived from its first index's schema (no stored
  ``semantic_text``, no ``dims``: es_compat.rs:1466-1485, 12232-12266).

Both then read XERJ autoindex's catalog where the node has one and the policy allows it
(`xerj_tools.tools._catalog`): formats and time ranges, example values and ready queries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from typing import Any

from .._exceptions import EngineError
from .._http._models import HttpRequest
from .._message._format import invalid
from .._problems import Problem
from ._catalog import describe_with_catalog, list_with_catalog
from ._limits import Limit
from ._listing import RESOLVE_ALL, alias_targets, aliases_by_index, names_only, streams_in
from ._mappings import Field, fields_of
from ._paths import index_problem, segment
from ._tool import Advice, IndexPolicy, PolicyTraits, Reads, Received, Tool, json_object

__all__ = ["DESCRIBE_INDEX", "LIST_INDICES", "globbable"]

MAX_INDICES = 150  # indices listed in one answer; `pattern` narrows the rest
MAX_FIELD_CHARS = 5_000  # characters of field paths in one description; `from`/`prefix` page on
_RULE = (
    "XERJ globs only `*`, `prefix*` and `*suffix` (es_compat.rs:16552-16563 glob_match_simple); "
    "a `*` anywhere else is compared literally"
)


def globbable(part: str) -> bool:
    """Whether XERJ globs (or matches exactly) this one name of an index expression."""
    stars = part.count("*")
    return stars == 0 or (stars == 1 and (part[0] == "*" or part[-1] == "*"))


def _match(pattern: str, name: str) -> bool:
    # es_compat.rs:16552-16563 `glob_match_simple`
    if pattern in ("*", "_all"):
        return True
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return name.endswith(pattern[1:])
    return pattern == name


def _list_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        return
    if (problem := index_problem(pattern, "$.pattern")) is not None:
        yield problem
        return
    for i, part in enumerate(pattern.split(",")):
        if part.startswith("-") and i > 0:
            yield Problem(
                "$.pattern",
                f"{part!r}: XERJ has no `-` exclusion here (it reads {part!r} as an index name); "
                "list with the pattern alone and leave the names out yourself",
            )
            return
        if not globbable(part):
            prefix = part.split("*")[0]
            yield Problem(
                "$.pattern",
                f"{part!r} cannot be globbed: {_RULE}. List with {prefix + '*' if prefix else '*'!r} "
                "and pick the names, then search those names (or a pattern of that form)",
            )


def list_indices(args: Mapping[str, Any]) -> HttpRequest:
    # Always the pattern route: `*` lists every index there as `/_cat/indices` does (es_compat.rs:437).
    pattern = args.get("pattern") or "*"
    if args.get("counts") is False:  # names and aliases only: the cheap listing (`_listing`)
        return replace(RESOLVE_ALL, reading={"names_only": pattern})
    path = f"/_cat/indices/{segment(pattern, keep=',*', path='$.pattern')}"
    return HttpRequest("GET", path, reading={"pattern": pattern})


def _read_listing(received: Received) -> dict[str, Any]:
    reply = received.reply
    if (pattern := received.request.reading.get("names_only")) is not None:
        return names_only(reply, str(pattern), _match)
    if isinstance(reply.data, (dict, list)):
        raise invalid(reply, "the text table of `_cat/indices`")
    rows = []
    lines = reply.body.decode("utf-8", "replace").splitlines()
    for line in lines:
        columns = line.split()
        # health status index uuid pri rep docs.count docs.deleted store.size … (es_compat.rs:459-468)
        if len(columns) >= 7 and columns[0] in ("green", "yellow", "red"):
            docs = int(columns[6]) if columns[6].isdigit() else None
            rows.append({"name": columns[2], "docs": docs})
    if not rows and any(line.strip() for line in lines):
        # XERJ answers an empty body when nothing matches (es_compat.rs:471-476): text that
        # holds no row is something in between (a proxy's page), not an empty listing
        raise invalid(reply, "the text table of `_cat/indices`")
    return {"ok": True, "indices": rows, "_pattern": received.request.reading.get("pattern", "*")}


def _after_listing(
    arguments: Mapping[str, Any], payload: dict[str, Any], policy: IndexPolicy
) -> Reads:
    """The aliases and data streams (one follow-up read), then only what the policy allows,
    then the cap."""
    pattern = str(payload.pop("_pattern", "*"))
    # the cheap listing's own `_resolve` answer (`counts: false`), or one more read
    outcome = payload.pop("_resolved", None)
    counted = outcome is None
    if outcome is None:
        outcome, _ = yield RESOLVE_ALL
    docs = {r["name"]: r.get("docs") for r in payload["indices"]}
    rows = [r for r in payload["indices"] if policy.allows_index(r["name"])]
    aliases = aliases_by_index(outcome)
    targets = alias_targets(outcome)
    parts = [p for p in pattern.split(",") if p]
    streams = {
        name: behind
        for name, behind in streams_in(outcome).items()
        if policy.allows_index(name) and any(_match(p, name) for p in parts)
    }
    for name, behind in streams.items():
        row: dict[str, Any] = {"name": name, "data_stream": True, "indices": behind}
        if counted:
            counts = [docs.get(b) for b in behind]
            row["docs"] = sum(c for c in counts if c is not None) if docs else None
        rows.append(row)

    def shown(alias: str) -> bool:
        behind = targets.get(alias, [""])
        return (
            policy.allows_index(alias)
            and alias not in streams
            and all(policy.allows_index(t) for t in behind)
        )

    out: dict[str, Any] = {"ok": True, "count": len(rows), "indices": []}
    for row in sorted(rows, key=lambda r: r["name"])[:MAX_INDICES]:
        entry = dict(row)
        if aliases and (names := [a for a in aliases.get(row["name"], ()) if shown(a)]):
            entry["aliases"] = sorted(names)
        out["indices"].append(entry)
    notes = []
    if len(rows) > MAX_INDICES:
        out["truncated"] = {"shown": MAX_INDICES, "of": len(rows)}
        notes.append(
            f"the first {MAX_INDICES} of {len(rows)} by name; pass `pattern` (e.g. 'logs-*') to see others"
        )
    notes += [f"no index is named {name!r}" for name in payload.get("missing", ())]
    if aliases is None:
        notes.append(
            "the aliases could not be read (GET /_resolve/index/* failed); names and counts are complete"
        )
    if notes:
        out["notes"] = notes
    # XERJ autoindex's catalog, where the node has one: formats, files, time range (`_catalog`)
    return (yield from list_with_catalog(out, policy, outcome))


_DISCOVERY = PolicyTraits(
    index_args=("index",), namespace_args=(), caps={}, writes=False, queries=False
)

LIST_INDICES = Tool(
    name="xerj_list_indices",
    build=list_indices,
    title="List the indices",
    read=_read_listing,
    limits=(Limit(problems=_list_problems, kind="list indices"),),
    # each listed name is held to the policy instead (`after`)
    traits=replace(_DISCOVERY, index_args=(), listed_args=("pattern",)),
    path="/_cat/indices/{pattern}",
    advice=Advice(
        too_large=lambda _: "Pass a narrower `pattern`, e.g. 'logs-2026*'.",
        # `_cat/indices/{pattern}` compares index names only (es_compat.rs:424-429)
        index_not_found=(
            "`pattern` takes index names and patterns only: an alias or data stream is not "
            "one (it is listed beside its indices, or as a data stream); list without it"
        ),
    ),
    origin="first-party",
    after=_after_listing,
)


def _describe_problems(args: Mapping[str, Any]) -> Iterator[Problem]:
    index = args.get("index")
    if (problem := index_problem(index)) is not None:
        yield problem
    start = args.get("from")
    if isinstance(start, (int, float)) and not isinstance(start, bool) and start < 0:
        yield Problem("$.from", f"must be 0 or more, got {start}")
    prefix = args.get("prefix")
    if isinstance(prefix, str) and len(prefix) > 255:
        yield Problem("$.prefix", f"is too long ({len(prefix)} characters)")


def describe_index(args: Mapping[str, Any]) -> HttpRequest:
    index = segment(args["index"], keep=",*", path="$.index")
    reading = {"prefix": args.get("prefix") or "", "from": int(args.get("from") or 0)}
    return HttpRequest("GET", f"/{index}/_mapping", reading=reading)


_NUMERIC = frozenset(
    "long integer short byte double float half_float scaled_float unsigned_long".split()
)
_GROUP = {
    "text": "text", "match_only_text": "text", "keyword": "keyword", "constant_keyword": "keyword",
    "wildcard": "keyword", "date": "date", "date_nanos": "date", "boolean": "boolean",
    "dense_vector": "vector", "semantic_text": "semantic_text", "nested": "nested", "object": "object",
}  # fmt: skip
_HOW = (
    "text: match / match_phrase (analysed: not for term); keyword: term / terms, aggs, sort; "
    "numeric and date: range, sort, aggs; object members by dotted path; nested: a `nested` "
    "query on its path"
)


def _how(served: Collection[str] | None) -> str:
    """How to query each kind of field, naming only the tools served (all when not known)."""

    def has(tool: str) -> bool:
        return served is None or tool in served

    said = [_HOW]
    if has("xerj_vector_search"):
        said.append("vector: xerj_vector_search (query_vector of `dims` numbers)")
    semantic = ["xerj_semantic_search"] if has("xerj_semantic_search") else []
    if has("xerj_hybrid_search"):
        semantic.append("semantic sub-queries of xerj_hybrid_search")
    if semantic:
        said.append("semantic_text: " + ", and ".join(semantic))
    return "; ".join(said)


def _group(fields: Mapping[str, Field]) -> dict[str, Any]:
    groups: dict[str, Any] = {}
    for path, field in fields.items():
        kind = field["type"]
        group = "numeric" if kind in _NUMERIC else _GROUP.get(kind, "other")
        if group == "vector":
            groups.setdefault(group, {})[path] = {"dims": field.get("dims")}
        elif group in ("numeric", "other"):
            groups.setdefault(group, {})[path] = kind
        else:
            groups.setdefault(group, []).append(path)
    return groups


def _read_mapping(received: Received) -> dict[str, Any]:
    request, data = received.request, json_object(received)
    name = request.path.strip("/").split("/")[0]
    per_index = fields_of(data)
    if not per_index:
        # es_compat.rs:1469-1473: an exact name that is no index is kept, then skipped: 200 {}
        from urllib.parse import unquote

        raise EngineError(
            f"no index or alias named {unquote(name)!r}", code="index_not_found", status=404,
        )  # fmt: skip
    fields: dict[str, Field] = {}
    for per in per_index.values():
        for path, field in per.items():
            fields.setdefault(path, field)
    prefix, start = request.reading.get("prefix", ""), request.reading.get("from", 0)
    wanted = sorted(p for p in fields if p.startswith(prefix))
    shown: list[str] = []
    size = 0
    for path in wanted[start:]:
        size += len(path) + 12
        if size > MAX_FIELD_CHARS and shown:
            break
        shown.append(path)
    out: dict[str, Any] = {"ok": True, "index": sorted(per_index), "field_count": len(fields)}
    out["fields"] = _group({p: fields[p] for p in shown})
    semantic = sorted(p for p, f in fields.items() if f["type"] == "semantic_text")
    # only the vectors' names sorted: sorting (name, field) pairs of every field is one C call
    # that holds the GIL five times longer, while `AsyncDispatcher`'s loop waits (150k fields)
    vector_names = sorted(p for p, f in fields.items() if f["type"] == "dense_vector")
    vectors = {p: fields[p].get("dims") for p in vector_names}
    search_with = {
        "xerj_semantic_search": semantic[:20],
        "xerj_vector_search": dict(list(vectors.items())[:20]),
    }
    served = received.served
    out["search_with"] = {k: v for k, v in search_with.items() if served is None or k in served}
    out["how"] = _how(served)
    if start + len(shown) < len(wanted) or start > 0 or prefix:
        out["truncated"] = {
            "shown": len(shown), "from": start, "of": len(wanted),
            "prefix": prefix or None,
        }  # fmt: skip
        if start + len(shown) < len(wanted):
            out["next"] = {"from": start + len(shown), **({"prefix": prefix} if prefix else {})}
            out["notes"] = [
                "call again with `next` for the rest, or with `prefix` set to one of the "
                "objects in `objects` (their field counts)"
            ]
            tops = Counter(path.split(".")[0] for path in wanted)  # the most fields first
            out["objects"] = dict([(k, v) for k, v in tops.most_common() if v > 1][:30])
    return out


DESCRIBE_INDEX = Tool(
    name="xerj_describe_index",
    build=describe_index,
    title="Describe an index's fields",
    read=_read_mapping,
    limits=(Limit(problems=_describe_problems, kind="describe index"),),
    traits=_DISCOVERY,
    path="/{index}/_mapping",
    advice=Advice(
        too_large=lambda _: "Describe fewer fields: pass `prefix` (an object's path) or `from`."
    ),
    origin="first-party",
    after=describe_with_catalog,  # the catalog's examples and ready queries (`_catalog`)
)
