"""XERJ's own ES-compat YAML suite, replayed against the stand-in.

XERJ's CI runs ``engine/tests/es-compat-yaml`` with its runner ``src/main.rs`` and allows no
failure. This module reads that suite from a XERJ checkout, never from this repository: set
``XERJ_COMPAT_YAML_DIR`` to the ``es-compat-yaml`` directory (or its ``yaml`` folder), e.g.

    git -C <xerj> archive HEAD engine/tests/es-compat-yaml | tar -x -C /tmp/xerj-yaml
    XERJ_COMPAT_YAML_DIR=/tmp/xerj-yaml/engine/tests/es-compat-yaml \\
        .venv/bin/python -m pytest tests/contract/test_conformance.py
    XERJ_COMPAT_YAML_DIR=… .venv/bin/python tests/conformance.py          # the summary
    XERJ_COMPAT_YAML_DIR=… .venv/bin/python tests/conformance.py --write  # rewrite the list

What is replayed, and how, follows ``main.rs`` (cited by function): the steps of a case are the
file's ``setup`` then its own; ``match``/``contains``/``length``/``is_true``/``is_false``/
``gt``/``gte``/``lt``/``lte``/``close_to``/``set`` assert as ``execute_step`` does (with
``values_match``: a number matches ``{value: n}``, ``/re/`` is a regex, objects match as
subsets); a ``skip`` with ``awaits_fix``, a satisfied ``cluster_features`` or a bare ``version``
skips the case; any other answer that is neither 2xx, 404 nor 409 fails the case
(``execute_do``). A ``catch`` is checked as Elasticsearch's own YAML runner checks it (its
``DoSection``), where XERJ's runner only records the answer: ``bad_request`` 400,
``unauthorized`` 401, ``forbidden`` 403, ``missing`` 404, ``request_timeout`` 408, ``conflict``
409, ``unavailable`` 503, ``request`` any other 4xx or 5xx, ``/re/`` an error whose body matches.

**The feature filter.** A case is in scope when every request it makes is one the seven tools
make, or one that only sets up data:

- ``search`` (``xerj_search``, ``xerj_vector_search``, ``xerj_semantic_search``,
  ``xerj_hybrid_search``), whose body keys are among those the tools send (``query``, ``size``,
  ``from``, ``sort``, ``_source``, ``aggs``/``aggregations``, ``track_total_hits``, ``knn``) and
  whose only URL parameter is ``rest_total_hits_as_int`` (the tools send none;
  ``values_match`` reads ``{value: n}`` as ``n`` anyway);
- ``get`` (``xerj_get_document``) and ``cat.indices`` (``xerj_list_indices`` reads it);
- ``indices.create``, ``index``, ``bulk`` (``index``/``create``/``delete`` actions) and
  ``indices.refresh``, applied in process (the stand-in serves no write route; the tools make
  none but memory's, which the suite does not test).

Every other action (scroll, count, mappings, aliases, scripts, settings, …), search body key
(``fields``, ``collapse``, ``profile``, ``search_after``, …) or URL parameter puts the case out of
scope, with the first such feature as the reason. Query and aggregation types are not filtered:
``xerj_search`` sends the model's query and aggregations unchanged, so any type is in use. An
in-scope case either passes or is listed in ``tests/conformance_not_served.txt`` with the reason
the stand-in does not serve it.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from xerj_tools.testing import XerjStandIn

ENV = "XERJ_COMPAT_YAML_DIR"
NOT_SERVED = Path(__file__).with_name("conformance_not_served.txt")

_IN_PROCESS = {"indices.create", "index", "bulk", "indices.refresh"}
_OVER_HTTP = {"search", "get", "cat.indices"}
_BODY_KEYS = {"query", "size", "from", "sort", "_source", "aggs", "aggregations"}
_BODY_KEYS |= {"track_total_hits", "knn"}
_SEARCH_PARAMS = {"index", "body", "rest_total_hits_as_int"}
_IGNORED_DO_KEYS = {"catch", "headers", "warnings", "allowed_warnings"}
_IGNORED_DO_KEYS |= {"allowed_warnings_regex", "node_selector"}
_QUERY_TYPES_SERVED = {"match_all", "match", "match_phrase", "multi_match", "simple_query_string"}
_QUERY_TYPES_SERVED |= {"term", "terms", "range", "exists", "ids", "bool", "knn", "semantic"}
_QUERY_TYPES_SERVED |= {"hybrid", "constant_score", "wildcard", "query_string"}
_AGGS_SERVED = {"terms", "stats", "histogram", "avg", "min", "max", "sum", "value_count"}
_AGGS_SERVED |= {"date_histogram", "range", "filter", "filters", "composite", "global", "missing"}
_AGGS_SERVED |= {"extended_stats", "cardinality", "percentiles", "top_hits", "avg_bucket"}
_AGGS_SERVED |= {"max_bucket", "min_bucket", "sum_bucket", "stats_bucket"}
_MAPPING_TYPES_MODELLED = {"text", "keyword", "semantic_text", "dense_vector", "object", "boolean"}
_MAPPING_TYPES_MODELLED |= {"long", "integer", "short", "byte", "double", "float"}


@dataclass(frozen=True)
class Case:
    """One named test of a YAML file, with the file's `setup` steps before its own."""

    file: str
    name: str
    setup: tuple[Any, ...]
    steps: tuple[Any, ...]

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


