"""The release certificate: what was released, to whom, why, who approved and
when, as canonical JSON (``artifacts.lib.canonical``).

It lists every released deposit with its log index, leaf hash and the blobs
its logged leaf names (SHA-256 and size), then every released digest once.
Each step cites the log index of its escrow event. The certificate's SHA-256
is in the leaf of the ``release.executed`` event, so the certificate is bound
to the log (the execution's own index is shown beside it, not in it)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Final

from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import format_time
from artifacts.models import Deposit, Release, ReleaseStep
from artifacts.selectors.log import log_origin

RELEASE_SCHEMA: Final = "reprogate.escrow-release/v1"


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else format_time(moment)


def _step(step: ReleaseStep) -> dict[str, Any]:
    return {
        "action": step.action,
        "by": step.actor.get_username(),
        "role": step.role,
        "at": format_time(step.occurred_at),
        "text": step.text,
        "acknowledges_objection": step.acknowledges_objection,
        "leaf_index": step.event.log_index,
    }


def _deposit(deposit: Deposit) -> dict[str, Any]:
    logged = json.loads(bytes(deposit.leaf))
    return {
        "deposit": str(deposit.public_id),
        "kind": deposit.kind,
        "leaf_index": deposit.log_index,
        "leaf_hash": deposit.leaf_hash,
        "blobs": logged["blobs"],
    }


def _released_blobs(deposits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    unique = {
        blob["sha256"]: blob["size"]
        for deposit in deposits
        for blob in deposit["blobs"]
    }
    return [{"sha256": sha, "size": size} for sha, size in sorted(unique.items())]


def certificate_record(
    release: Release,
    steps: list[ReleaseStep],
    deposits: list[Deposit],
    *,
    executed_by: str,
    executed_at: datetime,
) -> dict[str, Any]:
    listed = [_deposit(deposit) for deposit in deposits]
    released = _released_blobs(listed)
    rfp = release.rfp
    return {
        "schema": RELEASE_SCHEMA,
        "release": str(release.public_id),
        "origin": log_origin(),
        "rfp": rfp.reference,
        "buyer": rfp.buyer_organisation.slug,
        "vendor": release.organisation.slug,
        "award": {
            "award": str(release.award.public_id),
            "decided_at": format_time(release.award.decided_at),
        },
        "condition": release.condition,
        "condition_text": release.get_condition_display(),
        "statement": release.statement,
        "contract": {
            "escrow_clause": release.contract_clause,
            "escrow_clause_sha256": release.contract_clause_sha256,
            "terms_frozen_at": _time(rfp.terms_frozen_at),
        },
        "notice_ends_at": format_time(release.notice_ends_at),
        "steps": [_step(step) for step in steps],
        "executed": {"by": executed_by, "at": format_time(executed_at)},
        "deposits": listed,
        "released_blobs": released,
        "totals": {
            "deposits": len(listed),
            "blobs": len(released),
            "bytes": sum(blob["size"] for blob in released),
        },
    }


def certificate_bytes(record: dict[str, Any]) -> tuple[bytes, str]:
    """The certificate as stored and served, and its SHA-256 (hex)."""
    data = canonical_json(record)
    return data, hashlib.sha256(data).hexdigest()
