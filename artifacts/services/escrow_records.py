"""The records escrow logs (``artifacts.lib.evidence.layout`` describes the
encoding): a deposit's, naming every blob, and an escrow event's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import DEPOSIT_SCHEMA, EVENT_SCHEMA, format_time
from artifacts.models import Blob, Deposit, EscrowEvent


@dataclass(frozen=True)
class DepositItem:
    """A blob a deposit names: its role and, for a bundle's file, its path."""

    blob: Blob
    role: str
    path: str = ""

    def record(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "role": self.role,
            "sha256": self.blob.sha256,
            "size": self.blob.size,
        }
        if self.path:
            item["path"] = self.path
        return item


def deposit_leaf(
    deposit: Deposit, items: Sequence[DepositItem], extra: dict[str, Any]
) -> bytes:
    """The deposit's record: kind, every blob's SHA-256 and size, the
    depositor, the RFP, the time, the retention, plus ``extra`` (a bundle's
    public id and manifest digest)."""
    record = {
        **extra,
        "schema": DEPOSIT_SCHEMA,
        "kind": deposit.kind,
        "deposit": str(deposit.public_id),
        "organisation": deposit.organisation.slug,
        "rfp": deposit.rfp.reference,
        "time": format_time(deposit.deposited_at),
        "retain_until": format_time(deposit.retain_until),
        "blobs": [item.record() for item in items],
    }
    return canonical_json(record)


def event_leaf(
    event: EscrowEvent, deposits: Iterable[Deposit], data: dict[str, Any]
) -> bytes:
    """An escrow event's record: the action, who, when, the deposits it is
    about (by id and log index) and the action's own ``data``."""
    actor = event.actor.get_username() if event.actor is not None else "system"
    record = {
        **data,
        "schema": EVENT_SCHEMA,
        "action": event.action,
        "event": str(event.public_id),
        "actor": actor,
        "time": format_time(event.occurred_at),
        "deposits": [
            {"deposit": str(d.public_id), "leaf_index": d.log_index} for d in deposits
        ],
    }
    if event.bundle is not None:
        record["bundle"] = str(event.bundle.public_id)
    return canonical_json(record)
