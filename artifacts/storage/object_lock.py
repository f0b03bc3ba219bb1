"""Escrow on S3 Object Lock, beside ``artifacts.storage.blobs`` (which writes blobs).

When the default storage is S3 (django-storages) and its bucket has Object Lock
enabled (``ESCROW_OBJECT_LOCK`` = ``auto``, the default), a deposited blob's
object version gets a retention (``ESCROW_OBJECT_LOCK_MODE``) until the
deposit's ``retain_until`` and a legal hold mirroring the deposit's flag. A blob
shared by several deposits keeps the latest retention any of them asks for and
stays on hold while any of them is held. Retention is only ever extended.

Blobs are written before the deposit (the ingest stores them before its
transaction), so the lock is put on the version that was written: its
``VersionId`` comes from ``head_object`` and is recorded on the ``Blob`` (once:
later writes of the same key, if any, never replace it), and deposits are read
back by that version id (``deposit_blob_open``), never by key alone.

Everything else (local files, ``InMemoryStorage``, a bucket without Object Lock)
is a no-op: deposits still record their retention and hold, which ``escrow_verify``
(a later issue) can compare with the bucket.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from django.core.files.storage import storages

from artifacts.conf import (
    bundle_storage_threads,
    object_lock_enabled_setting,
    object_lock_mode,
)
from artifacts.models import Blob
from artifacts.storage.blobs import blob_open

logger = logging.getLogger(__name__)


class EscrowStorageError(Exception):
    """The bucket refused or failed a lock operation."""


@dataclass(frozen=True)
class LockTarget:
    """The S3 bucket behind the default storage, when it has Object Lock."""

    client: Any  # boto3 S3 client
    bucket: str
    storage: Any  # the S3Storage, for its key normalisation

    def key(self, blob: Blob) -> str:
        return str(self.storage._normalize_name(blob.storage_key))


def _s3_storage() -> Any | None:
    """The default storage if it is django-storages' S3 backend."""
    storage = storages["default"]
    # Not imported by the storage's class: it is not S3 (and boto3, ~0.1 s to
    # import, stays unloaded in a deployment on local files).
    module = sys.modules.get("storages.backends.s3")
    if module is None or not isinstance(storage, module.S3Storage):
        return None
    return storage


def lock_target() -> LockTarget | None:
    """Where deposits are locked, or None (no S3, no Object Lock, or ``off``)."""
    if not object_lock_enabled_setting():
        return None
    storage = _s3_storage()
    if storage is None:
        return None
    from botocore.exceptions import BotoCoreError  # loaded with the S3 storage

    client = storage.connection.meta.client
    try:
        config = client.get_object_lock_configuration(Bucket=storage.bucket_name)
    except client.exceptions.ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code in ("ObjectLockConfigurationNotFoundError", "NoSuchBucket"):
            return None
        message = f"Reading the bucket's Object Lock failed: {error}"
        raise EscrowStorageError(message) from error
    except BotoCoreError as error:  # S3 unreachable or not answering
        message = f"Reading the bucket's Object Lock failed: {error}"
        raise EscrowStorageError(message) from error
    enabled = config.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled")
    return LockTarget(client, storage.bucket_name, storage) if enabled else None


def _version_id(target: LockTarget, blob: Blob) -> str:
    """The version to lock: the recorded one, else the current one's."""
    if blob.version_id:
        return blob.version_id
    head = target.client.head_object(Bucket=target.bucket, Key=target.key(blob))
    version = head.get("VersionId") or ""
    if not version or version == "null":
        raise EscrowStorageError(f"{blob.storage_key} has no object version.")
    return str(version)


def _lock_one(
    target: LockTarget, blob: Blob, retain_until: datetime | None, hold: bool | None
) -> str:
    """Lock one object version (S3 calls only: this runs in a worker thread,
    away from the caller's database connection); its version id."""
    version = _version_id(target, blob)
    where = {"Bucket": target.bucket, "Key": target.key(blob), "VersionId": version}
    head = target.client.head_object(**where)
    current = head.get("ObjectLockRetainUntilDate")
    if retain_until is not None and (current is None or current < retain_until):
        mode = head.get("ObjectLockMode") or object_lock_mode()
        target.client.put_object_retention(
            **where, Retention={"Mode": mode, "RetainUntilDate": retain_until}
        )
    if hold is not None and (head.get("ObjectLockLegalHoldStatus") == "ON") != hold:
        status = "ON" if hold else "OFF"
        target.client.put_object_legal_hold(**where, LegalHold={"Status": status})
    return version


def _record_versions(blobs: Sequence[Blob], versions: Sequence[str]) -> None:
    """Record each blob's first locked version; never replace a recorded one."""
    for blob, version in zip(blobs, versions, strict=True):
        if not blob.version_id:
            Blob.objects.filter(pk=blob.pk, version_id="").update(version_id=version)
            blob.version_id = Blob.objects.values_list("version_id", flat=True).get(
                pk=blob.pk
            )


def blobs_lock(
    blobs: Sequence[Blob],
    *,
    retain_until: datetime | None = None,
    legal_hold: bool | None = None,
) -> bool:
    """Extend the retention of ``blobs`` to ``retain_until`` and/or set their
    legal hold (S3 calls in parallel), and record their version ids (in the
    caller's transaction). False if there is nothing to lock (no Object Lock
    bucket); raises ``EscrowStorageError`` naming the first failure."""
    target = lock_target()
    if target is None or not blobs:
        return False
    unique = list({blob.pk: blob for blob in blobs}.values())
    with ThreadPoolExecutor(max_workers=bundle_storage_threads()) as pool:
        futures = [
            pool.submit(_lock_one, target, blob, retain_until, legal_hold)
            for blob in unique
        ]
    errors = [error for future in futures if (error := future.exception())]
    if errors:
        message = f"Locking deposited blobs failed: {errors[0]}"
        raise EscrowStorageError(message) from errors[0]
    _record_versions(unique, [future.result() for future in futures])
    return True


def deposit_blob_open(blob: Blob) -> IO[bytes]:
    """The blob's bytes for reading: the recorded object version on S3, else
    whatever the storage holds under the key."""
    storage = _s3_storage()
    if storage is None or not blob.version_id:
        return blob_open(blob)
    client = storage.connection.meta.client
    key = str(storage._normalize_name(blob.storage_key))
    response = client.get_object(
        Bucket=storage.bucket_name, Key=key, VersionId=blob.version_id
    )
    return response["Body"]
