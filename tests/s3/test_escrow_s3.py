"""Escrow on S3 Object Lock, against moto's server on loopback (real HTTP): a
deposit's blobs get retention until ``retain_until`` and a legal hold that
mirrors the deposit's, their version ids are recorded, and evidence is read by
version id (a later write to the same key changes nothing)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from accounts.models import Organisation
from artifacts.lib.evidence.verify import verify_package
from artifacts.models import Blob, Deposit
from artifacts.services.escrow import deposit_legal_hold_set, deposit_retention_extend
from procurement.models import Rfp
from tests.escrow.conftest import ingest_and_deposit, open_bids
from tests.escrow.package_support import download_to
from tests.s3.conftest import LOCKED_BUCKET, S3Setup, s3_options

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _log_key(settings: Any, tmp_path: Path) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")


@pytest.fixture
def locked(settings: Any, s3_storage: S3Setup) -> S3Setup:
    """The default storage is the Object Lock bucket."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": s3_options(s3_storage.endpoint, LOCKED_BUCKET),
        },
    }
    return s3_storage


@pytest.fixture
def rfp(
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer_org: Organisation,
) -> Rfp:
    from tests.artifacts.ingest_support import open_rfp, register_corpus_keys

    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    return open_rfp(vendor_a_org, vendor_b_org, buyer=buyer_org)


def _deposit(tmp_path: Path, rfp: Rfp, org: Organisation, user: Any) -> Deposit:
    return ingest_and_deposit(tmp_path, rfp, org, user)


def _heads(s3: S3Setup, deposit: Deposit) -> list[dict[str, Any]]:
    return [
        s3.client.head_object(
            Bucket=LOCKED_BUCKET,
            Key=item.blob.storage_key,
            VersionId=item.blob.version_id,
        )
        for item in deposit.items.select_related("blob")
    ]


def test_deposit_locks_every_blob_version_until_retain_until(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)

    heads = _heads(locked, deposit)
    assert heads
    assert not Blob.objects.filter(version_id="").exists()
    for head in heads:
        assert head["ObjectLockMode"] == "COMPLIANCE"
        assert abs(
            head["ObjectLockRetainUntilDate"] - deposit.retain_until
        ) < timedelta(seconds=1)
        assert head.get("ObjectLockLegalHoldStatus", "OFF") == "OFF"


def test_a_locked_version_cannot_be_deleted(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    blob = deposit.items.first().blob

    with pytest.raises(ClientError) as refused:
        locked.client.delete_object(
            Bucket=LOCKED_BUCKET, Key=blob.storage_key, VersionId=blob.version_id
        )

    assert refused.value.response["Error"]["Code"] == "AccessDenied"


def test_governance_mode_follows_the_setting(
    locked: S3Setup,
    settings: Any,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:
    settings.ESCROW_OBJECT_LOCK_MODE = "GOVERNANCE"

    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)

    assert {h["ObjectLockMode"] for h in _heads(locked, deposit)} == {"GOVERNANCE"}


def test_legal_hold_and_retention_are_mirrored(
    locked: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    buyer: Any,
    vendor_a_org: Organisation,
    django_capture_on_commit_callbacks: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    later = deposit.retain_until + timedelta(days=365)

    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="dispute")
    held = _heads(locked, deposit)
    deposit_retention_extend(
        deposit=deposit, retain_until=later, actor=buyer, reason="r"
    )
    extended = _heads(locked, deposit)
    with django_capture_on_commit_callbacks(execute=True):
        deposit_legal_hold_set(deposit=deposit, hold=False, actor=buyer, reason="ok")
    released = _heads(locked, deposit)

    assert {h["ObjectLockLegalHoldStatus"] for h in held} == {"ON"}
    assert all(
        abs(h["ObjectLockRetainUntilDate"] - later) < timedelta(seconds=1)
        for h in extended
    )
    assert {h["ObjectLockLegalHoldStatus"] for h in released} == {"OFF"}


def test_a_shared_blob_stays_held_while_another_deposit_holds_it(
    locked: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    buyer: Any,
    vendor_a_org: Organisation,
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = _deposit(tmp_path / "1", rfp, vendor_a_org, vendor_a)
    second = ingest_and_deposit(
        tmp_path / "2", rfp, vendor_a_org, vendor_a, extra_files={"more.txt": b"2"}
    )
    deposit_legal_hold_set(deposit=first, hold=True, actor=buyer, reason="a")
    deposit_legal_hold_set(deposit=second, hold=True, actor=buyer, reason="b")

    with django_capture_on_commit_callbacks(execute=True):
        deposit_legal_hold_set(deposit=first, hold=False, actor=buyer, reason="a done")

    shared = {i.blob_id for i in first.items.all()} & {
        i.blob_id for i in second.items.all()
    }
    assert shared
    for item, head in zip(
        first.items.select_related("blob"), _heads(locked, first), strict=True
    ):
        expected = "ON" if item.blob_id in shared else "OFF"
        assert head["ObjectLockLegalHoldStatus"] == expected, item.path


def test_evidence_is_read_by_version_id(
    locked: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    vendor_a_org: Organisation,
    client_for: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    blob = deposit.items.first().blob
    # A later write to the same key makes a new current version.
    locked.client.put_object(Bucket=LOCKED_BUCKET, Key=blob.storage_key, Body=b"forged")

    package = download_to(client_for(vendor_a), deposit.bundle, tmp_path / "e.zip")

    report = verify_package(package)
    assert report.ok, report.failures


def test_a_bucket_without_object_lock_is_left_alone(
    s3_storage: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    auditor: Any,
    vendor_a_org: Organisation,
    client_for: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    open_bids(rfp)

    package = download_to(client_for(auditor), deposit.bundle, tmp_path / "e.zip")

    assert not Blob.objects.exclude(version_id="").exists()
    assert verify_package(package).ok
