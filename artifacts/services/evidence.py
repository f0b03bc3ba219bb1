"""Evidence packages: preparing one is the download's state change — one
transaction that logs an ``evidence.downloaded`` escrow event (whose leaf names
the digests of the package's README, allowed_signers and log key) with one
audit row (who, when, which bundle and deposits); then a checkpoint covering
the deposits and that event (published if the latest does not), and the
inclusion proofs leading to it."""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction

from accounts.audit import audit_record
from accounts.exceptions import ApplicationError
from accounts.models import Organisation, Role
from accounts.selectors import organisation_ids_for
from artifacts.lib.evidence.layout import ALLOWED_SIGNERS, LOG_KEY, README, format_time
from artifacts.lib.evidence.readme import ReadmeDeposit, readme_text
from artifacts.models import Blob, Bundle, Deposit, DepositBlob, EscrowEvent
from artifacts.selectors.escrow import bundle_deposits, deposit_items
from artifacts.selectors.evidence_package import (
    EvidencePackage,
    evidence_document,
    key_file,
    log_entry_json,
)
from artifacts.selectors.log import (
    checkpoint_latest,
    log_inclusion_proof,
    log_origin,
    log_verifier_key,
)
from artifacts.services.escrow import escrow_event_log
from artifacts.services.keys import allowed_signers_text
from artifacts.services.transparency import checkpoint_publish

Actor = User | AnonymousUser | None


def _allowed_signers(deposits: list[Deposit]) -> bytes:
    """The depositors' keys valid at each deposit's time, each line once."""
    lines: dict[str, None] = {}
    for deposit in deposits:
        text = allowed_signers_text(deposit.organisation, at=deposit.deposited_at)
        lines.update(dict.fromkeys(text.splitlines()))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _blobs(deposits: list[Deposit]) -> list[Blob]:
    unique: dict[str, Blob] = {}
    for deposit in deposits:
        for item in deposit_items(deposit):
            unique.setdefault(item.blob.sha256, item.blob)
    return list(unique.values())


def _readme(bundle: Bundle, deposits: list[Deposit], origin: str) -> bytes:
    def archive(deposit: Deposit) -> str:
        items = deposit_items(deposit).filter(role=DepositBlob.Role.ARCHIVE)
        return next((item.blob.sha256 for item in items), "")

    rows = [
        ReadmeDeposit(
            d.log_index,
            d.get_kind_display().lower(),
            d.organisation.slug,
            d.rfp.reference,
            format_time(d.deposited_at),
            archive(d),
        )
        for d in deposits
    ]
    text = readme_text(origin=origin, bundle=str(bundle.public_id), deposits=rows)
    return text.encode("utf-8")


def _trail(actor: Actor, bundle: Bundle) -> Organisation:
    """The vendor's own download goes to its trail, others to the buyer's."""
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN) if actor else set()
    return (
        bundle.organisation
        if bundle.organisation_id in own
        else bundle.rfp.buyer_organisation
    )


def _record_download(
    bundle: Bundle, deposits: list[Deposit], actor: Actor, files: dict[str, str]
) -> EscrowEvent:
    with transaction.atomic():
        event = escrow_event_log(
            action=EscrowEvent.Action.EVIDENCE_DOWNLOADED,
            deposits=deposits,
            actor=actor,
            bundle=bundle,
            data={"files": files},
        )
        audit_record(
            actor=actor,
            action="evidence.downloaded",
            target=bundle,
            organisation=_trail(actor, bundle),
            data={
                "rfp": bundle.rfp.reference,
                "event_index": event.log_index,
                "deposits": [d.log_index for d in deposits],
            },
        )
    return event


def _covering_checkpoint(index: int) -> Any:
    """A checkpoint whose tree holds leaf ``index`` (published if need be)."""
    checkpoint = checkpoint_latest()
    if checkpoint is None or checkpoint.size <= index:
        checkpoint = checkpoint_publish()
    return checkpoint


def evidence_package_prepare(*, bundle: Bundle, actor: Actor) -> EvidencePackage:
    """Log the download and assemble the package of ``bundle``'s deposits
    (the caller checked that ``actor`` may have it)."""
    deposits = bundle_deposits(bundle)
    if not deposits:
        raise ApplicationError(
            "This bundle has no escrow deposit: only accepted bundles are deposited.",
            code="not_deposited",
        )
    origin, key = log_origin(), log_verifier_key()
    signers, readme = _allowed_signers(deposits), _readme(bundle, deposits, origin)
    files = {
        name: hashlib.sha256(data).hexdigest()
        for name, data in (
            (README, readme),
            (ALLOWED_SIGNERS, signers),
            (LOG_KEY, key_file(key)),
        )
    }
    receipt = _record_download(bundle, deposits, actor, files)
    checkpoint = _covering_checkpoint(receipt.log_index)
    size = checkpoint.size
    entries = [
        log_entry_json(
            d.log_index, bytes(d.leaf), log_inclusion_proof(d.log_index, size)
        )
        for d in deposits
    ]
    proof = log_inclusion_proof(receipt.log_index, checkpoint.size)
    download = log_entry_json(receipt.log_index, bytes(receipt.leaf), proof)
    document = evidence_document(origin=origin, deposits=entries, download=download)
    return EvidencePackage(
        bundle=bundle,
        deposits=deposits,
        receipt=receipt,
        origin=origin,
        checkpoint_size=checkpoint.size,
        checkpoint_note=checkpoint.note,
        verifier_key=key,
        allowed_signers=signers,
        readme=readme,
        evidence_json=document,
        blobs=_blobs(deposits),
    )
