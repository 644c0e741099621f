"""What the model reads of each hit's `_source`: what its `source` asked for, the way XERJ's own
filter reads it, and no embedding it did not name exactly.

XERJ does not always filter: a `knn` or `semantic` search returns from `search_inner` before the
only `apply_source_filter` call (engine/crates/xerj-engine/src/index.rs:6690-6726, 6786-6787
return ahead of 9930, at e6e8e6a), and a hybrid's vector sub-queries do the same (index.rs:5364).
So the request's `_source` is applied here to every hit, again: where XERJ already applied it
this changes nothing (the filter is idempotent), where it did not the model still gets what it
asked for.

Embeddings are recognised by what they are, not by their name, and left out unless `source`
names them exactly (a pattern such as `emb*` does not bring 1536 floats back):

- XERJ's own companions of a semantic_text field, `<field>_vector` and `<field>_vector_chunks`
  holding numbers, are dropped without a trace (the field itself is there, as its text);
- a field the request knows holds embeddings (`HttpRequest.vectors`: the field a kNN search
  ran on, and the dense_vector fields of the index's mapping when the dispatcher has it cached)
  is replaced by a marker, ``"embedding": "<1536 numbers omitted>"``, whatever its length;
- any other array of more than `LONG_ARRAY` numbers (or a list of such arrays, or of lists of
  them), at any depth of `_source` down to `_NEST` levels, is replaced by the same marker. An
  array counts as numbers when items spread over it are (`_numbers`): a null in it (a missing
  component, or a NaN read as null) or a stray string at one end does not hide an embedding.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._http._models import HttpRequest

__all__ = ["LONG_ARRAY", "VECTOR_SUFFIXES", "SourceView", "omit_embeddings", "source_view"]

# XERJ keeps each semantic_text field's embedding inside `_source` as `<field>_vector`, and a
# document longer than one chunk also its passage embeddings as `<field>_vector_chunks`
# (index.rs:5077, 5277-5289 at e6e8e6a). Its `_source` filter cannot drop them by pattern: on
# the general path a `*` is a trailing wildcard only (index.rs:15826-15832 `field_matches`,
# used by `filter_object` when no pattern has a dot), so `*_vector` matches no field; and kNN
# and `semantic` searches return before any `_source` filter runs (index.rs:6690-6726,
# 6786-6787 return from `search_inner` ahead of `apply_source_filter` at 9930). So requests name
# exact fields, where a search names them (`tools._search._vector_fields`), and those that still
# arrive are dropped while the answer is decoded (here, and `_hits.decode_search`).
VECTOR_SUFFIXES = ("_vector", "_vector_chunks")

LONG_ARRAY = 64
"""An array of more than this many numbers is read as an embedding and left out. 64 is above
any list of figures a document usually holds by hand (ratings, coordinates, a week of counts)
and below every embedding model's size (the smallest in common use have 128 or 256 dims; XERJ's
own local embedder 384, docs/examples 4 with a mapping that says so, which `vectors` covers)."""

_NEST = 100  # levels of objects inside `_source` searched for long arrays of numbers (as deep as
# a message keeps values: deeper ones are cut at 100 levels)
_DROP = object()


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


# the names kept with their embeddings; the includes' exact names and prefixes; the excludes'
_Flat = tuple[frozenset[str], frozenset[str], tuple[str, ...], frozenset[str], tuple[str, ...]]


@dataclass(frozen=True)
class SourceView:
    """The request's `_source`, read as XERJ reads it (es_compat.rs:4556-4607 at e6e8e6a)."""

    keep: bool = True  # False: `_source: false`, no `_source` at all
    includes: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    vectors: frozenset[str] = frozenset()  # fields known to hold embeddings (`HttpRequest.vectors`)

    def apply(self, source: Mapping[str, Any]) -> dict[str, Any]:
        flat = self._flat
        named = frozenset(self.includes)
        if flat is None:  # a dotted pattern: paths are globbed per segment
            return omit_embeddings(
                _filter(source, self.includes, self.excludes), named, self.vectors
            )
        _, in_exact, in_prefixes, out_exact, out_prefixes = flat
        if not (out_exact or out_prefixes) and in_exact.issuperset(source):
            return dict(source)  # every field named exactly (XERJ applied the filter): all stay
        everything = not self.includes
        # One pass, each key tested with C-level set and prefix look-ups (`_field_matches` per
        # pattern, as `_filter` does, cost a hit of 10 fields ~100 Python calls).
        kept = {
            k: v for k, v in source.items()
            if (everything or k in in_exact or k.startswith(in_prefixes))
            and not (k in out_exact or k.startswith(out_prefixes))
        }  # fmt: skip
        return omit_embeddings(kept, named, self.vectors)

    def omit(self, source: dict[str, Any]) -> dict[str, Any]:
        """`source` without its embeddings (no filter): the same dict when it holds none."""
        return omit_embeddings(source, frozenset(self.includes), self.vectors)

    @functools.cached_property
    def _flat(self) -> _Flat | None:
        """With no dotted pattern: the names kept with their embeddings, then the exact names
        and the prefixes (a pattern's text before its trailing `*`) of includes and excludes."""
        if any("." in p for p in (*self.includes, *self.excludes)):
            return None

        def split(patterns: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
            exact = frozenset(p for p in patterns if not p.endswith("*"))
            return exact, tuple(p[:-1] for p in patterns if p.endswith("*"))

        return (frozenset(self.includes), *split(self.includes), *split(self.excludes))


def source_view(request: HttpRequest) -> SourceView:
    spec = (request.body or {}).get("_source")
    vectors = frozenset(request.vectors)
    if type(spec) is list and all(type(s) is str for s in spec):
        return _named(tuple(spec), vectors)  # the usual `source: [fields]`, read once per list
    if spec is False or spec == "false":
        return SourceView(keep=False)
    if isinstance(spec, str) and spec != "true":
        return SourceView(includes=tuple(s.strip() for s in spec.split(",")), vectors=vectors)
    if isinstance(spec, list):
        return SourceView(includes=_strings(spec), vectors=vectors)
    if isinstance(spec, Mapping):
        return SourceView(
            includes=_strings(spec.get("includes", spec.get("include"))),
            excludes=_strings(spec.get("excludes", spec.get("exclude"))),
            vectors=vectors,
        )
    return SourceView(vectors=vectors)


@functools.lru_cache(maxsize=256)
def _named(fields: tuple[str, ...], vectors: frozenset[str]) -> SourceView:
    return SourceView(includes=fields, vectors=vectors)


def _numbers(value: list[Any]) -> bool:
    """Whether `value` reads as an embedding's numbers: of eight items spread over it (its
    first and last among them; all of a shorter list), all but two at most are numbers or
    null (a NaN or Infinity XERJ wrote is read as null), and one at least is a number. A
    missing component, or a stray string at either end, does not hide an embedding; checking
    all 1536 of every hit would cost more than it tells."""
    size = len(value)
    picks = value if size <= 8 else [value[(size - 1) * i // 7] for i in range(8)]
    numbers = nulls = 0
    for item in picks:
        if type(item) is float or type(item) is int:
            numbers += 1
        elif item is None:
            nulls += 1
    return numbers > 0 and numbers + nulls >= len(picks) - 2


_LIST_LEVELS = 4  # lists of lists of numbers looked into: a list of vectors, and deeper


def _marker(key: str, value: list[Any], known: bool) -> Any:
    """What replaces the list `value`: a marker, `_DROP`, or `value` itself."""
    if key.endswith(VECTOR_SUFFIXES) and _is_vector(value):
        return _DROP  # XERJ's semantic_text companion: the field itself is there, as its text
    if type(value[0]) is list:  # a list of vectors (or of lists of them)
        inner, levels = value[0], 1
        while inner and type(inner[0]) is list and levels < _LIST_LEVELS:
            inner, levels = inner[0], levels + 1
        if inner and (known or len(inner) > LONG_ARRAY) and _numbers(inner):
            nested = "" if levels == 1 else "lists of "
            return f"<{len(value)} {nested}vectors of {len(inner)} numbers omitted>"
        return value
    if (known or len(value) > LONG_ARRAY) and _numbers(value):
        return f"<{len(value)} numbers omitted>"
    return value


def omit_embeddings(
    source: dict[str, Any],
    named: frozenset[str] = frozenset(),
    vectors: frozenset[str] = frozenset(),
    prefix: str = "",
    depth: int = 0,
) -> dict[str, Any]:
    """`source` with its embeddings left out (see the module's docstring), unless `named` holds
    their path exactly. The same dict when nothing is left out; a copy otherwise (never changed
    in place: a reply's decoded JSON may be read again)."""
    out: dict[str, Any] | None = None
    for key, value in source.items():
        kind = type(value)
        if kind is list:
            if not value:
                continue
            path = prefix + key
            if path in named:
                continue
            if type(value[0]) is dict:
                if depth >= _NEST:
                    continue
                new: Any = [
                    omit_embeddings(v, named, vectors, path + ".", depth + 1)
                    if type(v) is dict else v
                    for v in value
                ]  # fmt: skip
                if all(a is b for a, b in zip(new, value, strict=True)):
                    continue
            else:
                new = _marker(key, value, path in vectors)
                if new is value:
                    continue
        elif kind is dict and depth < _NEST:
            path = prefix + key
            if path in named:
                continue
            new = omit_embeddings(value, named, vectors, path + ".", depth + 1)
            if new is value:
                continue
        else:
            continue
        if out is None:
            out = dict(source)
        if new is _DROP:
            del out[key]
        else:
            out[key] = new
    return source if out is None else out


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list) and bool(value) and isinstance(value[0], (int, float, list, dict))
    )


def _filter(
    source: Mapping[str, Any], includes: tuple[str, ...], excludes: tuple[str, ...]
) -> dict[str, Any]:
    # index.rs:15672-15832 `apply_source_filter` / `filter_object`: with no dotted pattern a
    # `*` is a trailing wildcard only (`field_matches`, 15826-15832), and an empty include list
    # keeps everything (15717-15721); with one, paths are globbed per segment.
    if not any("." in p for p in (*includes, *excludes)):
        return {
            k: v for k, v in source.items()
            if (not includes or any(_field_matches(k, p) for p in includes))
            and not any(_field_matches(k, p) for p in excludes)
        }  # fmt: skip
    out = _paths(source, "", includes, excludes)
    return out if isinstance(out, dict) else {}


def _field_matches(name: str, pattern: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def _glob(pattern: str, text: str) -> bool:
    """Whether `text` matches `pattern`, as XERJ's `glob_match` reads it (index.rs:15737-15771
    at e6e8e6a): `*` matches any run of characters but `.`, every other character itself.

    XERJ walks the pattern by backtracking, which grows exponentially with the number of `*`
    (`source_pattern_problems` keeps that number small in what is sent). Here the same language
    is matched in linear time: a `*` never crosses a `.`, so the dots of pattern and text pair up
    one to one, and each segment between them is matched alone, its pieces between `*` found
    leftmost in turn (with no other wildcard the leftmost place is never worse than a later one).
    """
    parts = pattern.split(".")
    segments = text.split(".")
    return len(parts) == len(segments) and all(map(_segment, parts, segments))


def _segment(pattern: str, text: str) -> bool:
    if "*" not in pattern:
        return pattern == text
    pieces = pattern.split("*")
    head, tail = pieces[0], pieces[-1]
    end = len(text) - len(tail)
    if end < len(head) or not (text.startswith(head) and text.endswith(tail)):
        return False
    at = len(head)
    for piece in pieces[1:-1]:
        if piece:
            found = text.find(piece, at, end)
            if found < 0:
                return False
            at = found + len(piece)
    return True


def _path_matches(path: str, patterns: tuple[str, ...]) -> bool:
    # index.rs:15772-15778
    for p in patterns:
        if "*" in p:
            if _glob(p, path) or (p.endswith(".*") and path.startswith(p[:-2])):
                return True
        elif path == p or path.startswith(p + "."):
            return True
    return False


def _paths(value: Any, prefix: str, includes: tuple[str, ...], excludes: tuple[str, ...]) -> Any:
    # index.rs:15781-15822 `collect_and_filter`: an emptied object and a null leaf disappear.
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        path = f"{prefix}.{k}" if prefix else k
        wanted = (
            not includes
            or _path_matches(path, includes)
            or any(i.startswith(path + ".") for i in includes)
        )
        if wanted and not _path_matches(path, excludes):
            kept = _paths(v, path, includes, excludes)
            if kept is not None:
                out[k] = kept
    return None if not out and prefix else out
