"""Acceptance 3 on S3, against moto's server on loopback (real HTTP):
``escrow_verify`` re-hashes every deposited object as the escrow reads it.

- A bucket without Object Lock (not versioned): overwriting an object changes
  the bytes read, deleting it loses them; both are detected, as is an object
  planted under ``blobs/``.
- A bucket with Object Lock (versioned): a new version written over a
  deposited key leaves the deposited version intact (reads by version id) but
  is reported, since reads by key get the new bytes; deleting the deposited
  version itself (GOVERNANCE mode, with the bypass) is detected as missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Organisation
from artifacts.models import Deposit, FixityFinding, FixityRun
from procurement.models import Rfp
from tests.escrow.conftest import ingest_and_deposit
from tests.s3.conftest import LOCKED_BUCKET, S3Setup, s3_options

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _log_key(settings: Any, tmp_path: Path) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    settings.ESCROW_FIXITY_GRACE_SECONDS = 0  # moto's objects are all brand new
    settings.BLOB_SWEEP_EVERY_HOURS = 0  # and no sweep is waited for


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


@pytest.fixture
def locked(settings: Any, s3_storage: S3Setup) -> S3Setup:
    """The default storage is the Object Lock bucket, GOVERNANCE mode (so that
    the test, like an administrator with the bypass permission, can delete a
    locked version)."""
    settings.ESCROW_OBJECT_LOCK_MODE = "GOVERNANCE"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": s3_options(s3_storage.endpoint, LOCKED_BUCKET),
        },
    }
    return s3_storage


def _deposit(tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any) -> Deposit:
    return ingest_and_deposit(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)


def _archive_key(deposit: Deposit) -> tuple[str, str]:
    blob = deposit.items.select_related("blob").get(role="archive").blob
    return blob.storage_key, blob.version_id


def _verify() -> set[str]:
    """The kinds found (none: the command exited 0)."""
    raised: CommandError | None = None
    try:
        call_command("escrow_verify")
    except CommandError as error:
        raised = error
    run = FixityRun.objects.order_by("-started_at", "-id").first()
    assert run is not None
    assert (raised is None) == run.intact
    assert raised is None or raised.returncode == 1
    return set(run.findings.values_list("kind", flat=True))


def test_untouched_s3_escrow_is_intact(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)

    assert _verify() == set()
    assert FixityRun.objects.get().bytes_hashed > 0
    assert all(item.blob.version_id for item in deposit.items.select_related("blob"))


def test_overwritten_object_in_a_plain_bucket_is_detected(
    s3_storage: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a_org: Any,
    vendor_a: Any,
    client_for: Any,
    auditor: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, _ = _archive_key(deposit)
    s3_storage.client.put_object(Bucket=s3_storage.bucket, Key=key, Body=b"swapped")

    assert _verify() == {"blob.altered"}
    assert FixityFinding.objects.get().log_index == deposit.log_index
    page = client_for(auditor).get("/dashboard/").content.decode()
    assert 'data-testid="fixity-alert" data-kind="blob.altered"' in page


def test_deleted_object_in_a_plain_bucket_is_detected(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, _ = _archive_key(deposit)
    s3_storage.client.delete_object(Bucket=s3_storage.bucket, Key=key)

    assert _verify() == {"blob.missing"}


def test_object_planted_under_blobs_is_detected(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    planted = f"blobs/ff/{'f' * 64}"
    s3_storage.client.put_object(Bucket=s3_storage.bucket, Key=planted, Body=b"x")

    assert _verify() == {"blob.extra"}
    assert FixityFinding.objects.get().subject == planted


def test_new_version_over_a_locked_key_is_reported_but_the_deposit_holds(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, version = _archive_key(deposit)
    locked.client.put_object(Bucket=LOCKED_BUCKET, Key=key, Body=b"swapped")

    assert _verify() == {"blob.overwritten"}
    assert version in FixityFinding.objects.get().detail


def test_a_new_version_of_the_same_bytes_is_no_overwrite(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    """Two uploads of one blob at once each write a version; the row records
    the first. Reads by key get the same bytes: nothing to report, until the
    key gets other bytes."""
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, version = _archive_key(deposit)
    same = locked.client.get_object(Bucket=LOCKED_BUCKET, Key=key, VersionId=version)
    again = locked.client.put_object(
        Bucket=LOCKED_BUCKET, Key=key, Body=same["Body"].read()
    )
    assert again["VersionId"] != version

    assert _verify() == set()
    locked.client.put_object(Bucket=LOCKED_BUCKET, Key=key, Body=b"swapped")
    assert _verify() == {"blob.overwritten"}
    locked.client.delete_object(Bucket=LOCKED_BUCKET, Key=key)  # a delete marker
    assert _verify() == {"blob.overwritten"}


def test_deleted_locked_version_is_detected(
    locked: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, version = _archive_key(deposit)
    locked.client.delete_object(
        Bucket=LOCKED_BUCKET,
        Key=key,
        VersionId=version,
        BypassGovernanceRetention=True,
    )

    assert _verify() == {"blob.missing"}


@pytest.fixture
def ranged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every blob of a few bytes or more read in ranges of 64 B (a large blob's
    path, at a test's size)."""
    from artifacts.services.fixity import blobs

    monkeypatch.setattr(blobs, "RANGED_MIN", 100)
    monkeypatch.setattr(blobs, "PART", 64)


def test_ranged_reads_of_locked_versions_hash_every_byte(
    ranged: None,
    locked: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a_org: Any,
    vendor_a: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, version = _archive_key(deposit)

    assert _verify() == set()
    blobs = [item.blob for item in deposit.items.select_related("blob")]
    assert FixityRun.objects.get().bytes_hashed == sum(b.size for b in blobs)
    assert max(b.size for b in blobs) > 64 * 3  # several ranges, some in flight
    locked.client.put_object(Bucket=LOCKED_BUCKET, Key=key, Body=b"swapped")
    assert _verify() == {"blob.overwritten"}
    assert version in FixityFinding.objects.get().detail


def test_ranged_reads_detect_a_shorter_or_changed_object(
    ranged: None,
    s3_storage: S3Setup,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a_org: Any,
    vendor_a: Any,
) -> None:
    deposit = _deposit(tmp_path, rfp, vendor_a_org, vendor_a)
    key, _ = _archive_key(deposit)
    stored = s3_storage.read(key)
    shorter = stored[: len(stored) // 2]
    s3_storage.client.put_object(Bucket=s3_storage.bucket, Key=key, Body=shorter)

    assert _verify() == {"blob.altered"}
    assert f"({len(shorter)} B)" in FixityFinding.objects.get().detail
    s3_storage.client.put_object(Bucket=s3_storage.bucket, Key=key, Body=b"")
    assert _verify() == {"blob.altered"}
    latest = FixityRun.objects.order_by("-started_at", "-id").first()
    assert latest is not None
    assert "(0 B)" in latest.findings.get().detail