def suite_dir() -> Path | None:
    """The `yaml` folder named by ``XERJ_COMPAT_YAML_DIR``, or None when it is unset."""
    value = os.environ.get(ENV)
    if not value:
        return None
    root = Path(value)
    return root / "yaml" if (root / "yaml").is_dir() else root


def load_cases(root: Path) -> list[Case]:
    """Every case of every ``*.yml`` under `root`, in file order (`main.rs` `run_file`)."""
    import yaml  # PyYAML: a dependency of the test extras' frameworks, needed only here

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when built: 10x faster

    class Loader(base):  # type: ignore[valid-type,misc]
        """serde_yaml reads `2016-01-01` as a string, not a date: so does this loader."""

    Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)
    cases = []
    for path in sorted(root.rglob("*.yml")):
        try:
            docs = list(yaml.load_all(path.read_text(), Loader=Loader))
        except yaml.YAMLError:
            continue  # `main.rs` counts an unparsable file as skipped
        setup: tuple[Any, ...] = ()
        named: list[tuple[str, list[Any]]] = []
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            if "setup" in doc:
                setup = tuple(doc["setup"] or ())
                continue
            named += [(k, v) for k, v in doc.items() if isinstance(k, str) and isinstance(v, list)]
        rel = path.relative_to(root).as_posix()
        cases += [Case(rel, name, setup, tuple(steps)) for name, steps in named]
    return cases


def _actions(case: Case) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for step in (*case.setup, *case.steps):
        if isinstance(step, Mapping) and isinstance(step.get("do"), Mapping):
            for action, params in step["do"].items():
                if action not in _IGNORED_DO_KEYS:
                    yield action, params if isinstance(params, Mapping) else {}


def out_of_scope(case: Case) -> str | None:
    """Why `case` is out of scope (the first feature the tools do not use), or None."""
    for action, params in _actions(case):
        if action not in _IN_PROCESS | _OVER_HTTP:
            return f"action `{action}`"
        if action == "bulk":
            for item in _bulk_items(params.get("body")):
                if isinstance(item, Mapping) and "update" in item:
                    return "bulk `update`"
        if action != "search":
            continue
        if extra := sorted(set(params) - _SEARCH_PARAMS):
            return f"search URL parameter `{extra[0]}`"
        body = _body(params.get("body"))
        if not isinstance(body, Mapping):
            return "search body that is not an object"
        if extra := sorted(set(body) - _BODY_KEYS):
            return f"search body key `{extra[0]}`"
    return None


def _body(raw: Any) -> Any:
    if isinstance(raw, str) and raw.lstrip().startswith(("{", "[")):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return {} if raw is None else raw


def _bulk_items(body: Any) -> list[Any]:
    """A bulk body's lines, decoded: a YAML list of objects or JSON strings, or NDJSON text."""
    lines = body if isinstance(body, list) else str(body or "").splitlines()
    return [json.loads(x) if isinstance(x, str) else x for x in lines if x not in ("", None)]


# ── Running a case ────────────────────────────────────────────────────────────


class Failed(Exception):
    """A case failed: the message says at which step and why."""


