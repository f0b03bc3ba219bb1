"""Escrow services: deposits and the changes a deposit allows (legal hold on/off,
retention extended). Each is one transaction with one audit row, and each is
an entry of the transparency log, appended in the same transaction.

Nothing here changes or deletes what a deposit's leaf says, and there is no
service that could: a deposit, the blobs it names and its events are immutable
(``artifacts.models.escrow``).

On an S3 bucket with Object Lock (``artifacts.storage.object_lock``) protection is
tightened before the transaction commits (retention extended, hold placed: a
rollback leaves the blobs better protected than the rows say, never worse) and
loosened only after it committed (hold released)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import models, transaction

from accounts.exceptions import ApplicationError, StateConflict
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from artifacts.conf import escrow_retain_until
from artifacts.lib.evidence.layout import format_time
from artifacts.lib.transparency.merkle import leaf_hash
from artifacts.models import Blob, Bundle, Deposit, DepositBlob, EscrowEvent
from artifacts.services.escrow_records import DepositItem, deposit_leaf, event_leaf
from artifacts.services.transparency import checkpoint_publish_on_commit, log_append
from artifacts.storage.bulk import insert_rows
from artifacts.storage.object_lock import blobs_lock
from procurement.models import Rfp

logger = logging.getLogger(__name__)

MAX_REASON = 500


def deposit_create(
    *,
    kind: str,
    organisation: Organisation,
    rfp: Rfp,
    items: Sequence[DepositItem],
    actor: Actor,
    bundle: Bundle | None = None,
    extra: dict[str, Any] | None = None,
    action: str = "deposit.created",
    target: models.Model | None = None,
    data: dict[str, Any] | None = None,
) -> Deposit:
    """Deposit ``items`` (blobs already stored) for ``organisation`` on ``rfp``:
    lock them (Object Lock), log the record, keep the row. Runs inside the
    caller's transaction if there is one (an ingest's), else in its own.

    The deposit's audit row is its ``deposit.created`` row, or, when the deposit
    is part of another action (an accepted bundle's), that action's one row:
    ``action`` on ``target`` with ``data`` and the deposit's facts (its public
    id as ``deposit``, log index, blob count, retention).

    ``bundle`` is the bundle the deposit is of (kind ``bundle``) or from (a run
    output: the bundle that was run); ``extra`` must then name it as
    ``"bundle"`` too, since fixity compares the row with the leaf."""
    if not items:
        raise ApplicationError(
            "A deposit names at least one blob.", code="deposit_empty"
        )
    with transaction.atomic():
        now = clock.now()
        deposit = Deposit(
            kind=kind,
            organisation=organisation,
            rfp=rfp,
            bundle=bundle,
            deposited_by=person(actor),
            deposited_at=now,
            retain_until=escrow_retain_until(rfp, now),
        )
        leaf = deposit_leaf(deposit, items, extra or {})
        blobs_lock([i.blob for i in items], retain_until=deposit.retain_until)
        entry = log_append(leaf)
        checkpoint_publish_on_commit()
        deposit.leaf, deposit.leaf_hash = leaf, leaf_hash(leaf).hex()
        deposit.log_index = entry.index
        deposit.save()
        insert_rows(
            DepositBlob,
            ("deposit", "blob", "role", "path", "position"),
            (
                (deposit.pk, item.blob.pk, item.role, item.path, position)
                for position, item in enumerate(items)
            ),
        )
        facts = {
            "kind": kind,
            "rfp": rfp.reference,
            "log_index": entry.index,
            "blobs": len(items),
            "retain_until": format_time(deposit.retain_until),
        }
        if target is not None:  # the row of the action the deposit is part of
            facts["deposit"] = str(deposit.public_id)
        audit_record(
            actor=actor,
            action=action,
            target=target if target is not None else deposit,
            organisation=organisation,
            data={**(data or {}), **facts},
        )
    return deposit


def deposit_bundle(
    *,
    bundle: Bundle,
    actor: Actor,
    files: Sequence[tuple[str, Blob]] | None = None,
    accepted: dict[str, Any] | None = None,
) -> Deposit:
    """Deposit an accepted bundle: its archive and every file. Meant to run in
    the ingest's accept transaction (the bundle and its files are rows of it);
    the ingest passes the ``files`` it just recorded as (path, blob) pairs, so
    they are not read back, and ``accepted``, the details of its
    ``bundle.accepted`` row: the acceptance and the deposit are one action, one
    row on the bundle (the deposit's facts in its data). Without it (a bundle
    deposited on its own) the row is the deposit's ``deposit.created``."""
    if bundle.status != Bundle.Status.ACCEPTED or bundle.archive_blob is None:
        raise ApplicationError(
            "Only an accepted bundle is deposited.", code="bundle_not_accepted"
        )
    if Deposit.objects.filter(kind=Deposit.Kind.BUNDLE, bundle=bundle).exists():
        raise StateConflict(
            "This bundle is deposited already.", code="bundle_already_deposited"
        )
    if files is None:
        files = [(f.path, f.blob) for f in bundle.files.select_related("blob")]
    items = [DepositItem(bundle.archive_blob, DepositBlob.Role.ARCHIVE)]
    items += [
        DepositItem(blob, DepositBlob.Role.FILE, path)
        for path, blob in sorted(files, key=lambda pair: pair[0])
    ]
    audit: dict[str, Any] = (
        {"action": "bundle.accepted", "target": bundle, "data": accepted}
        if accepted is not None
        else {}
    )
    return deposit_create(
        kind=Deposit.Kind.BUNDLE,
        organisation=bundle.organisation,
        rfp=bundle.rfp,
        items=items,
        actor=actor,
        bundle=bundle,
        extra={
            "bundle": str(bundle.public_id),
            "manifest_sha256": bundle.manifest_sha256,
        },
        **audit,
    )


