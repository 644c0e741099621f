"""`query_string` as XERJ lowers it into a query tree, and `wildcard` matching, for the stand-in.

Citations are `engine/crates/xerj-query/src/parser.rs` and `engine/crates/xerj-engine/src/
index.rs` at e6e8e6a (see ``CONTRACT.md``). The lowered tree is made of clauses the stand-in
already scores (`match`, `match_phrase`, `wildcard`, `range`, `bool`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ._numbers import number_or_text

__all__ = ["lower_query_string", "wildcard_match"]

Tok = tuple[str, Any]  # (kind, payload): term, phrase, range, or, and, not, must, (, )


class QueryStringError(ValueError):
    """A `query_string` XERJ refuses as a parse error (its malformed range syntax)."""


def wildcard_match(text: str, pattern: str) -> bool:
    """`wildcard_match` (index.rs:22659-22677): `*` any run, `?` one character, the rest
    literal; here without backtracking (one pass, remembering the last `*`)."""
    t = p = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] in ("?", text[t]) and pattern[p] != "*":
            t, p = t + 1, p + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, t, p + 1
        elif star >= 0:
            mark += 1
            t, p = mark, star + 1
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def _bound(raw: str) -> Any:
    # parser.rs:1165-1187 `qs_range_bound`: quotes stripped, `*` or nothing open, an integer or a
    # finite float as a number, anything else a string.
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return None if text in ("", "*") else number_or_text(text)


def _bracket(q: str, field: str, start: int) -> tuple[Tok, int]:
    """`qs_parse_bracket_range` (parser.rs:1210-1262): `[a TO b]`, `{a TO b}`, mixed."""
    end = start + 1
    while end < len(q) and q[end] not in "]}":
        end += 1
    if end >= len(q):
        raise QueryStringError(f"unterminated range in query_string: `{q[start:]}`")
    parts = q[start + 1 : end].split()
    if len(parts) != 3 or parts[1].upper() != "TO":
        raise QueryStringError(
            "malformed range in query_string: expected `[<lower> TO <upper>]`, got "
            f"`{q[start : end + 1]}`"
        )
    low, high = _bound(parts[0]), _bound(parts[2])
    if low is None and high is None:
        raise QueryStringError("query_string range must have at least one non-`*` bound")
    spec: dict[str, Any] = {}
    if low is not None:
        spec["gte" if q[start] == "[" else "gt"] = low
    if high is not None:
        spec["lte" if q[end] == "]" else "lt"] = high
    return ("range", (field, spec)), end + 1


def _compare(q: str, field: str, rest: str, i: int) -> tuple[Tok, int]:
    """`qs_parse_cmp_range` (parser.rs:1270-1312): `>N`, `>=N`, `<N`, `<=N`."""
    op = next(o for o in (">=", "<=", ">", "<") if rest.startswith(o))
    value = rest[len(op) :]
    while i < len(q) and not (q[i].isspace() or q[i] in "()"):
        value, i = value + q[i], i + 1
    bound = _bound(value)
    if bound is None:
        raise QueryStringError(f"query_string range `{field}:{op}` is missing a value")
    return ("range", (field, {{">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[op]: bound})), i


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text).removesuffix("\\")


def _tokens(q: str) -> list[Tok] | None:
    """`tokenize_query_string` (parser.rs:1317-1468); None where XERJ gives up lowering (an
    unterminated quote)."""
    out: list[Tok] = []
    i = 0
    single = {"(": "(", ")": ")", "+": "must", "-": "not"}
    words = {"OR": "or", "or": "or", "||": "or", "AND": "and", "and": "and", "&&": "and"}
    words |= {"NOT": "not", "not": "not", "!": "not"}
    while i < len(q):
        c = q[i]
        if c.isspace():
            i += 1
        elif c in single:
            out.append((single[c], None))
            i += 1
        elif c == '"':
            end = q.find('"', i + 1)
            if end < 0:
                return None
            out.append(("phrase", ("", q[i + 1 : end])))
            i = end + 1
        elif c in "[{":
            tok, i = _bracket(q, "", i)
            out.append(tok)
        else:
            start = i
            while i < len(q) and not (q[i].isspace() or q[i] in "()"):
                i += 1
            word = q[start:i]
            # `field:rest`, or a bare word (which cannot start with a quote or a bracket: those
            # were read above) in the default field.
            field, rest = word.split(":", 1) if ":" in word else ("", word)
            if word in words:
                out.append((words[word], None))
            elif rest.startswith('"'):
                if len(rest) > 1 and rest.endswith('"'):
                    out.append(("phrase", (field, rest[1:-1])))
                else:
                    end = q.find('"', i)
                    if end < 0:
                        return None
                    out.append(("phrase", (field, f"{rest[1:]} {q[i:end]}")))
                    i = end + 1
            elif rest.startswith(("[", "{")):
                tok, i = _bracket(q, field, start + len(field) + 1)
                out.append(tok)
            elif rest.startswith((">", "<")):
                tok, i = _compare(q, field, rest, i)
                out.append(tok)
            else:
                out.append(("term", (field, _unescape(rest))))
    return out


class _Parser:
    """`parse_qs_or` / `parse_qs_and` / `parse_qs_unary` (parser.rs:1471-1660)."""

    def __init__(self, toks: list[Tok], field: str | None, operator: str | None) -> None:
        self.toks, self.pos, self.field, self.operator = toks, 0, field, operator

    def peek(self) -> str | None:
        return self.toks[self.pos][0] if self.pos < len(self.toks) else None

    def either(self, operator: str | None) -> Any:
        left = self.both(operator)
        if left is None:
            return None
        while self.peek() == "or":
            self.pos += 1
            right = self.both(operator)
            if right is None:
                return None
            left = {"bool": {"should": [left, right]}}
        if operator in (None, "or"):
            while self.peek() not in (None, ")", "or", "and"):
                right = self.both(operator)
                if right is None:
                    return None
                left = {"bool": {"should": [left, right]}}
        return left

    def both(self, operator: str | None) -> Any:
        clauses: list[Any] = []
        negated: list[Any] = []
        explicit = False
        while True:
            forced = False
            while self.peek() in ("must", "not"):
                forced = forced or self.peek() == "not"
                self.pos += 1
            node = self.unary()
            if node is None:
                return None
            (negated if forced else clauses).append(node)
            following = self.peek()
            if following is None or following in ("or", ")"):
                break
            if following == "and":
                explicit = True
                self.pos += 1
                continue
            if operator == "and" or explicit:
                continue
            break
        if len(clauses) == 1 and not negated:
            return clauses[0]
        if not explicit and clauses and operator != "and":
            return {"bool": {"should": clauses, "must_not": negated}}
        return {"bool": {"must": clauses, "must_not": negated}}

    def unary(self) -> Any:
        if self.pos >= len(self.toks):
            return None
        kind, payload = self.toks[self.pos]
        self.pos += 1
        if kind == "(":
            node = self.either(None)
            if node is None or self.peek() != ")":
                return None
            self.pos += 1
            return node
        if kind not in ("term", "phrase", "range"):
            return None
        field, value = payload
        field = field or self.field or "*"
        if kind == "range":
            return {"range": {field: value}}
        if kind == "phrase":
            return {"match_phrase": {field: value}}
        if "*" in value or "?" in value:
            return {"wildcard": {field: value.lower()}}
        return {"match": {field: value}}


def lower_query_string(body: Mapping[str, Any], invalid: Callable[[str], Exception]) -> Any:
    """The query tree `query_string` stands for (parser.rs:1057-1160): `query` lowered with
    `default_field` (else every field) and `default_operator` (OR); where XERJ cannot lower it
    (an unterminated quote, a stray operator), the text matched over the default field."""
    query = body.get("query")
    if not isinstance(query, str):
        raise invalid("`query` must be a string")
    field = body.get("default_field") if isinstance(body.get("default_field"), str) else None
    op = body.get("default_operator")
    operator = op.lower() if isinstance(op, str) and op.lower() in ("and", "or") else None
    try:
        toks = _tokens(query) or []  # None (XERJ gives up) lowers as nothing does
        ranges = [p for k, p in toks if k == "range"]
        if any(not f for f, _ in ranges) and (field is None or field in ("", "*")):
            raise QueryStringError(
                "query_string range requires an explicit field (e.g. `price:>10`) or a "
                "non-wildcard default_field"
            )
        parser = _Parser(toks, field, operator)
        lowered = parser.either(operator) if toks else None
        if ranges and (lowered is None or parser.pos < len(toks)):
            raise QueryStringError(f"failed to parse query_string with range syntax: `{query}`")
    except QueryStringError as exc:
        raise invalid(str(exc)) from None
    if lowered is not None and parser.pos == len(toks):
        return lowered
    return {"multi_match": {"query": query, "fields": [field or "*"]}}
