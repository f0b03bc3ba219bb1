"""Fixity of the stored blobs: every ``Blob`` re-hashed as the escrow reads it
(``deposit_blob_open``: on S3 the recorded object version), one chunk at a
time; on S3 the key's current version must still be the deposited one (reads
by key, such as bundle downloads, would otherwise get other bytes); every
object under ``blobs/`` must have a ``Blob`` row; every ``Blob`` row must be
named by a deposit. A problem with a blob is reported once per deposit naming
it, so that each buyer sees it on its own dashboard."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any, Final

from django.core.files.storage import default_storage, storages
from django.db.models import Exists, OuterRef

from artifacts.models import Blob, DepositBlob, FixityFinding
from artifacts.services.fixity.report import Finding, FixityReport
from artifacts.storage.blobs import BLOB_PREFIX, blob_key
from artifacts.storage.object_lock import deposit_blob_open

Kind = FixityFinding.Kind
CHUNK: Final = 1024 * 1024
BATCH: Final = 500


class Unreadable(Exception):
    """The stored bytes are not there (or cannot be read)."""


def _s3() -> Any | None:
    """The default storage if it is django-storages' S3 backend."""
    from storages.backends.s3 import S3Storage

    storage = storages["default"]
    return storage if isinstance(storage, S3Storage) else None


def _is_missing(error: Exception) -> bool:
    response = getattr(error, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = response.get("Error", {}).get("Code", "")
    return status == 404 or code in ("NoSuchKey", "NoSuchVersion")


def stored_digest(blob: Blob) -> tuple[str, int]:
    """SHA-256 (hex) and size of the blob's stored bytes, read in chunks."""
    digest, size = hashlib.sha256(), 0
    try:
        with deposit_blob_open(blob) as stored:
            while chunk := stored.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError as error:
        raise Unreadable("it is missing from the storage") from error
    except Exception as error:  # botocore errors, when the storage is S3
        if _is_missing(error):
            raise Unreadable("its object version is gone from the bucket") from error
        raise Unreadable(f"it cannot be read ({error})") from error
    return digest.hexdigest(), size


def _report(report: FixityReport, blob: Blob, kind: str, detail: str) -> None:
    """One finding per deposit naming ``blob`` (one without, if none does)."""
    named: list[tuple[uuid.UUID | str, int | None, str]] = list(
        DepositBlob.objects.filter(blob=blob)
        .values_list(
            "deposit__public_id", "deposit__log_index", "deposit__rfp__reference"
        )
        .order_by("deposit__log_index")
        .distinct()
    )
    subject = f"blob {blob.sha256[:16]}"
    for deposit, index, rfp in named or [("", None, "")]:
        where = f" (deposit #{index})" if index is not None else ""
        report.findings.add(
            Finding(
                kind,
                subject + where,
                detail,
                log_index=index,
                sha256=blob.sha256,
                rfp_reference=rfp,
                deposit=str(deposit or ""),
            )
        )


def _check_version(report: FixityReport, storage: Any, blob: Blob) -> None:
    client = storage.connection.meta.client
    key = str(storage._normalize_name(blob.storage_key))
    try:
        head = client.head_object(Bucket=storage.bucket_name, Key=key)
    except Exception as error:
        if not _is_missing(error):
            raise
        current = "none (the key was deleted)"
    else:
        current = str(head.get("VersionId") or "none")
        if current == blob.version_id:
            return
    _report(
        report,
        blob,
        Kind.BLOB_OVERWRITTEN,
        f"The key's current version is {current}, not the deposited version "
        f"{blob.version_id}: the deposit still reads its version, but anything "
        "reading the key gets other bytes.",
    )


def check_blob(report: FixityReport, blob: Blob, s3: Any | None) -> None:
    report.counts.blobs_checked += 1
    try:
        content_key = blob_key(blob.sha256)
    except ValueError:
        content_key = ""
    if blob.storage_key != content_key:
        _report(
            report,
            blob,
            Kind.ROW_ALTERED,
            f"The blob row's storage key {blob.storage_key!r} is not its content key.",
        )
    try:
        digest, size = stored_digest(blob)
    except Unreadable as error:
        _report(report, blob, Kind.BLOB_MISSING, f"The blob is unreadable: {error}.")
        return
    report.counts.bytes_hashed += size
    if (digest, size) != (blob.sha256, blob.size):
        _report(
            report,
            blob,
            Kind.BLOB_ALTERED,
            f"The stored bytes hash to {digest} ({size} B); the deposit logged "
            f"{blob.sha256} ({blob.size} B).",
        )
    if s3 is not None and blob.version_id:
        _check_version(report, s3, blob)


def _undeposited(report: FixityReport) -> None:
    named = DepositBlob.objects.filter(blob=OuterRef("pk"))
    blobs = Blob.objects.filter(~Exists(named)).order_by("pk")
    for blob in blobs.iterator(chunk_size=BATCH):
        _report(
            report,
            blob,
            Kind.BLOB_UNDEPOSITED,
            "A blob row no deposit names: it is not in escrow, and nothing "
            "stores a blob without depositing it.",
        )


def _extra(report: FixityReport, key: str, newer_than: datetime) -> None:
    try:
        if default_storage.get_modified_time(key) > newer_than:
            return  # an ingest may be writing it before recording its row
    except (NotImplementedError, OSError):
        pass
    report.findings.add(
        Finding(
            Kind.BLOB_EXTRA,
            key,
            "A stored object under blobs/ with no blob row: written outside "
            "the application, or left by a failed write.",
        )
    )


def _listdir(path: str) -> tuple[list[str], list[str]]:
    try:
        return default_storage.listdir(path)
    except FileNotFoundError:
        return [], []


def _walk_extra(report: FixityReport, path: str, newer_than: datetime) -> None:
    """Everything under ``path`` (no blob lives there): each file is extra."""
    folders, files = _listdir(path)
    for name in files:
        report.counts.objects_listed += 1
        _extra(report, f"{path}/{name}", newer_than)
    for folder in folders:
        _walk_extra(report, f"{path}/{folder}", newer_than)


def _extra_objects(report: FixityReport, newer_than: datetime) -> None:
    folders, files = _listdir(BLOB_PREFIX)
    for name in files:
        report.counts.objects_listed += 1
        _extra(report, f"{BLOB_PREFIX}/{name}", newer_than)
    for folder in sorted(folders):
        path = f"{BLOB_PREFIX}/{folder}"
        rows = Blob.objects.filter(sha256__startswith=folder)
        known = set(rows.values_list("storage_key", flat=True))
        subfolders, names = _listdir(path)
        for name in names:
            report.counts.objects_listed += 1
            if f"{path}/{name}" not in known:
                _extra(report, f"{path}/{name}", newer_than)
        for subfolder in subfolders:
            _walk_extra(report, f"{path}/{subfolder}", newer_than)


def check_blobs(report: FixityReport, *, newer_than: datetime) -> None:
    """Every blob's bytes, then rows no deposit names, then stored objects
    with no row (not those modified after ``newer_than``)."""
    s3 = _s3()
    for blob in Blob.objects.order_by("pk").iterator(chunk_size=BATCH):
        check_blob(report, blob, s3)
    _undeposited(report)
    _extra_objects(report, newer_than)
