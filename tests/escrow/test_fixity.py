"""Acceptance 3 on local files: escrow stored by ``BlobFileSystemStorage`` in a
temporary folder, tampered with as an intruder would (bytes changed on disk,
files removed or added, rows edited or deleted with raw SQL), each detected by
``manage.py escrow_verify`` (exit status 1, naming the problem), recorded as a
run with findings, audited, and shown on the buyer's and auditor's
dashboards. Untouched escrow gives a clean run and exit status 0."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from accounts.models import AuditEvent
from artifacts.models import (
    Blob,
    Deposit,
    FixityFinding,
    FixityRun,
    LogEntry,
    LogNode,
)
from artifacts.services.escrow import deposit_legal_hold_set, deposit_retention_extend
from artifacts.services.transparency import checkpoint_publish
from artifacts.storage.blobs import blob_put
from artifacts.tasks import escrow_verify_task
from tests.escrow.conftest import blobs_on_disk, ingest_and_deposit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def disk(settings: Any, tmp_path: Path) -> Path:
    return blobs_on_disk(settings, tmp_path)


@pytest.fixture
def escrow(
    deposit: Deposit, tmp_path: Path, vendor_b: Any, vendor_b_org: Any, buyer: Any
) -> Deposit:
    """Two deposits, a legal hold, a retention extension and a checkpoint."""
    ingest_and_deposit(
        tmp_path / "b", deposit.rfp, vendor_b_org, vendor_b, key="vendor_b"
    )
    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="dispute")
    later = deposit.retain_until + timedelta(days=400)
    deposit_retention_extend(
        deposit=deposit, retain_until=later, actor=buyer, reason="claims period"
    )
    checkpoint_publish()
    deposit.refresh_from_db()
    return deposit


def verify(capsys: Any) -> tuple[int, str]:
    """``manage.py escrow_verify``: the exit status a shell would see (a
    ``CommandError``'s ``returncode``; ``run_from_argv`` is not used because it
    closes the database connections, and with them the test's transaction)
    and the output."""
    try:
        call_command("escrow_verify")
    except CommandError as error:
        status, message = error.returncode, str(error)
    else:
        status, message = 0, ""
    out = capsys.readouterr()
    return status, out.out + out.err + message


def kinds() -> set[str]:
    run = FixityRun.objects.order_by("-started_at", "-id").first()
    assert run is not None
    return set(run.findings.values_list("kind", flat=True))


def sql(statement: str, *params: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def _blob_path(disk: Path, deposit: Deposit, role: str = "archive") -> Path:
    """A blob of the deposit on disk: its archive is its own; its files are
    shared with vendor b's deposit (the same corpus files, stored once)."""
    item = deposit.items.select_related("blob").filter(role=role).first()
    assert item is not None
    return disk / item.blob.storage_key


def test_untouched_escrow_is_intact(
    escrow: Deposit, capsys: Any, client_for: Any, buyer: Any, auditor: Any
) -> None:
    status, output = verify(capsys)

    run = FixityRun.objects.get()
    assert (status, run.intact) == (0, True), output
    assert "Escrow is intact" in output
    assert run.deposits_checked == 2
    assert run.events_checked == 2
    assert run.blobs_checked == Blob.objects.count() > 2
    assert run.bytes_hashed == sum(Blob.objects.values_list("size", flat=True))
    assert run.log_entries_checked == run.log_size == LogEntry.objects.count()
    assert run.objects_listed == Blob.objects.count()
    for user in (buyer, auditor):
        page = client_for(user).get("/dashboard/").content.decode()
        assert 'data-testid="fixity-verdict">intact<' in page


def test_a_fixity_run_validates_as_a_model(escrow: Deposit, capsys: Any) -> None:
    verify(capsys)

    run = FixityRun.objects.get()

    run.full_clean()  # Model.clean is callable: the verdict has its own name
    assert run.intact


def test_changed_blob_bytes_on_disk_are_detected(
    escrow: Deposit, disk: Path, capsys: Any, client_for: Any, buyer: Any, auditor: Any
) -> None:
    path = _blob_path(disk, escrow)
    path.write_bytes(path.read_bytes() + b"\n# tampered")

    status, output = verify(capsys)

    assert status == 1
    assert "blob.altered" in output
    finding = FixityFinding.objects.get(kind="blob.altered")
    assert finding.log_index == escrow.log_index
    assert finding.buyer_organisation == escrow.rfp.buyer_organisation
    for user in (buyer, auditor):
        page = client_for(user).get("/dashboard/").content.decode()
        assert 'data-testid="fixity-alert" data-kind="blob.altered"' in page


def test_a_changed_shared_blob_is_reported_for_each_deposit_naming_it(
    escrow: Deposit, disk: Path, capsys: Any
) -> None:
    _blob_path(disk, escrow, "file").write_bytes(b"swapped")

    status, _ = verify(capsys)

    altered = FixityFinding.objects.filter(kind="blob.altered")
    assert status == 1
    assert {f.log_index for f in altered} == set(
        Deposit.objects.values_list("log_index", flat=True)
    )


def test_deleted_blob_file_is_detected(
    escrow: Deposit, disk: Path, capsys: Any
) -> None:
    _blob_path(disk, escrow).unlink()

    status, _ = verify(capsys)

    assert (status, kinds()) == (1, {"blob.missing"})


def test_extra_stored_object_is_detected_once_a_sweep_should_have_taken_it(
    escrow: Deposit, disk: Path, capsys: Any
) -> None:
    stray = disk / "blobs" / "ab" / ("ab" + "0" * 62)
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"planted")
    assert verify(capsys)[0] == 0  # fresh: an ingest may be about to record it
    past_grace = time.time() - 2 * 3600
    os.utime(stray, (past_grace, past_grace))
    assert verify(capsys)[0] == 0  # a failed ingest's bytes, the next sweep's
    past_sweep = time.time() - (1 + 24 + 1) * 3600
    os.utime(stray, (past_sweep, past_sweep))

    status, output = verify(capsys)

    assert (status, kinds()) == (1, {"blob.extra"})
    assert f"blobs/ab/ab{'0' * 62}" in output
    assert FixityFinding.objects.get(kind="blob.extra").buyer_organisation is None


