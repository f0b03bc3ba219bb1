"""``deposit_bundle`` / ``deposit_create``: a real ingested bundle deposited in
the accept transaction, its canonical leaf in the log, retention from the
contract terms or the setting, and immutability."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from accounts.exceptions import ApplicationError, StateConflict
from accounts.models import AuditEvent, Organisation
from artifacts.conf import add_years
from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import parse_time
from artifacts.models import Blob, Bundle, Deposit, DepositBlob
from artifacts.models.bundles import BlobIsImmutable
from artifacts.models.escrow import EscrowIsImmutable
from artifacts.models.log import LogEntry
from artifacts.services.escrow import deposit_bundle, deposit_create
from artifacts.services.escrow_records import DepositItem
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.escrow.conftest import ingest_and_deposit

pytestmark = pytest.mark.django_db


def _record(deposit: Deposit) -> dict[str, Any]:
    return json.loads(bytes(deposit.leaf))


def test_deposit_leaf_is_canonical_json_naming_every_blob(deposit: Deposit) -> None:
    record = _record(deposit)
    bundle = deposit.bundle

    assert bytes(deposit.leaf) == canonical_json(record)
    assert record["schema"] == "reprogate.deposit/v1"
    assert record["kind"] == "bundle"
    assert record["organisation"] == "acme-flash"
    assert record["rfp"] == bundle.rfp.reference
    assert record["bundle"] == str(bundle.public_id)
    assert record["deposit"] == str(deposit.public_id)
    assert record["manifest_sha256"] == bundle.manifest_sha256
    assert parse_time(record["time"]) == deposit.deposited_at
    archive, *files = record["blobs"]
    assert archive == {"role": "archive", "sha256": bundle.sha256, "size": bundle.size}
    assert {f["path"]: (f["sha256"], f["size"]) for f in files} == {
        path: (hashlib.sha256(data).hexdigest(), len(data))
        for path, data in good_files().items()
    }


def test_deposit_is_the_log_entry_at_its_index(deposit: Deposit) -> None:
    entry = LogEntry.objects.get(index=deposit.log_index)

    assert bytes(entry.leaf) == bytes(deposit.leaf)
    expected = hashlib.sha256(b"\x00" + bytes(deposit.leaf)).hexdigest()
    assert deposit.leaf_hash == expected == bytes(entry.leaf_hash).hex()


def test_deposit_rows_name_the_blobs_in_leaf_order(deposit: Deposit) -> None:
    items = list(deposit.items.order_by("position").select_related("blob"))
    names = [(i.role, i.path, i.blob.sha256) for i in items]

    assert names == [
        (b["role"], b.get("path", ""), b["sha256"]) for b in _record(deposit)["blobs"]
    ]


def test_a_bundles_deposit_is_audited_in_its_acceptance_row(
    deposit: Deposit, vendor_a: Any
) -> None:
    event = AuditEvent.objects.get(action="bundle.accepted")

    assert event.actor == vendor_a
    assert event.organisation == deposit.organisation
    assert event.target_id == str(deposit.bundle.pk)
    assert event.data["sha256"] == deposit.bundle.sha256
    assert event.data["files"] == deposit.bundle.files.count()
    assert event.data["deposit"] == str(deposit.public_id)
    assert event.data["log_index"] == deposit.log_index
    assert event.data["blobs"] == deposit.items.count()  # the archive and its files


def test_a_deposit_on_its_own_is_audited(deposit: Deposit, vendor_a: Any) -> None:
    later = deposit_create(
        kind=Deposit.Kind.REPORT,
        organisation=deposit.organisation,
        rfp=deposit.rfp,
        items=[DepositItem(deposit.bundle.archive_blob, DepositBlob.Role.FILE)],
        actor=vendor_a,
    )

    event = AuditEvent.objects.get(action="deposit.created")
    assert (event.actor, event.organisation) == (vendor_a, deposit.organisation)
    assert event.target_id == str(later.pk)
    assert event.data["log_index"] == later.log_index


def test_retention_defaults_to_ten_years(deposit: Deposit) -> None:
    assert deposit.retain_until == add_years(deposit.deposited_at, 10)
    assert _record(deposit)["retain_until"].startswith(
        f"{deposit.deposited_at.year + 10}-"
    )


def test_retention_follows_the_setting(
    settings: Any, tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    settings.ESCROW_RETENTION_YEARS = 3

    deposit = ingest_and_deposit(tmp_path, rfp, vendor_a_org, vendor_a)

    assert deposit.retain_until == add_years(deposit.deposited_at, 3)


def test_retention_follows_the_contract_terms_when_they_name_it(
    deposit: Deposit, vendor_a: Any
) -> None:
    rfp = deposit.rfp
    Rfp.objects.filter(pk=rfp.pk).update(escrow_retention_years=25)
    rfp.refresh_from_db()  # the contract terms name 25 years
    report = deposit.bundle.archive_blob

    later = deposit_create(
        kind=Deposit.Kind.REPORT,
        organisation=deposit.organisation,
        rfp=rfp,
        items=[DepositItem(report, DepositBlob.Role.FILE, "report.pdf")],
        actor=vendor_a,
    )

    assert later.retain_until == add_years(later.deposited_at, 25)


def test_add_years_keeps_29_february_inside_the_month() -> None:
    leap = datetime(2028, 2, 29, 12, tzinfo=UTC)

    assert add_years(leap, 1) == datetime(2029, 2, 28, 12, tzinfo=UTC)
    assert add_years(leap, 4) == leap.replace(year=2032)


def test_the_ingest_deposits_an_accepted_bundle_in_its_transaction(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    bundle = ingest(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    deposit = Deposit.objects.get(bundle=bundle)
    assert deposit.deposited_by == vendor_a
    assert LogEntry.objects.get(index=deposit.log_index).leaf_hash is not None
    rows = AuditEvent.objects.filter(action__in=["bundle.accepted", "deposit.created"])
    assert [e.action for e in rows] == ["bundle.accepted"]  # one action, one row


def test_deposit_rolls_back_with_the_callers_transaction(
    deposit: Deposit, vendor_a: Any
) -> None:
    entries = LogEntry.objects.count()

    def fails_after_depositing() -> None:
        with transaction.atomic():
            deposit_create(
                kind=Deposit.Kind.REPORT,
                organisation=deposit.organisation,
                rfp=deposit.rfp,
                items=[DepositItem(deposit.bundle.archive_blob, DepositBlob.Role.FILE)],
                actor=vendor_a,
            )
            raise RuntimeError("the caller failed after depositing")

    with pytest.raises(RuntimeError):
        fails_after_depositing()

    assert Deposit.objects.count() == 1
    assert LogEntry.objects.count() == entries
    assert not AuditEvent.objects.filter(action="deposit.created").exists()


def test_a_bundle_is_deposited_once(deposit: Deposit, vendor_a: Any) -> None:
    with pytest.raises(StateConflict) as raised:
        deposit_bundle(bundle=deposit.bundle, actor=vendor_a)

    assert raised.value.code == "bundle_already_deposited"
    assert Deposit.objects.count() == 1


def test_the_database_refuses_a_second_deposit_of_a_bundle(deposit: Deposit) -> None:
    duplicate = Deposit(
        kind="bundle",
        organisation=deposit.organisation,
        rfp=deposit.rfp,
        bundle=deposit.bundle,
        deposited_at=deposit.deposited_at,
        leaf=b"{}",
        leaf_hash="0" * 64,
        log_index=deposit.log_index + 100,
        retain_until=deposit.retain_until,
    )

    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()


def test_a_rejected_bundle_is_not_deposited(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    path = build_bundle(tmp_path, key="vendor_b")  # signed by the other vendor
    bundle = ingest(rfp, vendor_a_org, vendor_a, path)
    assert bundle.status == Bundle.Status.REJECTED

    with pytest.raises(ApplicationError) as raised:
        deposit_bundle(bundle=bundle, actor=vendor_a)

    assert raised.value.code == "bundle_not_accepted"
    assert not LogEntry.objects.exists()


def test_a_deposit_names_at_least_one_blob(
    rfp: Rfp, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ApplicationError) as raised:
        deposit_create(
            kind="report", organisation=vendor_a_org, rfp=rfp, items=[], actor=None
        )

    assert raised.value.code == "deposit_empty"


def test_deposit_create_takes_generic_blobs(
    deposit: Deposit, rfp: Rfp, vendor_a_org: Organisation
) -> None:
    blob = Blob.objects.get(sha256=deposit.bundle.sha256)
    items = [DepositItem(blob, DepositBlob.Role.REPORT, "reports/run-1.pdf")]

    report = deposit_create(
        kind="report", organisation=vendor_a_org, rfp=rfp, items=items, actor=None
    )

    assert report.log_index == deposit.log_index + 1
    assert _record(report)["blobs"] == [
        {
            "path": "reports/run-1.pdf",
            "role": "report",
            "sha256": blob.sha256,
            "size": blob.size,
        }
    ]
    assert "bundle" not in _record(report)


# --- immutability -------------------------------------------------------------------


def test_a_stored_deposit_cannot_be_changed(deposit: Deposit) -> None:
    deposit.leaf = b'{"kind":"forged"}'

    with pytest.raises(EscrowIsImmutable):
        deposit.save()
    with pytest.raises(EscrowIsImmutable):
        deposit.save(update_fields=["leaf"])
    with pytest.raises(EscrowIsImmutable):
        Deposit.objects.filter(pk=deposit.pk).update(log_index=99)

    deposit.refresh_from_db()
    assert json.loads(bytes(deposit.leaf))["kind"] == "bundle"


def test_deposits_and_their_blobs_cannot_be_deleted(deposit: Deposit) -> None:
    item = deposit.items.first()

    with pytest.raises(EscrowIsImmutable):
        deposit.delete()
    with pytest.raises(EscrowIsImmutable):
        Deposit.objects.all().delete()
    with pytest.raises(EscrowIsImmutable):
        item.delete()
    with pytest.raises(EscrowIsImmutable):
        DepositBlob.objects.all().delete()

    assert Deposit.objects.count() == 1


def test_a_deposited_blob_is_protected(deposit: Deposit) -> None:
    blob = deposit.items.first().blob

    with pytest.raises(BlobIsImmutable), transaction.atomic():
        blob.delete()
    with pytest.raises(ProtectedError), transaction.atomic():
        Blob.objects.filter(pk=blob.pk).delete()  # the deposit's rows PROTECT it
    blob.size += 1
    with pytest.raises(BlobIsImmutable):
        blob.save()
    assert Blob.objects.get(pk=blob.pk).size == blob.size - 1


def test_only_a_blobs_version_id_may_be_filled_in(deposit: Deposit) -> None:
    blob = deposit.items.first().blob
    blob.version_id = "v-1"

    blob.save(update_fields=["version_id"])

    assert Blob.objects.get(pk=blob.pk).version_id == "v-1"