class Skipped(Exception):
    """A `skip` directive `main.rs` honours."""


# Elasticsearch's YAML runner's named catches and their statuses (`DoSection`); `request` is
# any other 4xx or 5xx (503 included).
_NAMED_CATCHES = {
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "missing": 404,
    "request_timeout": 408,
    "conflict": 409,
    "unavailable": 503,
}
_NOT_REQUEST = frozenset([400, 401, 403, 404, 408, 409])
UNCAUGHT = "a success where an error is expected:"


class _Run:
    def __init__(self, stand_in: XerjStandIn, client: httpx2.Client) -> None:
        self.stand_in, self.client = stand_in, client
        self.checked = 0  # expected errors whose status was checked
        self.last: Any = None
        self.vars: dict[str, str] = {}

    def step(self, step: Any) -> None:
        if not isinstance(step, Mapping):
            return
        if isinstance(step.get("set"), Mapping):
            for path, name in step["set"].items():
                self.vars[str(name)] = _var_text(self._path(str(path)))
        elif isinstance(step.get("do"), Mapping):
            self.do(step["do"])
        elif "skip" in step:
            _skip(step["skip"])
        else:
            self.assertion(step)

    def do(self, spec: Mapping[str, Any]) -> None:
        catch = spec.get("catch")
        for action, params in spec.items():
            if action in _IGNORED_DO_KEYS:
                continue
            params = params if isinstance(params, Mapping) else {}
            if action in _IN_PROCESS:
                self.last = self.write(action, params)
                return
            status, self.last = self.request(action, params)
            if catch is not None:
                self.caught(str(catch), action, status)
            elif not 200 <= status < 300 and status not in (404, 409):
                raise Failed(f"{action} → {status} {json.dumps(self.last)[:200]}")
            return

    def caught(self, catch: str, action: str, status: int) -> None:
        """An expected error, checked as Elasticsearch's YAML runner checks it (`DoSection`):
        a named kind is its status, `request` any other 4xx or 5xx, `/re/` an error whose body
        matches. (XERJ's own runner, `main.rs` `execute_do`, checks none of them.)"""
        text = json.dumps(self.last)
        if status < 400 and (catch in _NAMED_CATCHES or catch == "request" or catch.startswith("/")):
            raise Failed(f"{UNCAUGHT} {action} → {status}, where the case expects `catch: {catch}`")
        if catch.startswith("/") and catch.endswith("/") and len(catch) > 1:
            if status < 400 or not re.search(catch[1:-1].strip(), text, re.S | re.X):
                raise Failed(f"{action} → {status}, expected an error matching {catch}: {text[:200]}")
        elif catch == "request":
            if status < 400 or status in _NOT_REQUEST:
                raise Failed(f"{action} → {status}, expected another 4xx/5xx error: {text[:200]}")
        elif catch in _NAMED_CATCHES:
            if status != _NAMED_CATCHES[catch]:
                expected = _NAMED_CATCHES[catch]
                raise Failed(f"{action} → {status}, expected {expected} ({catch}): {text[:200]}")
        else:
            return  # `param`: a client-side refusal, never sent by a REST client (not checked)
        self.checked += 1

    def write(self, action: str, params: Mapping[str, Any]) -> Any:
        index = str(params.get("index", ""))
        if action == "indices.create":
            body = _body(params.get("body")) or {}
            if not isinstance(body, Mapping):
                raise Failed("indices.create: a body the in-process loader cannot read")
            props = dict(_properties(body.get("mappings")))
            semantic = tuple(f for f, m in props.items() if m.get("type") == "semantic_text")
            self.stand_in.add_documents(index, {}, semantic_fields=semantic)
            return {"acknowledged": True, "index": index}
        if action == "index":
            doc_id = str(params.get("id", uuid.uuid4().hex))
            self._add(index, doc_id, self._substitute(_body(params.get("body"))))
            return {"_index": index, "_id": doc_id, "result": "created", "_version": 1}
        if action == "bulk":
            return self._bulk(index, params.get("body"))
        return {"_shards": {"failed": 0}}  # indices.refresh: the stand-in is always current

    def _add(self, index: str, doc_id: str, source: Any) -> None:
        existing = self.stand_in.indices.get(index)
        semantic = existing.semantic_fields if existing else ()
        self.stand_in.add_documents(index, {doc_id: source}, semantic_fields=semantic)

    def _bulk(self, index: str, body: Any) -> Any:
        items = _bulk_items(body)
        out = []
        while items:
            action = items.pop(0)
            if not isinstance(action, Mapping) or len(action) != 1:
                raise Failed(f"bulk: an action the in-process loader cannot apply: {action!r}")
            (kind, meta), *_ = action.items()
            if kind != "delete" and not items:
                break  # an action with no document after it: nothing to index
            target = str((meta or {}).get("_index", index))
            doc_id = str((meta or {}).get("_id", uuid.uuid4().hex))
            if kind == "delete":
                if target in self.stand_in.indices:
                    self.stand_in.indices[target].docs.pop(doc_id, None)
            else:
                self._add(target, doc_id, items.pop(0))
            out.append({kind: {"_index": target, "_id": doc_id, "status": 201}})
        return {"errors": False, "items": out}

    def request(self, action: str, params: Mapping[str, Any]) -> tuple[int, Any]:
        index = params.get("index")
        index = ",".join(map(str, index)) if isinstance(index, list) else str(index or "")
        if action == "search":
            path = f"/{index}/_search" if index else "/_search"
            if "rest_total_hits_as_int" in params:
                path += f"?rest_total_hits_as_int={_text(params['rest_total_hits_as_int'])}"
            raw = params.get("body")
            content = raw if isinstance(raw, str) else json.dumps(_body(raw))
            answer = self.client.post(
                self._substitute_text(path),
                content=self._substitute_text(content).encode(),
                headers={"Content-Type": "application/json"},
            )
        elif action == "get":
            answer = self.client.get(f"/{index}/_doc/{_text(params.get('id'))}")
        else:
            answer = self.client.get("/_cat/indices")
        try:
            return answer.status_code, answer.json()
        except ValueError:
            return answer.status_code, None

    def _substitute_text(self, text: str) -> str:
        for name, value in self.vars.items():
            text = text.replace(f"${name}", value)
        return text

    def _substitute(self, value: Any) -> Any:
        return json.loads(self._substitute_text(json.dumps(value))) if self.vars else value

    def _path(self, path: str) -> Any:
        path = self._substitute_text(path)
        return self.last if path in ("", "$body") else json_path(self.last, path)

    def _expected(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$") and value[1:] in self.vars:
            text = self.vars[value[1:]]
            try:
                return float(text)
            except ValueError:
                return {"true": True, "false": False}.get(text, text)
        return value

    def assertion(self, step: Mapping[str, Any]) -> None:
        for kind, spec in step.items():
            if kind == "match":
                for path, want in spec.items():
                    got = self._path(str(path))
                    if not values_match(got, self._expected(want)):
                        raise Failed(f"match {path}: expected {want!r}, got {_short(got)}")
            elif kind == "contains":
                for path, want in spec.items():
                    got = self._path(str(path))
                    want = self._expected(want)
                    if not _contains(got, want):
                        raise Failed(f"contains {path}: expected {want!r}, got {_short(got)}")
            elif kind == "length":
                for path, want in spec.items():
                    got = self._path(str(path))
                    if not isinstance(got, (list, dict, str)) or len(got) != int(want):
                        raise Failed(f"length {path}: expected {want}, got {_short(got)}")
            elif kind in ("is_true", "is_false"):
                got = self._path(_text(spec))
                if _truthy(got) != (kind == "is_true"):
                    raise Failed(f"{kind} {spec}: got {_short(got)}")
            elif kind in ("gt", "gte", "lt", "lte"):
                for path, want in spec.items():
                    got = _number(self._path(str(path)))
                    ok = {"gt": got > want, "gte": got >= want, "lt": got < want}.get(kind)
                    if not (ok if ok is not None else got <= want):
                        raise Failed(f"{kind} {path}: {got} vs {want}")
            elif kind == "close_to":
                for path, want in spec.items():
                    got = self._path(str(path))
                    value = _number(self._expected(want.get("value")))
                    error = float(want.get("error", 0.001))
                    if not isinstance(got, (int, float)) or abs(got - value) > error:
                        raise Failed(f"close_to {path}: expected {value} ± {error}, got {got}")


def _skip(spec: Any) -> None:
    """`main.rs` `execute_step`, `skip`: awaits_fix, a satisfied cluster feature, a bare
    version range (no `features`), or a non-mapping skip skips the case."""
    if not isinstance(spec, Mapping):
        raise Skipped("skip directive")
    if "awaits_fix" in spec:
        raise Skipped("skip directive (awaits_fix)")
    features = spec.get("cluster_features")
    for feature in features if isinstance(features, list) else [features]:
        if isinstance(feature, str) and _feature_satisfied(feature):
            raise Skipped("skip directive (cluster_features)")
    if "version" in spec and "features" not in spec:
        raise Skipped("skip directive")


def _feature_satisfied(feature: str) -> bool:
    # `cluster_feature_satisfied`: XERJ plays ES 8.13, so gte_v8.13 and below hold.
    match = re.fullmatch(r"gte_v(\d+)(?:\.(\d+))?.*", feature)
    if not match:
        return False
    major, minor = int(match[1]), int(match[2] or 0)
    return major < 8 or (major == 8 and minor <= 13)


def json_path(value: Any, path: str) -> Any:
    """`main.rs` `json_path`: dots split, ``\\.`` escapes one; a number indexes an array."""
    parts = [p.replace("\0", ".") for p in path.replace("\\.", "\0").split(".") if p]
    for part in parts:
        if isinstance(value, list) and part.isdigit():
            value = value[int(part)] if int(part) < len(value) else None
        elif isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value


def values_match(actual: Any, expected: Any) -> bool:
    """`main.rs` `values_match`."""
    if isinstance(actual, Mapping) and _is_number(expected) and "value" in actual:
        return values_match(actual["value"], expected)
    if actual is None and expected == {}:
        return True
    if _is_number(actual) and _is_number(expected):
        a, b = float(actual), float(expected)
        if a == b:
            return True
        if not (math.isfinite(a) and math.isfinite(b)):
            return math.isnan(a) == math.isnan(b)
        if a == 0 or b == 0:
            return abs(a - b) < 1e-12
        return abs(a - b) <= max(abs(a), abs(b)) * 1e-14
    if isinstance(actual, str) and isinstance(expected, str):
        if len(expected) >= 2 and expected.startswith("/") and expected.endswith("/"):
            try:
                return re.search(expected[1:-1], actual, re.M) is not None
            except re.error:
                return actual == expected
        return actual == expected
    if isinstance(actual, str) and _is_number(expected):
        return _float(actual) == float(expected)
    if _is_number(actual) and isinstance(expected, str):
        return _float(expected) == float(actual)
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(map(values_match, actual, expected))
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return all(k in actual and values_match(actual[k], v) for k, v in expected.items())
    return bool(actual == expected and type(actual) is type(expected))


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str) and isinstance(expected, str):
        return expected in actual
    if isinstance(actual, list):
        return any(values_match(item, expected) for item in actual)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return all(k in actual and values_match(actual[k], v) for k, v in expected.items())
    return values_match(actual, expected)