def test_blob_row_no_deposit_names_is_detected(
    escrow: Deposit, tmp_path: Path, capsys: Any
) -> None:
    data = b"bytes stored but never deposited"
    (loose := tmp_path / "loose.bin").write_bytes(data)
    blob_put(loose, hashlib.sha256(data).hexdigest(), len(data))

    status, _ = verify(capsys)

    assert (status, kinds()) == (1, {"blob.undeposited"})


COLUMN_EDITS: dict[str, Any] = {
    "leaf": lambda d: bytes(d.leaf).replace(b'"kind":"bundle"', b'"kind":"report"'),
    "kind": lambda d: "report",
    "retain_until": lambda d: d.retain_until - timedelta(days=3650),
    "legal_hold": lambda d: False,
    "leaf_hash": lambda d: "0" * 64,
}


@pytest.mark.parametrize("column", sorted(COLUMN_EDITS))
def test_deposit_row_edited_with_sql_is_detected(
    escrow: Deposit, capsys: Any, client_for: Any, auditor: Any, column: str
) -> None:
    statement = f"UPDATE artifacts_deposit SET {column} = %s WHERE id = %s"  # noqa: S608
    sql(statement, COLUMN_EDITS[column](escrow), escrow.pk)

    status, output = verify(capsys)

    assert (status, kinds()) == (1, {"row.altered"}), output
    assert FixityFinding.objects.get().subject == f"deposit #{escrow.log_index}"
    page = client_for(auditor).get("/dashboard/").content.decode()
    assert 'data-kind="row.altered"' in page


def test_deposit_rows_deleted_with_sql_are_detected(
    escrow: Deposit, capsys: Any
) -> None:
    events = set(escrow.events.values_list("log_index", flat=True))
    sql("DELETE FROM artifacts_escrowevent WHERE deposit_id = %s", escrow.pk)
    sql("DELETE FROM artifacts_depositblob WHERE deposit_id = %s", escrow.pk)
    sql("DELETE FROM artifacts_deposit WHERE id = %s", escrow.pk)

    status, output = verify(capsys)

    assert status == 1
    assert kinds() == {"row.missing", "blob.undeposited"}, output
    missing = FixityFinding.objects.filter(kind="row.missing")
    assert len(events) == 2  # the legal hold and the retention extension
    assert {f.log_index for f in missing} == {escrow.log_index, *events}
    assert {f.rfp_reference for f in missing} == {escrow.rfp.reference}


def test_blob_row_of_a_deposit_deleted_with_sql_is_detected(
    escrow: Deposit, capsys: Any
) -> None:
    item = escrow.items.filter(role="file").first()
    sql("DELETE FROM artifacts_depositblob WHERE id = %s", item.pk)

    status, output = verify(capsys)

    assert status == 1
    assert "row.altered" in kinds(), output
    assert (
        "logged but not in the rows"
        in FixityFinding.objects.get(kind="row.altered").detail
    )


def test_log_entry_deleted_with_sql_is_detected(escrow: Deposit, capsys: Any) -> None:
    sql('DELETE FROM artifacts_logentry WHERE "index" = %s', escrow.log_index)

    status, _ = verify(capsys)

    assert status == 1
    assert {"log.gap", "log.root_mismatch", "row.unlogged"} <= kinds()


