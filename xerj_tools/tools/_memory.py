"""The memory tools: `xerj_memory_store` (``POST /_memory/{namespace}``) and
`xerj_memory_recall` (``POST /_memory/{namespace}/_recall``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .._http._models import HttpRequest
from .._message._format import invalid
from ._limits import MAX_RESULT_WINDOW, finite_vector, int_range, namespace, not_blank, number_range
from ._memory_limits import recall_by, recency_k, text_unless_vector
from ._paths import segment
from ._tool import Advice, PolicyTraits, Received, Tool, copy_args, json_object

__all__ = ["RECALL", "STORE", "read_recall", "read_store"]

# Each tool's limits, in the order their problems are reported.
STORE_LIMITS = (
    namespace(),
    finite_vector("vector"),
    text_unless_vector(),
    not_blank("id", "string, or omitted"),
    number_range("dedup_threshold", 0.0, 1.0),
)
RECALL_LIMITS = (
    namespace(),
    finite_vector("vector"),
    int_range("k", 1, MAX_RESULT_WINDOW),
    number_range("recency_weight", 0.0, 1.0),
    recency_k(),
    recall_by(),
)


def new_memory_id() -> str:
    import uuid  # imported on the first memory write: uuid costs ~10 ms to import

    return str(uuid.uuid4())


def memory_store(
    args: Mapping[str, Any], *, new_id: Callable[[], str] = new_memory_id
) -> HttpRequest:
    """`xerj_memory_store` → ``POST /_memory/{namespace}`` (memory_api.rs:299-382).

    The memory id is chosen here, before the first attempt, when the model gave none: XERJ
    overwrites an existing id, so a retried store can never create a second memory.
    """
    body: dict[str, Any] = {"text": args.get("text", ""), "id": args.get("id") or new_id()}
    copy_args(args, body, "metadata", "vector", "dedup", "dedup_threshold")
    path = f"/_memory/{segment(args['namespace'], path='$.namespace')}"
    return HttpRequest("POST", path, body)


def memory_recall(args: Mapping[str, Any]) -> HttpRequest:
    """`xerj_memory_recall` → ``POST /_memory/{namespace}/_recall`` (memory_api.rs:429-573).

    The description says `vector` takes precedence over `query`/`semantic`; the engine answers
    400 when both are sent. So a vector is sent alone, and the model is told the query was unused.
    """
    body: dict[str, Any] = {}
    notes: tuple[str, ...] = ()
    if args.get("vector"):
        body["vector"] = list(args["vector"])
        if args.get("query") or args.get("semantic"):
            notes = ("vector given, so query/semantic were not used (vector takes precedence)",)
    else:
        copy_args(args, body, "query", "semantic")
    copy_args(args, body, "k", "filter", "recency_weight")
    path = f"/_memory/{segment(args['namespace'], path='$.namespace')}/_recall"
    return HttpRequest("POST", path, body, notes=notes)


def own_first_write(payload: dict[str, Any], request: HttpRequest) -> dict[str, Any]:
    """A store that was retried after a lost answer, with ``dedup: true``, finds the first
    attempt's write as its own near-duplicate: XERJ answers ``created: false, deduplicated:
    true`` with the id this call chose (memory_api.rs:326-344). That memory is this call's, and
    it is stored: say so."""
    if payload.get("deduplicated") is not True or payload.get("id") != (request.body or {}).get(
        "id"
    ):
        return payload
    out = {k: v for k, v in payload.items() if k not in ("deduplicated", "score")}
    out["created"] = True
    out["notes"] = [
        *out.get("notes", []),
        "stored: an earlier attempt of this call wrote the memory before its answer was lost; "
        "the retry found that write (the same id), not another memory",
    ]
    return out


def read_store(received: Received) -> dict[str, Any]:
    """Store's ``{"id": ...}`` answer (memory_api.rs:373-379)."""
    data = json_object(received)
    if not isinstance(data.get("id"), str):
        raise invalid(received.reply, "the `id` of the stored memory")
    out: dict[str, Any] = {"ok": True}
    for key in ("namespace", "id", "created", "deduplicated", "score"):
        if key in data:
            out[key] = data[key]
    return own_first_write(out, received.request) if received.attempts > 1 else out


def read_recall(received: Received) -> dict[str, Any]:
    """Recall's ``{"hits": [...], "namespace": ...}`` answer (memory_api.rs:572), each hit
    ``id``, ``text``, ``metadata``, ``score`` (memory_api.rs:576-587).

    Only the hits go to the model: the namespace is the call's own argument echoed back, a
    count would repeat the list's length, and a memory stored without metadata has it ``null``
    in XERJ's answer, here left out. So the message is the raw body less that, plus the
    ``ok``/``tool`` of every message."""
    data = json_object(received)
    raw = data.get("hits")
    if not isinstance(raw, list):
        raise invalid(received.reply, "the `hits` list of a recall")
    hits = []
    for h in raw:
        if isinstance(h, dict):
            hit = {k: h.get(k) for k in ("id", "text", "metadata", "score")}
            if hit["metadata"] is None:
                del hit["metadata"]
            hits.append(hit)
    return {"ok": True, "hits": hits}


def _too_large_recall(request: HttpRequest) -> str:
    return f"Recall fewer memories: call again with a smaller k (it was {(request.body or {}).get('k', 10)})."


def _too_large_store(request: HttpRequest) -> str:
    return (
        "XERJ's answer to the store was too large to read, so it is unknown whether the "
        "memory was stored; recall it before storing it again."
    )


_MEMORY = PolicyTraits(index_args=(), namespace_args=("namespace",))

STORE = Tool(
    name="xerj_memory_store",
    build=memory_store,
    title="Store a memory",
    read=read_store,
    limits=STORE_LIMITS,
    # text and metadata are stored, not run
    traits=replace(_MEMORY, caps={}, writes=True, queries=False),
    path="/_memory/{namespace}",
    advice=Advice(too_large=_too_large_store),
    result_fields={
        "id": {"type": "string"},
        "namespace": {"type": "string"},
        "created": {"type": "boolean"},
        "deduplicated": {"type": "boolean"},
    },
    origin="published",
)
RECALL = Tool(
    name="xerj_memory_recall",
    build=memory_recall,
    title="Recall memories",
    read=read_recall,
    limits=RECALL_LIMITS,
    fit="memories",
    traits=replace(_MEMORY, caps={"k": "max_k"}, writes=False),
    path="/_memory/{namespace}/_recall",
    advice=Advice(too_large=_too_large_recall),
    result_fields={
        "hits": {
            "type": "array",
            "items": {"type": "object"},
            "description": "each with id, text, score",
        }
    },
    origin="published",
)