def _truthy(value: Any) -> bool:
    if value is None or value is False or value in ("", "0"):
        return False
    if _is_number(value):
        return float(value) != 0.0
    if isinstance(value, Mapping) and len(value) == 1 and "value" in value:
        return value["value"] is not None
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _number(value: Any) -> float:
    return float(value) if _is_number(value) else 0.0


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def _var_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return _text(value) if not isinstance(value, (list, dict)) else json.dumps(value)


def _short(value: Any) -> str:
    return json.dumps(value)[:160]


def run_case(case: Case, stand_in: XerjStandIn, client: httpx2.Client) -> int:
    """Run `case` against `stand_in` (`client` is bound to it): returns, when it passes, how
    many expected errors it checked the status of; raises `Failed` or `Skipped`. Every index
    is deleted first, as `main.rs` `run_file` does."""
    stand_in.indices.clear()
    stand_in.memories.clear()
    stand_in.closed.clear()
    run = _Run(stand_in, client)
    for step in case.setup:
        try:
            run.step(step)
        except Failed as exc:
            raise Skipped(f"setup: {exc}") from exc
    for step in case.steps:
        try:
            run.step(step)
        except (Failed, Skipped):
            raise
        except Exception as exc:  # the runner could not apply a step: a failure, with its cause
            raise Failed(f"runner error: {type(exc).__name__}: {exc}") from exc
    return run.checked