def test_log_entry_rewritten_with_sql_is_detected(escrow: Deposit, capsys: Any) -> None:
    entry = LogEntry.objects.get(index=escrow.log_index)
    forged = bytes(entry.leaf).replace(b'"kind":"bundle"', b'"kind":"report"')
    sql("UPDATE artifacts_logentry SET leaf = %s WHERE id = %s", forged, entry.pk)

    status, _ = verify(capsys)

    assert status == 1
    assert {"log.entry_altered", "log.root_mismatch", "row.altered"} <= kinds()


def test_stored_tree_node_altered_with_sql_is_detected(
    escrow: Deposit, capsys: Any
) -> None:
    node = LogNode.objects.filter(level=1).first()
    sql("UPDATE artifacts_lognode SET hash = %s WHERE id = %s", b"\x00" * 32, node.pk)

    status, _ = verify(capsys)

    assert (status, kinds()) == (1, {"log.node_altered"})


def test_legal_hold_lifted_with_sql_is_detected(escrow: Deposit, capsys: Any) -> None:
    sql("UPDATE artifacts_deposit SET legal_hold = %s WHERE id = %s", False, escrow.pk)

    status, _ = verify(capsys)

    assert status == 1
    assert "hold off" in FixityFinding.objects.get(kind="row.altered").detail


def test_checkpoint_rewritten_with_sql_is_detected(
    escrow: Deposit, capsys: Any
) -> None:
    sql("UPDATE artifacts_checkpoint SET note = %s", "forged\n")

    status, _ = verify(capsys)

    assert (status, kinds()) == (1, {"log.checkpoint_invalid"})


def test_each_finding_is_audited_in_the_buyers_trail(
    escrow: Deposit, disk: Path, capsys: Any
) -> None:
    _blob_path(disk, escrow).write_bytes(b"swapped")

    verify(capsys)

    audited = AuditEvent.objects.get(action="escrow.fixity_finding")
    assert audited.organisation == escrow.rfp.buyer_organisation
    assert audited.data["kind"] == "blob.altered"
    assert AuditEvent.objects.filter(action="escrow.fixity_checked").count() == 1


def test_findings_about_a_buyers_escrow_stay_with_that_buyer(
    escrow: Deposit,
    disk: Path,
    capsys: Any,
    client_for: Any,
    outsider: Any,
    vendor_a: Any,
) -> None:
    _blob_path(disk, escrow).write_bytes(b"swapped")
    verify(capsys)

    other_buyer = client_for(outsider).get("/dashboard/").content.decode()
    vendor = client_for(vendor_a).get("/dashboard/").content.decode()

    assert 'data-testid="fixity-verdict"' in other_buyer
    assert 'data-testid="fixity-alert"' not in other_buyer
    assert 'data-testid="escrow-fixity"' not in vendor
    run = FixityRun.objects.get()
    url = f"/artifacts/escrow/fixity/{run.public_id}/"
    assert client_for(vendor_a).get(url).status_code == 404
    page = client_for(outsider).get(url)
    assert page.status_code == 200
    assert 'data-testid="fixity-finding"' not in page.content.decode()


def test_the_daily_task_records_a_scheduled_run(escrow: Deposit, settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["escrow-fixity"]

    found = escrow_verify_task()

    assert entry["task"] == "artifacts.escrow_verify"
    assert entry["schedule"] == 24 * 3600.0
    assert found == 0
    assert FixityRun.objects.get().trigger == "schedule"


def test_fixity_page_lists_runs_for_the_buyer_side_only(
    escrow: Deposit,
    disk: Path,
    capsys: Any,
    client_for: Any,
    auditor: Any,
    vendor_a: Any,
) -> None:
    verify(capsys)
    _blob_path(disk, escrow).write_bytes(b"swapped")
    verify(capsys)

    page = client_for(auditor).get("/artifacts/escrow/fixity/").content.decode()

    assert 'data-testid="fixity-history"' in page
    assert 'data-kind="blob.altered"' in page
    assert client_for(vendor_a).get("/artifacts/escrow/fixity/").status_code == 404


@pytest.mark.parametrize("folder", ["00", "a9", "aa", "af", "fe", "ff", "zz", "a"])
def test_a_folders_known_keys_are_those_of_the_rows_whose_digest_starts_with_it(
    folder: str,
) -> None:
    from django.utils import timezone

    from artifacts.models import Blob
    from artifacts.services.fixity.blobs import _keys_in_folder

    starts = ["00", "0f", "a9", "a:", "aA", "aa", "ab", "af", "ag", "fe", "ff", "fg"]
    starts += ["g0", "zz", "a"]  # not all hex: rows someone altered
    for n, start in enumerate(starts):
        digest = (start + f"{n:x}" * 64)[:64]
        key = f"blobs/{start}/{digest}"
        Blob.objects.create(
            sha256=digest, size=1, storage_key=key, created_at=timezone.now()
        )

    found = _keys_in_folder(folder)

    rows = Blob.objects.values_list("sha256", "storage_key")
    assert found == {key for digest, key in rows if digest.startswith(folder)}
    assert found  # every folder named has rows
