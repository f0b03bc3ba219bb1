"""Evidence packages: preparing one is the download's state change — one
transaction that logs an ``evidence.downloaded`` escrow event (whose leaf names
the digests of the package's README, allowed_signers, log key and any other
file the package adds) with one audit row (who, when, what and which
deposits); then a checkpoint covering the deposits and that event (published if
the latest does not), and the inclusion proofs leading to it.

``evidence_package_build`` makes the package of any list of deposits (a gate
evaluation's is ``gates.services.evidence``'s); ``evidence_package_prepare``
is a bundle's."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import models, transaction

from accounts.exceptions import ApplicationError
from accounts.lib.registry import Registry
from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from artifacts.lib.evidence.layout import ALLOWED_SIGNERS, LOG_KEY, README, format_time
from artifacts.lib.evidence.readme import ReadmeDeposit, ReadmeFile, readme_text
from artifacts.models import Blob, Bundle, Deposit, DepositBlob, EscrowEvent
from artifacts.selectors.escrow import bundle_deposits, deposit_items
from artifacts.selectors.evidence_package import (
    EvidencePackage,
    bundle_package_filename,
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


@dataclass(frozen=True)
class PackageFile:
    """A file a package adds to the standard layout: bound by the download
    receipt like README.txt, described in README.txt."""

    name: str
    data: bytes
    description: str


class PackageFileSource(Protocol):
    def __call__(self) -> PackageFile | None: ...


# Files every package holds when the installation has them, registered by the
# apps that own them (the dependency runs gates → artifacts): the signed reports'
# statement key, for one (``GatesConfig.ready()``).
package_files: Registry[PackageFileSource] = Registry(
    "artifacts.services.evidence.package_files"
)


def _with_installation_files(files: Sequence[PackageFile]) -> list[PackageFile]:
    chosen = {f.name: f for f in files}
    for name, source in package_files.items():
        if name not in chosen:
            found = source()
            if found is not None:
                chosen[name] = found
    return list(chosen.values())


def _allowed_signers(deposits: list[Deposit]) -> bytes:
    """The depositors' keys valid at each bundle deposit's time, each line once."""
    lines: dict[str, None] = {}
    for deposit in deposits:
        if deposit.kind != Deposit.Kind.BUNDLE:
            continue  # only a bundle's manifest carries a signature to check
        text = allowed_signers_text(deposit.organisation, at=deposit.deposited_at)
        lines.update(dict.fromkeys(text.splitlines()))
    if not lines:
        return b"# no bundle deposit in this package\n"
    return ("\n".join(lines) + "\n").encode("utf-8")


def _blobs(deposits: list[Deposit]) -> list[Blob]:
    unique: dict[str, Blob] = {}
    for deposit in deposits:
        for item in deposit_items(deposit):
            unique.setdefault(item.blob.sha256, item.blob)
    return list(unique.values())


def _readme_row(deposit: Deposit) -> ReadmeDeposit:
    items = list(deposit_items(deposit))
    archive = next(
        (i.blob.sha256 for i in items if i.role == DepositBlob.Role.ARCHIVE), ""
    )
    documents = tuple(
        (i.path, i.blob.sha256) for i in items if i.role == DepositBlob.Role.DOCUMENT
    )
    return ReadmeDeposit(
        deposit.log_index,
        deposit.get_kind_display().lower(),
        deposit.organisation.slug,
        deposit.rfp.reference,
        format_time(deposit.deposited_at),
        archive,
        documents,
    )


def _record_download(
    *,
    deposits: list[Deposit],
    actor: Actor,
    target: models.Model,
    organisation: Organisation,
    bundle: Bundle | None,
    files: dict[str, str],
    event_data: dict[str, Any],
    audit_data: dict[str, Any],
) -> EscrowEvent:
    with transaction.atomic():
        event = escrow_event_log(
            action=EscrowEvent.Action.EVIDENCE_DOWNLOADED,
            deposits=deposits,
            actor=actor,
            bundle=bundle,
            data={**event_data, "files": files},
        )
        audit_record(
            actor=actor,
            action="evidence.downloaded",
            target=target,
            organisation=organisation,
            data={
                **audit_data,
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


def evidence_package_build(
    *,
    deposits: Sequence[Deposit],
    actor: Actor,
    target: models.Model,
    organisation: Organisation,
    heading: str,
    filename: str,
    bundle: Bundle | None = None,
    files: Sequence[PackageFile] = (),
    steps: str = "",
    event_data: dict[str, Any] | None = None,
    audit_data: dict[str, Any] | None = None,
) -> EvidencePackage:
    """Log the download of ``deposits`` (the caller checked that ``actor`` may
    have them) and assemble their package. The audit row is about ``target``
    in ``organisation``'s trail; ``heading`` and ``steps`` go into README.txt,
    ``files`` (and the registered installation files) into the zip, all bound
    by the receipt, which also carries ``event_data``."""
    deposits = list(deposits)
    if not deposits:
        raise ApplicationError("There is nothing in escrow to package.", code="empty")
    files = _with_installation_files(files)
    origin, key = log_origin(), log_verifier_key()
    signers = _allowed_signers(deposits)
    readme = readme_text(
        origin=origin,
        heading=heading,
        deposits=[_readme_row(d) for d in deposits],
        files=[ReadmeFile(f.name, f.description) for f in files],
        steps=steps,
    ).encode("utf-8")
    bound = (
        (README, readme),
        (ALLOWED_SIGNERS, signers),
        (LOG_KEY, key_file(key)),
        *((f.name, f.data) for f in files),
    )
    receipt = _record_download(
        deposits=deposits,
        actor=actor,
        target=target,
        organisation=organisation,
        bundle=bundle,
        files={name: hashlib.sha256(data).hexdigest() for name, data in bound},
        event_data=event_data or {},
        audit_data=audit_data or {},
    )
    checkpoint = _covering_checkpoint(receipt.log_index)
    size = checkpoint.size
    entries = [
        log_entry_json(
            d.log_index, bytes(d.leaf), log_inclusion_proof(d.log_index, size)
        )
        for d in deposits
    ]
    proof = log_inclusion_proof(receipt.log_index, size)
    download = log_entry_json(receipt.log_index, bytes(receipt.leaf), proof)
    document = evidence_document(origin=origin, deposits=entries, download=download)
    return EvidencePackage(
        subject=heading,
        filename=filename,
        deposits=deposits,
        receipt=receipt,
        origin=origin,
        checkpoint_size=size,
        checkpoint_note=checkpoint.note,
        verifier_key=key,
        allowed_signers=signers,
        readme=readme,
        evidence_json=document,
        blobs=_blobs(deposits),
        extra_files=tuple((f.name, f.data) for f in files),
    )


def _trail(actor: Actor, bundle: Bundle) -> Organisation:
    """The vendor's own download goes to its trail, others to the buyer's."""
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN) if actor else set()
    return (
        bundle.organisation
        if bundle.organisation_id in own
        else bundle.rfp.buyer_organisation
    )


def evidence_package_prepare(*, bundle: Bundle, actor: Actor) -> EvidencePackage:
    """Log the download and assemble the package of ``bundle``'s deposits
    (the caller checked that ``actor`` may have it)."""
    deposits = bundle_deposits(bundle)
    if not deposits:
        raise ApplicationError(
            "This bundle has no escrow deposit: only accepted bundles are deposited.",
            code="not_deposited",
        )
    return evidence_package_build(
        deposits=deposits,
        actor=actor,
        target=bundle,
        organisation=_trail(actor, bundle),
        heading=f"Bundle {bundle.public_id}",
        filename=bundle_package_filename(bundle),
        bundle=bundle,
        audit_data={"rfp": bundle.rfp.reference},
    )
