"""Acceptance 2: the evidence package of a real ingested bundle, downloaded
through the API, verifies offline; flipping one byte of any file in it,
removing a blob, adding a file or swapping in another checkpoint makes
verification fail with a message naming the cause."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.db import transaction
from django.test import Client

from accounts.models import AuditEvent, Organisation
from artifacts.lib.evidence.verify import EvidenceReport, verify_package
from artifacts.models import Deposit, EscrowEvent
from artifacts.models.log import Checkpoint, LogEntry
from artifacts.services.escrow import deposit_legal_hold_set
from artifacts.services.transparency import checkpoint_publish, log_append
from tests.escrow.package_support import (
    download,
    download_to,
    flip,
    flip_bit,
    members,
    replaced,
    without,
)

pytestmark = pytest.mark.django_db

LAYOUT = {
    "evidence.json",
    "log/checkpoint",
    "log/key.pub",
    "keys/allowed_signers",
    "README.txt",
}


@pytest.fixture
def package(deposit: Deposit, vendor_a: Any, client_for: Any, tmp_path: Path) -> Path:
    return download_to(client_for(vendor_a), deposit.bundle, tmp_path / "evidence.zip")


def _names_cause(report: EvidenceReport, name: str) -> bool:
    return any(name in f.subject or name in f.message for f in report.failures)


def test_downloaded_package_has_the_design_layout(
    package: Path, deposit: Deposit
) -> None:
    files = members(package)
    blobs = {f"blobs/{item.blob.sha256}" for item in deposit.items.all()}

    assert set(files) == LAYOUT | blobs
    evidence = json.loads(files["evidence.json"])
    assert evidence["schema"] == "reprogate.evidence/v1"
    assert evidence["checkpoint"] == "log/checkpoint"
    assert evidence["origin"] == "escrow.test/log"
    assert [d["leaf_index"] for d in evidence["deposits"]] == [deposit.log_index]
    assert b"reprogate evidence verify" in files["README.txt"]
    keys = [
        line
        for line in files["keys/allowed_signers"].decode().splitlines()
        if not line.startswith("#")
    ]
    assert len(keys) == 1  # the revoked and the expired key were not valid then
    assert keys[0].startswith("acme-flash ")
    assert keys[0].endswith(" corpus-vendor_a")


def test_downloaded_package_verifies(package: Path) -> None:
    report = verify_package(package)

    assert report.ok, [f"{f.subject}: {f.message}" for f in report.failures]
    assert report.origin == "escrow.test/log"
    subjects = " ".join(c.subject for c in report.checks)
    assert "log/checkpoint" in subjects
    assert "bundle " in subjects  # the vendor signature was checked


def test_download_is_audited_and_logged(
    deposit: Deposit, vendor_a: Any, auditor: Any, client_for: Any
) -> None:
    response = download(client_for(vendor_a), deposit.bundle)
    assert response.streaming  # sent as it is written, never whole in memory
    b"".join(response.streaming_content)

    event = EscrowEvent.objects.get(action="evidence.downloaded")
    audit = AuditEvent.objects.get(action="evidence.downloaded")
    assert event.actor == vendor_a
    assert event.bundle == deposit.bundle
    assert bytes(LogEntry.objects.get(index=event.log_index).leaf) == bytes(event.leaf)
    assert json.loads(bytes(event.leaf))["deposits"][0]["leaf_index"] == 0
    assert audit.actor == vendor_a
    assert audit.organisation == deposit.organisation  # the vendor's own receipt
    assert audit.data["deposits"] == [deposit.log_index]
    assert audit.data["event_index"] == event.log_index
    assert response["Content-Type"] == "application/zip"
    assert "attachment" in response["Content-Disposition"]


def test_each_download_is_a_new_log_entry_and_still_verifies(
    deposit: Deposit, vendor_a: Any, client_for: Any, tmp_path: Path
) -> None:
    client = client_for(vendor_a)
    first = download_to(client, deposit.bundle, tmp_path / "1.zip")
    second = download_to(client, deposit.bundle, tmp_path / "2.zip")

    assert EscrowEvent.objects.count() == 2
    assert verify_package(first).ok
    assert verify_package(second).ok
    assert Checkpoint.objects.count() >= 2  # each package's checkpoint covers it


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_flipping_a_byte_of_any_file_fails_naming_it(
    package: Path, tmp_path: Path, where: str
) -> None:
    names = sorted(members(package))
    for name in names:
        data = members(package)[name]
        position = {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[where]
        for flipper in (flip, flip_bit):
            tampered = replaced(
                package, tmp_path / "t.zip", name, flipper(data, position)
            )

            report = verify_package(tampered)

            assert not report.ok, f"{name}[{position}] flipped still verifies"
            assert _names_cause(report, name), (name, report.failures)


@pytest.mark.parametrize(
    ("name", "stride"),
    [
        ("log/checkpoint", 1),  # every byte: signature lines, padding bits
        ("log/key.pub", 1),
        ("evidence.json", 5),
        ("keys/allowed_signers", 3),
        ("README.txt", 11),
    ],
)
def test_flipping_a_bit_anywhere_in_the_small_files_fails(
    package: Path, tmp_path: Path, name: str, stride: int
) -> None:
    data = members(package)[name]
    for position in range(0, len(data), stride):
        tampered = replaced(package, tmp_path / "t.zip", name, flip_bit(data, position))

        report = verify_package(tampered)

        assert not report.ok, f"{name}[{position}] flipped still verifies"
        assert _names_cause(report, name), (name, position, report.failures)


def test_removing_a_blob_fails_naming_it(package: Path, tmp_path: Path) -> None:
    blobs = [name for name in members(package) if name.startswith("blobs/")]
    for name in blobs:
        tampered = without(package, tmp_path / "t.zip", name)

        report = verify_package(tampered)

        assert not report.ok
        assert any(
            f.subject == name and "missing" in f.message for f in report.failures
        ), report.failures


def test_a_blob_lost_from_storage_is_left_out_and_named_by_the_verifier(
    deposit: Deposit,
    vendor_a: Any,
    client_for: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    lost = deposit.items.exclude(role="archive").first().blob
    default_storage.delete(lost.storage_key)  # behind escrow's back

    package = download_to(client_for(vendor_a), deposit.bundle, tmp_path / "e.zip")

    files = members(package)  # still a whole zip
    assert f"blobs/{lost.sha256}" not in files
    assert set(files) >= LAYOUT
    report = verify_package(package)
    assert not report.ok
    assert [f.subject for f in report.failures] == [f"blobs/{lost.sha256}"]
    assert "missing" in report.failures[0].message
    assert lost.sha256 in caplog.text


@pytest.mark.parametrize("name", sorted(LAYOUT))
def test_removing_a_layout_file_fails_naming_it(
    package: Path, tmp_path: Path, name: str
) -> None:
    tampered = without(package, tmp_path / "t.zip", name)

    report = verify_package(tampered)

    assert not report.ok
    assert any(f.subject == name for f in report.failures)


def test_an_extra_file_fails(package: Path, tmp_path: Path) -> None:
    extra = "blobs/" + "0" * 64
    tampered = replaced(package, tmp_path / "t.zip", extra, b"x")

    report = verify_package(tampered)

    assert not report.ok
    assert any(f.subject == extra for f in report.failures)


def _swap_checkpoint(package: Path, tmp_path: Path, note: str) -> EvidenceReport:
    tampered = replaced(package, tmp_path / "s.zip", "log/checkpoint", note.encode())
    return verify_package(tampered)


def test_an_older_checkpoint_of_the_same_log_fails(
    deposit: Deposit, vendor_a: Any, client_for: Any, tmp_path: Path
) -> None:
    older = checkpoint_publish()  # covers the deposit, not the download
    package = download_to(client_for(vendor_a), deposit.bundle, tmp_path / "e.zip")
    assert verify_package(package).ok

    report = _swap_checkpoint(package, tmp_path, older.note)

    assert not report.ok
    assert any("not included in the checkpoint" in f.message for f in report.failures)


def test_a_newer_checkpoint_of_the_same_log_fails(
    package: Path, tmp_path: Path
) -> None:
    with transaction.atomic():
        log_append(b'{"later":"entry"}')
    newer = checkpoint_publish()

    report = _swap_checkpoint(package, tmp_path, newer.note)

    assert not report.ok
    assert any("not included in the checkpoint" in f.message for f in report.failures)


def test_a_checkpoint_of_another_log_fails(
    package: Path, tmp_path: Path, settings: Any, deposit: Deposit, buyer: Any
) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "other-log.pem")
    Checkpoint.objects.all()._raw_delete(Checkpoint.objects.db)  # a fresh log key
    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="x")
    foreign = checkpoint_publish()

    report = _swap_checkpoint(package, tmp_path, foreign.note)

    assert not report.ok
    assert any(
        f.subject == "log/checkpoint" and "does not verify" in f.message
        for f in report.failures
    )


def test_a_pinned_log_key_must_match(package: Path) -> None:
    key = members(package)["log/key.pub"].decode().strip()

    assert verify_package(package, log_key=key).ok
    report = verify_package(package, log_key=key[:-4] + "AAA=")
    assert any(f.subject == "log/key.pub" for f in report.failures)


def test_a_file_that_is_no_zip_fails(tmp_path: Path) -> None:
    path = tmp_path / "not.zip"
    path.write_bytes(b"PK\x03\x04 but not really")

    report = verify_package(path)

    assert not report.ok
    assert "not a readable zip" in report.failures[0].message


def test_a_corrupt_member_is_named(package: Path, tmp_path: Path) -> None:
    raw = bytearray(package.read_bytes())
    with zipfile.ZipFile(package) as archive:
        info = archive.getinfo("README.txt")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + 5] ^= 0xFF  # inside README.txt's compressed data
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(raw))

    report = verify_package(damaged)

    assert not report.ok
    assert _names_cause(report, "README.txt")


def test_a_rejected_bundle_has_no_deposit_and_no_package(
    tmp_path: Path, rfp: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    from tests.artifacts.ingest_support import build_bundle, ingest

    bundle = ingest(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, key="vendor_b"))
    assert bundle.status == "rejected"

    response = Client()
    response.force_login(vendor_a)
    assert download(response, bundle).status_code == 404
    assert not EscrowEvent.objects.exists()


def test_a_head_request_downloads_and_logs_nothing(
    deposit: Deposit, vendor_a: Any, client_for: Any
) -> None:
    response = client_for(vendor_a).head(
        f"/api/v1/bundles/{deposit.bundle.public_id}/evidence/"
    )

    assert response.status_code == 405
    assert not EscrowEvent.objects.exists()
