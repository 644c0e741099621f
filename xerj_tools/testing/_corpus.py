"""The stand-in's small built-in corpus: engineering docs and support tickets of a made-up shop."""

from __future__ import annotations

from typing import Any

SEMANTIC_FIELDS: dict[str, tuple[str, ...]] = {"docs": ("body",)}

# `docs` was created with a mapping (its `body` is semantic_text, which only a mapping declares:
# es_compat.rs:12132-12160); `tickets` without one, so its mapping is the dynamic schema's.
MAPPINGS: dict[str, dict[str, Any]] = {
    "docs": {
        "properties": {
            "title": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "service": {"type": "keyword"},
            "kind": {"type": "keyword"},
            "year": {"type": "long"},
            "body": {"type": "semantic_text"},
        }
    }
}

CORPUS: dict[str, list[dict[str, Any]]] = {
    "docs": [
        {
            "_id": "pm-101",
            "title": "Postmortem: search outage on checkout",
            "service": "checkout",
            "kind": "postmortem",
            "year": 2026,
            "body": "Checkout search returned errors for 42 minutes after a bad index template "
            "rolled out. Rollback restored service; a canary for templates now gates deploys.",
        },
        {
            "_id": "pm-102",
            "title": "Postmortem: VPN outage in the Berlin office",
            "service": "network",
            "kind": "postmortem",
            "year": 2025,
            "body": "The VPN concentrator ran out of licences and refused new tunnels. Staff could "
            "not reach internal tools for two hours until licences were raised.",
        },
        {
            "_id": "rb-201",
            "title": "Runbook: rotating the payment API keys",
            "service": "payments",
            "kind": "runbook",
            "year": 2026,
            "body": "Rotate payment keys quarterly. Create the new key, deploy it to both regions, "
            "verify traffic, then revoke the old key in the provider console.",
        },
        {
            "_id": "rb-202",
            "title": "Runbook: restoring a search index from snapshot",
            "service": "search",
            "kind": "runbook",
            "year": 2024,
            "body": "To restore a search index, close writes, restore the latest snapshot into a "
            "new index, swap the alias and reopen writes. Expect ten minutes per gigabyte.",
        },
        {
            "_id": "adr-301",
            "title": "Decision: hybrid search for the help centre",
            "service": "search",
            "kind": "decision",
            "year": 2026,
            "body": "Help centre search fuses BM25 with semantic recall using reciprocal rank fusion, "
            "because customers describe problems in their own words, not ours.",
        },
        {
            "_id": "adr-302",
            "title": "Decision: keep order history for seven years",
            "service": "orders",
            "kind": "decision",
            "year": 2023,
            "body": "Order history is kept for seven years to meet tax rules; older orders move to "
            "cold storage and are searchable on request.",
        },
        {
            "_id": "pm-103",
            "title": "Postmortem: slow checkout during the spring sale",
            "service": "checkout",
            "kind": "postmortem",
            "year": 2026,
            "body": "Checkout latency rose to four seconds when the cart service saturated its "
            "database pool. Raising the pool and caching prices fixed it.",
        },
        {
            "_id": "gd-401",
            "title": "Guide: writing a good incident timeline",
            "service": "sre",
            "kind": "guide",
            "year": 2025,
            "body": "A timeline lists what was seen, when, and by whom. Keep guesses out of it; "
            "write the outage start from monitoring, not from the first report.",
        },
    ],
    "tickets": [
        {
            "_id": "T-1",
            "title": "Refund not received",
            "status": "open",
            "priority": 2,
            "service": "payments",
            "opened": "2026-11-02",
        },
        {
            "_id": "T-2",
            "title": "Cannot log in after password reset",
            "status": "open",
            "priority": 1,
            "service": "accounts",
            "opened": "2026-11-20",
        },
        {
            "_id": "T-3",
            "title": "Search shows sold-out items",
            "status": "closed",
            "priority": 3,
            "service": "search",
            "opened": "2026-10-11",
        },
        {
            "_id": "T-4",
            "title": "Checkout times out on mobile",
            "status": "open",
            "priority": 1,
            "service": "checkout",
            "opened": "2026-11-28",
        },
        {
            "_id": "T-5",
            "title": "Invoice address is wrong",
            "status": "closed",
            "priority": 3,
            "service": "payments",
            "opened": "2026-09-30",
        },
        {
            "_id": "T-6",
            "title": "Checkout button missing in dark mode",
            "status": "open",
            "priority": 2,
            "service": "checkout",
            "opened": "2026-11-29",
        },
    ],
}
