"""``blob_sweep``: objects under ``blobs/`` that no ``Blob`` row refers to are
deleted once older than the grace period; blobs with rows (bundle files,
archives, deposits, anything recorded) never are; one audit row per run that
deleted something. Time passes by the ``now`` given, never by waiting."""

from __future__ import annotations

import hashlib
import logging
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage, storages
from django.utils import timezone

from accounts.models import AuditEvent, Organisation
from artifacts.models import Blob, Bundle, DepositBlob
from artifacts.services.blob_sweep import blob_sweep
from artifacts.services.fixity.report import grace_period
from artifacts.storage import blobs as blobs_module
from artifacts.storage.blobs import blob_put, blob_record, blob_write
from artifacts.tasks import blob_sweep_task
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, noise
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    open_rfp,
    register_corpus_keys,
    storage_names,
)

pytestmark = pytest.mark.django_db


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _later() -> datetime:
    """Just past the grace period of everything stored so far."""
    return timezone.now() + grace_period() + timedelta(seconds=1)


def _unrecorded(data: bytes) -> str:
    """Bytes a failed ingest left: stored at their content key, with no row."""
    return blob_write(data, _sha(data), len(data)).key


@pytest.fixture
def rfp(vendor_a: Any, vendor_a_org: Organisation) -> Rfp:
    register_corpus_keys([vendor_a_org], vendor_a)
    return open_rfp(vendor_a_org)


# --- what is deleted, what is kept ---------------------------------------------------


def test_sweep_deletes_an_unrecorded_blob_past_the_grace_period() -> None:
    key = _unrecorded(b"left by a failed ingest")

    report = blob_sweep(now=_later())

    assert report.deleted == [key]
    assert report.listed == 1
    assert storage_names() == []


def test_sweep_keeps_an_unrecorded_blob_within_the_grace_period() -> None:
    key = _unrecorded(b"an ingest may be about to record it")

    report = blob_sweep(now=timezone.now() + grace_period() - timedelta(minutes=1))

    assert (report.deleted, report.recent) == ([], 1)
    assert storage_names() == [key]


def test_sweep_never_deletes_a_recorded_blob(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    files = good_files() | {"traces/t.bin": noise(5000, "t")}
    bundle = ingest(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))
    path = tmp_path / "output.json"
    path.write_bytes(b'{"a run output": 1}')
    blob_put(path, _sha(path.read_bytes()), path.stat().st_size)
    stored = storage_names()

    report = blob_sweep(now=_later() + timedelta(days=3650))

    assert bundle.status == Bundle.Status.ACCEPTED
    assert DepositBlob.objects.filter(blob=bundle.archive_blob).exists()
    assert stored == sorted(Blob.objects.values_list("storage_key", flat=True))
    assert (report.listed, report.deleted) == (len(stored), [])
    assert storage_names() == stored
    assert Blob.objects.count() == len(stored)  # rows are never swept


def test_sweep_keeps_bytes_a_row_names_by_digest_under_another_key() -> None:
    data = b"a row whose storage key is not its content key"
    key = _unrecorded(data)
    Blob.objects.create(sha256=_sha(data), size=len(data), storage_key="elsewhere")

    report = blob_sweep(now=_later())

    assert report.deleted == []
    assert storage_names() == [key]


def test_sweep_deletes_unrecorded_names_that_are_not_content_keys() -> None:
    for name in ("blobs/stray", "blobs/ab/not-a-digest", "blobs/ab/cd/deeper"):
        default_storage.save(name, ContentFile(b"no row names this"))
    kept = blob_record(blob_write(b"recorded", _sha(b"recorded"), 8)).storage_key

    report = blob_sweep(now=_later())

    assert sorted(report.deleted) == [
        "blobs/ab/cd/deeper", "blobs/ab/not-a-digest", "blobs/stray",
    ]  # fmt: skip
    assert storage_names() == [kept]


def test_sweep_leaves_what_is_outside_blobs_alone() -> None:
    default_storage.save("bids/report.pdf", ContentFile(b"a bid document"))

    report = blob_sweep(now=_later())

    assert (report.listed, report.deleted) == (0, [])
    assert storage_names() == ["bids/report.pdf"]