def run_all(cases: list[Case]) -> Iterator[tuple[Case, str, str]]:
    """Each case with its outcome (``out of scope``, ``skipped``, ``passed``, ``failed``) and
    reason, on one stand-in."""
    with XerjStandIn() as stand_in, httpx2.Client(base_url=stand_in.url, timeout=30) as client:
        for case in cases:
            yield (case, *outcome(case, stand_in, client))


def outcome(case: Case, stand_in: XerjStandIn, client: httpx2.Client) -> tuple[str, str]:
    if (why := out_of_scope(case)) is not None:
        return "out of scope", why
    try:
        checked = run_case(case, stand_in, client)
    except Skipped as exc:
        return "skipped", str(exc)
    except Failed as exc:
        return "failed", reason_for(case, str(exc))
    except Exception as exc:  # a runner error is a failure with its reason, not a crash
        return "failed", f"runner error: {type(exc).__name__}: {exc}"
    return "passed", STATUS_CHECKED if checked else ""


STATUS_CHECKED = "an expected error's status checked"


# ── The not-served list and the summary ──────────────────────────────────────


def not_served() -> dict[str, str]:
    """``tests/conformance_not_served.txt``: ``<file>::<case>\\t<reason>`` per line."""
    if not NOT_SERVED.exists():
        return {}
    listed = {}
    for line in NOT_SERVED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            case_id, _, reason = line.partition("\t")
            listed[case_id] = reason
    return listed