def escrow_event_log(
    *,
    action: str,
    deposits: Sequence[Deposit],
    actor: Actor,
    data: dict[str, Any],
    bundle: Bundle | None = None,
) -> EscrowEvent:
    """Log an escrow event about ``deposits`` (inside the caller's transaction)."""
    event = EscrowEvent(
        action=action,
        deposit=deposits[0] if len(deposits) == 1 else None,
        bundle=bundle,
        actor=person(actor),
        occurred_at=clock.now(),
    )
    event.leaf = event_leaf(event, deposits, data)
    event.leaf_hash = leaf_hash(event.leaf).hex()
    event.log_index = log_append(event.leaf).index
    checkpoint_publish_on_commit()
    event.save()
    return event


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError("Give the reason.", code="reason_required")
    return reason[:MAX_REASON]


def _held_elsewhere(deposit: Deposit) -> set[int]:
    """Blobs of ``deposit`` that another deposit on legal hold names too."""
    return set(
        DepositBlob.objects.filter(
            blob__in=deposit.items.values("blob"), deposit__legal_hold=True
        )
        .exclude(deposit=deposit)
        .values_list("blob_id", flat=True)
    )


def _release_after_commit(deposit: Deposit) -> None:
    blobs = [b for b in _blobs(deposit) if b.pk not in _held_elsewhere(deposit)]

    def release() -> None:
        try:
            blobs_lock(blobs, legal_hold=False)
        except Exception:  # the hold stays on: safer than the row says
            logger.exception("releasing the legal hold of deposit %s", deposit.pk)

    transaction.on_commit(release)


def _blobs(deposit: Deposit) -> list[Blob]:
    return [item.blob for item in deposit.items.select_related("blob")]


def deposit_legal_hold_set(
    *, deposit: Deposit, hold: bool, actor: Actor, reason: str
) -> Deposit:
    """Place (``hold``) or release the deposit's legal hold."""
    reason = _reason(reason)
    with transaction.atomic():
        deposit = Deposit.objects.select_for_update().get(pk=deposit.pk)
        if deposit.legal_hold == hold:
            state = "on" if hold else "off"
            raise StateConflict(
                f"The legal hold is {state} already.", code="hold_unchanged"
            )
        if hold:
            blobs_lock(_blobs(deposit), legal_hold=True)
        else:
            _release_after_commit(deposit)
        deposit.legal_hold = hold
        deposit.save(update_fields=["legal_hold"])
        action = (
            EscrowEvent.Action.LEGAL_HOLD_SET
            if hold
            else EscrowEvent.Action.LEGAL_HOLD_RELEASED
        )
        event = escrow_event_log(
            action=action,
            deposits=[deposit],
            actor=actor,
            data={"legal_hold": hold, "reason": reason},
        )
        audit_record(
            actor=actor,
            action=f"deposit.{action}",
            target=deposit,
            organisation=deposit.rfp.buyer_organisation,
            data={
                "log_index": deposit.log_index,
                "event_index": event.log_index,
                "reason": reason,
            },
        )
    return deposit


def deposit_retention_extend(
    *, deposit: Deposit, retain_until: datetime, actor: Actor, reason: str
) -> Deposit:
    """Keep the deposit longer; retention is never shortened."""
    reason = _reason(reason)
    with transaction.atomic():
        deposit = Deposit.objects.select_for_update().get(pk=deposit.pk)
        if retain_until <= deposit.retain_until:
            raise ApplicationError(
                f"Retention can only be extended: the deposit is kept until "
                f"{deposit.retain_until:%Y-%m-%d %H:%M} UTC already.",
                code="retention_not_extended",
            )
        blobs_lock(_blobs(deposit), retain_until=retain_until)
        previous, deposit.retain_until = deposit.retain_until, retain_until
        deposit.save(update_fields=["retain_until"])
        event = escrow_event_log(
            action=EscrowEvent.Action.RETENTION_EXTENDED,
            deposits=[deposit],
            actor=actor,
            data={
                "retain_until": format_time(retain_until),
                "previous_retain_until": format_time(previous),
                "reason": reason,
            },
        )
        audit_record(
            actor=actor,
            action="deposit.retention.extended",
            target=deposit,
            organisation=deposit.rfp.buyer_organisation,
            data={
                "log_index": deposit.log_index,
                "event_index": event.log_index,
                "retain_until": format_time(retain_until),
                "previous_retain_until": format_time(previous),
                "reason": reason,
            },
        )
    return deposit