def test_sweep_on_local_files_deletes_a_write_cut_short(
    settings: Any, tmp_path: Path
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    folder = tmp_path / "media/blobs/ab"
    folder.mkdir(parents=True)
    (folder / ".incoming-x1y2").write_bytes(b"half a blob")  # a writer killed
    recent = _unrecorded(b"just written")
    hour_ago = (timezone.now() - timedelta(hours=1)).timestamp()
    os.utime(folder / ".incoming-x1y2", (hour_ago, hour_ago))

    report = blob_sweep(now=timezone.now() + grace_period() - timedelta(minutes=30))

    assert report.deleted == ["blobs/ab/.incoming-x1y2"]
    assert not (folder / ".incoming-x1y2").exists()
    assert storage_names() == [recent]


# --- races and failures ---------------------------------------------------------------


def test_sweep_skips_a_blob_recorded_after_the_folder_was_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = b"found stored by an ingest that records it now"
    key = _unrecorded(data)
    real_modified_time = default_storage.get_modified_time

    def recorded_meanwhile(name: str) -> datetime:
        Blob.objects.create(sha256=_sha(data), size=len(data), storage_key=key)
        return real_modified_time(name)

    monkeypatch.setattr(storages["default"], "get_modified_time", recorded_meanwhile)

    report = blob_sweep(now=_later())

    assert report.deleted == []
    assert storage_names() == [key]


def test_sweep_reports_a_blob_recorded_while_it_was_deleted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data = b"recorded between the sweep's last look and its delete"
    key = _unrecorded(data)
    real_delete = default_storage.delete

    def delete_as_a_row_commits(name: str) -> None:
        real_delete(name)
        Blob.objects.create(sha256=_sha(data), size=len(data), storage_key=key)

    monkeypatch.setattr(storages["default"], "delete", delete_as_a_row_commits)

    with caplog.at_level(logging.ERROR, logger="artifacts.services.blob_sweep"):
        report = blob_sweep(now=_later())

    assert report.recorded_meanwhile == [key]
    assert f"{key} was recorded while it was deleted" in caplog.text


def test_sweep_goes_on_past_an_object_it_cannot_delete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = _unrecorded(b"refused"), _unrecorded(b"deleted")
    real_delete = default_storage.delete

    def refuse_the_first(name: str) -> None:
        if name == first:
            raise OSError("permission denied")
        real_delete(name)

    monkeypatch.setattr(storages["default"], "delete", refuse_the_first)

    report = blob_sweep(now=_later())

    assert (report.deleted, report.failed) == ([second], 1)
    assert storage_names() == [first]


def test_blob_put_writes_back_bytes_swept_while_it_recorded_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    data = b"a run output identical to bytes a failed ingest left"
    key = _unrecorded(data)
    path = tmp_path / "output.bin"
    path.write_bytes(data)
    real_record = blobs_module.blob_record

    def recorded_as_the_sweep_deletes(stored: Any) -> Blob:
        default_storage.delete(key)  # the sweep looked before the row existed
        return real_record(stored)

    monkeypatch.setattr(blobs_module, "blob_record", recorded_as_the_sweep_deletes)

    with django_capture_on_commit_callbacks(execute=True):  # as if committed
        blob = blob_put(path, _sha(data), len(data))

    with default_storage.open(blob.storage_key) as stored:
        assert stored.read() == data


# --- audit, log, task ---------------------------------------------------------------


def test_a_sweep_that_deleted_something_writes_one_audit_row(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys = sorted(_unrecorded(data) for data in (b"one", b"two"))

    with caplog.at_level(logging.INFO, logger="artifacts.services.blob_sweep"):
        blob_sweep(now=_later())

    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.actor_repr) == (
        "blob.swept",
        None,
        "system",
    )
    assert event.data["deleted"] == 2
    assert sorted(event.data["keys"]) == keys
    assert "2 deleted" in caplog.text


def test_a_sweep_that_deleted_nothing_writes_no_audit_row() -> None:
    _unrecorded(b"too recent")

    blob_sweep()
    blob_sweep(now=_later() + timedelta(days=1))  # deletes it
    blob_sweep(now=_later() + timedelta(days=2))  # nothing left

    assert AuditEvent.objects.filter(action="blob.swept").count() == 1


def test_the_beat_runs_the_sweep_daily(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["blob-sweep"]
    _unrecorded(b"too recent for the task")

    deleted = blob_sweep_task()

    assert entry == {"task": "artifacts.blob_sweep", "schedule": 24 * 3600.0}
    assert deleted == 0
    assert len(storage_names()) == 1