# Reasons read by hand for the failures no feature test names (keyed by a case id's start).
_READ_BY_HAND = {
    "aggregations/doc_count_field.yml::": "a document's `_doc_count` weighting bucket counts "
    "(aggs.rs `doc_count_weight`): not modelled",
    "bulk/10_basic.yml::empty action": "a bulk action the in-process loader cannot apply",
    "bulk/80_cas.yml::": "`if_seq_no` / `if_primary_term` writes: the stand-in keeps no versions",
    "indices/indices.create/": "the answer of index creation: the stand-in creates indices in "
    "process, with no write route",
    "search/310_match_bool_prefix.yml::": "`match_bool_prefix` (or `multi_match` `type: "
    "bool_prefix`), analyzers, fuzziness: the stand-in's text matching is a toy (token overlap)",
    "search/410_named_queries.yml::": "named queries (`_name`, `matched_queries`): not served",
    "aggregations/terms.yml::Mixing longs and doubles": "aggregations over several indices: XERJ "
    "runs them per index and merges the answers (es_compat.rs:7358-7470), the stand-in runs "
    "them once over the union",
}


def reason_for(case: Case, failure: str) -> str:
    """Why the stand-in does not serve `case`: the first feature of it the stand-in lacks, or
    the reason read by hand."""
    for start, reason in _READ_BY_HAND.items():
        if case.id.startswith(start):
            return reason
    for action, params in _actions(case):
        body = _body(params.get("body"))
        if action == "indices.create" and isinstance(body, Mapping):
            for field, mapping in _properties(body.get("mappings", {})):
                if not _named(case, field):
                    continue  # a field the case's own searches do not touch
                kind = mapping.get("type", "object")
                if kind not in _MAPPING_TYPES_MODELLED:
                    return f"mapping type `{kind}` (field `{field}`): the stand-in keeps no mapping"
                if set(mapping) - {"type", "properties", "dims", "similarity", "index"}:
                    extra = sorted(set(mapping) - {"type", "properties"})[0]
                    return (
                        f"mapping parameter `{extra}` on `{field}`: the stand-in keeps no mapping"
                    )
            settings = body.get("settings")
            settings = settings.get("index", settings) if isinstance(settings, Mapping) else {}
            named = {str(k).removeprefix("index.") for k in settings}
            if extra := sorted(named - {"number_of_shards", "number_of_replicas", "index"}):
                return f"index setting `{extra[0]}`: the stand-in keeps no settings"
        if action == "search" and isinstance(body, Mapping):
            for kind in _types(body.get("query")):
                if kind not in _QUERY_TYPES_SERVED:
                    return f"query type `{kind}`: not served by the stand-in"
            for kind in _agg_types(body.get("aggs", body.get("aggregations"))):
                if kind not in _AGGS_SERVED:
                    return f"aggregation `{kind}`: not served by the stand-in"
    if failure.startswith(UNCAUGHT):
        # XERJ's runner records a `catch` without checking it, so its own suite passing says
        # nothing of whether XERJ raises the error; none of the sampled messages (precision,
        # sigma, compression, empty filters, composite sources) occurs in its source.
        return (
            "an expected error the stand-in answers with a success: XERJ's runner does not "
            "check `catch` (main.rs `execute_do`), so XERJ's suite does not show that XERJ "
            f"raises it ({failure.removeprefix(UNCAUGHT).strip()})"
        )
    return f"stand-in answers differently: {failure}"


