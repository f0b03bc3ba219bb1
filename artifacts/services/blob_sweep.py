"""The blob sweep: delete stored objects under ``blobs/`` that no ``Blob`` row
refers to, once they are older than the fixity grace period.

Blob writes are idempotent and nothing else deletes a blob: an ingest writes its
blobs before the transaction that records them, and one that fails leaves them
where they are, because another upload of the same bytes may have found them
stored and be recording them. What no row ever came to refer to is collected
here, by the beat (``artifacts.blob_sweep``):

- an object with a row is never deleted (rows refer to blobs by storage key;
  a row of the same digest counts too), nor is one modified within the grace
  period (``artifacts.services.fixity.report.grace_period``: an ingest may be
  writing it), nor one whose unknown age cannot be read;
- ``Blob`` rows are never deleted (they are immutable, and anything that keeps
  a blob deposits it: fixity reports a row no deposit names);
- on S3 only the key is deleted (a versioned bucket keeps the version behind a
  delete marker), and an object whose current version has an Object Lock
  retention or legal hold is left alone.

Each object is checked just before it is deleted, and checked again after: a
row committed in between is logged as an error; the ingest that committed it
checks its bytes after committing (``blob_ensure``) and writes them back.
A run that deleted something writes one audit row (``blob.swept``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.services.audit import audit_record
from artifacts.models import Blob
from artifacts.services.fixity.report import grace_period
from artifacts.storage.blobs import BLOB_PREFIX, QUERY_BATCH, SHA256_HEX
from artifacts.storage.object_lock import LockTarget, lock_target

logger = logging.getLogger(__name__)

AUDITED_KEYS: Final = 100  # keys named in the audit row; the rest are counted


@dataclass
class SweepReport:
    cutoff: datetime  # objects modified after it are kept
    listed: int = 0  # objects under blobs/
    deleted: list[str] = field(default_factory=list)
    recent: int = 0  # no row, but modified within the grace period
    locked: int = 0  # no row, but under S3 Object Lock
    failed: int = 0  # the storage refused to tell its age or to delete it
    recorded_meanwhile: list[str] = field(default_factory=list)


def _listdir(path: str) -> tuple[list[str], list[str]]:
    try:
        return default_storage.listdir(path)
    except FileNotFoundError:
        return [], []


def _unrecorded(path: str, names: list[str]) -> list[str]:
    """The keys of ``names`` under ``path`` that no row names (by storage key or
    by digest)."""
    found = []
    for start in range(0, len(names), QUERY_BATCH):
        batch = names[start : start + QUERY_BATCH]
        keys = [f"{path}/{name}" for name in batch]
        rows = Blob.objects.filter(Q(storage_key__in=keys) | Q(sha256__in=batch))
        known = {
            value for row in rows.values_list("storage_key", "sha256") for value in row
        }
        found += [k for k, n in zip(keys, batch, strict=True) if not known & {k, n}]
    return found


def _candidates(path: str) -> tuple[int, list[str]]:
    """How many objects are under ``path``, and those no row refers to."""
    folders, names = _listdir(path)
    listed, found = len(names), _unrecorded(path, names)
    for folder in sorted(folders):
        count, more = _candidates(f"{path}/{folder}")
        listed, found = listed + count, found + more
    return listed, found


def _referenced(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    by_digest = Q(sha256=name) if SHA256_HEX.fullmatch(name) else Q()
    return Blob.objects.filter(Q(storage_key=key) | by_digest).exists()


def _locked(target: LockTarget, key: str, now: datetime) -> bool:
    """The current version has a retention running or a legal hold."""
    s3_key = str(target.storage._normalize_name(key))
    head: dict[str, Any] = target.client.head_object(Bucket=target.bucket, Key=s3_key)
    until = head.get("ObjectLockRetainUntilDate")
    held = head.get("ObjectLockLegalHoldStatus") == "ON"
    return held or (until is not None and until > now)


def _sweep_one(
    report: SweepReport, key: str, target: LockTarget | None, now: datetime
) -> None:
    try:
        if default_storage.get_modified_time(key) > report.cutoff:
            report.recent += 1
            return
        if target is not None and _locked(target, key, now):
            report.locked += 1
            return
        if _referenced(key):  # recorded since the folder was listed
            return
        default_storage.delete(key)
    except FileNotFoundError:
        return  # gone already
    except Exception:
        logger.exception("blob sweep: %s could not be checked or deleted", key)
        report.failed += 1
        return
    report.deleted.append(key)
    if _referenced(key):
        logger.error("blob sweep: %s was recorded while it was deleted", key)
        report.recorded_meanwhile.append(key)


def _record(report: SweepReport) -> None:
    with transaction.atomic():
        audit_record(
            actor=None,
            action="blob.swept",
            data={
                "deleted": len(report.deleted),
                "keys": report.deleted[:AUDITED_KEYS],
                "cutoff": report.cutoff.isoformat(),
                "recorded_meanwhile": report.recorded_meanwhile,
            },
        )


def blob_sweep(*, now: datetime | None = None) -> SweepReport:
    """Delete the objects under ``blobs/`` no row refers to, modified before
    ``now`` (the storage's wall clock: by default the real time, not the
    installation clock) minus the grace period."""
    now = now if now is not None else timezone.now()
    report = SweepReport(cutoff=now - grace_period())
    report.listed, candidates = _candidates(BLOB_PREFIX)
    target = lock_target() if candidates else None
    for key in candidates:
        _sweep_one(report, key, target, now)
    if report.deleted:
        _record(report)
    logger.info(
        "blob sweep: %d objects listed, %d deleted, %d kept within the grace "
        "period, %d kept under Object Lock, %d failed",
        report.listed, len(report.deleted), report.recent, report.locked,
        report.failed,
    )  # fmt: skip
    return report