def _named(case: Case, field: str) -> bool:
    """Whether a search or assertion of the case itself (not its file's setup) names `field`."""
    text = json.dumps([step for step in case.steps], default=str)
    return field.rsplit(".", 1)[-1] in text


def _properties(mappings: Any, prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    props = mappings.get("properties") if isinstance(mappings, Mapping) else None
    for name, mapping in props.items() if isinstance(props, Mapping) else ():
        if isinstance(mapping, Mapping):
            yield f"{prefix}{name}", mapping
            yield from _properties(mapping, f"{prefix}{name}.")


def _types(query: Any) -> Iterator[str]:
    if isinstance(query, list):
        for item in query:
            yield from _types(item)
    elif isinstance(query, Mapping) and len(query) == 1:
        kind, body = next(iter(query.items()))
        yield kind
        if kind == "bool" and isinstance(body, Mapping):
            for key in ("must", "filter", "should", "must_not"):
                yield from _types(body.get(key))


def _agg_types(aggs: Any) -> Iterator[str]:
    for spec in (aggs or {}).values() if isinstance(aggs, Mapping) else ():
        if isinstance(spec, Mapping):
            for key, value in spec.items():
                if key in ("aggs", "aggregations"):
                    yield from _agg_types(value)
                elif key != "meta":
                    yield key


def measure(cases: list[Case]) -> dict[str, tuple[str, str]]:
    return {case.id: (kind, why) for case, kind, why in run_all(cases)}


def main(argv: list[str]) -> int:
    root = suite_dir()
    if root is None:
        print(f"{ENV} is not set: name the es-compat-yaml directory of a XERJ checkout")
        return 2
    outcomes = measure(load_cases(root))
    counts = Counter(kind for kind, _ in outcomes.values())
    listed = not_served()
    in_scope = counts["passed"] + counts["failed"]
    print(f"{len(outcomes)} cases in {root}")
    print(f"out of scope: {counts['out of scope']}  skipped by the suite: {counts['skipped']}")
    print(f"in scope: {in_scope}  passing: {counts['passed']}  not served: {counts['failed']}")
    types = ("mapping", "index setting", "query type", "aggregation")
    beyond = sum(1 for k, r in outcomes.values() if k == "failed" and r.startswith(types))
    print(
        f"in scope and within the stand-in's query, aggregation and mapping types: "
        f"{in_scope - beyond}  passing: {counts['passed']}"
    )
    unlisted = [c for c, (k, _) in outcomes.items() if k == "failed" and c not in listed]
    stale = [c for c in listed if outcomes.get(c, ("",))[0] != "failed"]
    print(f"failing but not listed: {len(unlisted)}  listed but not failing: {len(stale)}")
    checking = sum(1 for k, r in outcomes.values() if k == "passed" and r == STATUS_CHECKED)
    print(f"passing cases that check an expected error's status: {checking}")
    if "--reasons" in argv:
        for reason, n in Counter(
            r.split(":")[0] for k, r in outcomes.values() if k == "failed"
        ).most_common():
            print(f"{n:4}  {reason}")
    if "--write" in argv:
        lines = [
            "# XERJ's es-compat YAML cases in scope that the stand-in does not serve, one per line:",
            "# <file>::<case><TAB><reason>. Written by `tests/conformance.py --write`; see",
            "# docs/testing.md. A listed case that passes fails the run: take it off the list.",
        ]
        lines += [f"{c}\t{r}" for c, (k, r) in sorted(outcomes.items()) if k == "failed"]
        NOT_SERVED.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main(sys.argv[1:]))
