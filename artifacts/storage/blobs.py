"""Content-addressed blobs in Django's default storage.

A blob's key derives from its SHA-256 only (``blobs/ab/<sha256>``), never from
a name a vendor chose (python-tuf CVE-2021-41131: names used as paths). Only the
storage API is used (``exists``, ``size``, ``save``, ``open``, ``delete``), so the
same code runs on local files, ``InMemoryStorage`` and S3 (django-storages).

Writing and recording are two steps, so that an ingest can write every blob
before its transaction and record the rows inside it:

- ``blob_write`` puts the bytes at the content key unless they are there already
  and says whether this call wrote them (``blob_known`` first tells which digests
  have rows, so known bytes are not even looked up in storage);
- ``blob_record_many`` / ``blob_record`` get or create the ``Blob`` rows;
- ``blob_cleanup`` deletes what a failed ingest wrote, except keys a ``Blob`` row
  refers to (another upload of the same bytes may have recorded them meanwhile);
- ``blob_put_from_file`` does write + record for callers with one file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from artifacts.models import Blob
from artifacts.storage.bulk import insert_rows

logger = logging.getLogger(__name__)

BLOB_PREFIX: Final = "blobs"
SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")
QUERY_BATCH: Final = 500  # digests per query (SQLite's parameter limit)


def blob_key(sha256: str) -> str:
    """``blobs/ab/abcd…``: the only place a blob may be stored. One level of
    256 folders, as git and the OCI registry do: a fresh store makes 256 folders,
    not one per blob, and ext4/XFS index large folders."""
    if not SHA256_HEX.fullmatch(sha256):
        raise ValueError(f"not a lowercase SHA-256 hex digest: {sha256[:80]!r}")
    return f"{BLOB_PREFIX}/{sha256[:2]}/{sha256}"


class _SpooledFile(File):
    """A local file the storage may take over: ``FileSystemStorage`` renames a
    file with a ``temporary_file_path`` instead of copying it (``InMemoryStorage``
    deletes it after reading; S3 just reads it)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(open(path, "rb"), name=os.fspath(path))  # noqa: SIM115
        self._path = os.fspath(path)

    def temporary_file_path(self) -> str:
        return self._path


@dataclass(frozen=True)
class BlobWrite:
    sha256: str
    size: int
    key: str
    written: bool  # this call wrote the bytes (False: they were there already)


Source = str | os.PathLike[str] | bytes


def _present(key: str, size: int) -> bool:
    """The bytes are stored already; a stray object of another size (a write
    cut short before an earlier clean-up) is removed."""
    if not default_storage.exists(key):
        return False
    if default_storage.size(key) == size:
        return True
    default_storage.delete(key)
    return False


def _content(source: Source, consume: bool) -> File:
    if isinstance(source, bytes):
        return ContentFile(source)
    return _SpooledFile(source) if consume else File(open(source, "rb"))


def blob_write(
    source: Source, sha256: str, size: int, *, consume: bool = False
) -> BlobWrite:
    """Store ``source`` (a file's path, or bytes) at its content key unless the
    storage holds it already; the caller computed its digest and size.
    ``consume``: the file is a spool file the storage may move or delete."""
    key = blob_key(sha256)
    adopt = getattr(default_storage, "adopt", None)  # local files: link, don't copy
    local_file = consume and adopt is not None and not isinstance(source, bytes)
    if local_file and adopt(key, os.fspath(source)):  # type: ignore[arg-type]
        return BlobWrite(sha256, size, key, written=True)
    if _present(key, size):
        return BlobWrite(sha256, size, key, written=False)
    with _content(source, consume) as content:
        saved = default_storage.save(key, content)
    if saved != key:  # a concurrent upload stored the same bytes first
        default_storage.delete(saved)
        return BlobWrite(sha256, size, key, written=False)
    return BlobWrite(sha256, size, key, written=True)


def blob_known(digests: Iterable[str]) -> dict[str, Blob]:
    """The ``Blob`` rows of those ``digests`` that have one."""
    digests, known = sorted(set(digests)), {}
    for start in range(0, len(digests), QUERY_BATCH):
        batch = digests[start : start + QUERY_BATCH]
        known.update((b.sha256, b) for b in Blob.objects.filter(sha256__in=batch))
    return known


def blob_record_many(stored: Iterable[BlobWrite]) -> dict[str, Blob]:
    """The ``Blob`` rows of stored bytes, created where missing (one per digest)."""
    by_digest = {s.sha256: s for s in stored}
    now = timezone.now()
    insert_rows(
        Blob,
        ("sha256", "size", "storage_key", "version_id", "created_at"),
        ((s.sha256, s.size, s.key, "", now) for s in by_digest.values()),
        ignore_conflicts=True,  # recorded meanwhile by an upload of the same bytes
    )
    return blob_known(by_digest)


def blob_record(stored: BlobWrite) -> Blob:
    """The ``Blob`` row for stored bytes (one per digest)."""
    return blob_record_many([stored])[stored.sha256]


def _referenced(keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), QUERY_BATCH):
        rows = Blob.objects.filter(storage_key__in=keys[start : start + QUERY_BATCH])
        found.update(rows.values_list("storage_key", flat=True))
    return found


def blob_cleanup(
    keys: Iterable[str], *, restore: Callable[[str], object] | None = None
) -> list[str]:
    """Delete ``keys`` written by a failed ingest, unless a ``Blob`` row refers to
    one. Returns the keys deleted; never raises (the ingest's own error matters).

    Another upload of the same bytes may have found a key present (so it did not
    write it) and commit its row between the check and the delete. The rows are
    checked again after deleting: such a key is written back with ``restore``
    (the failed ingest still has the bytes); that upload checks too
    (``blob_ensure``), so one of the two puts the bytes back."""
    keys = list(keys)
    referenced = _referenced(keys)
    deleted = []
    for key in keys:
        if key in referenced:
            continue
        try:
            default_storage.delete(key)
        except Exception:  # noqa: S112 - best effort; a stray blob is harmless
            continue
        deleted.append(key)
    restored = _referenced(deleted) if restore is not None else set()
    for key in sorted(restored):
        try:
            restore(key)  # type: ignore[misc]
        except Exception:
            logger.exception("putting back blob %s, recorded meanwhile, failed", key)
    return [key for key in deleted if key not in restored]


def blob_ensure(stored: Iterable[BlobWrite], rewrite: Callable[[str], object]) -> None:
    """After an ingest recorded its rows: bytes it found stored by someone else
    without a row (``written=False``) may have been deleted meanwhile by that
    upload's clean-up (``blob_cleanup``); write those back with ``rewrite(key)``."""
    for item in stored:
        if not item.written and not default_storage.exists(item.key):
            logger.warning("blob %s vanished once recorded: written back", item.key)
            rewrite(item.key)


def blob_put_from_file(path: str | os.PathLike[str], sha256: str, size: int) -> Blob:
    """Store a file deduplicated by SHA-256 and return its ``Blob`` row."""
    known = blob_known([sha256])
    if known:
        return known[sha256]
    stored = blob_write(path, sha256, size)
    try:
        with transaction.atomic():
            return blob_record(stored)
    except BaseException:
        if stored.written:
            blob_cleanup([stored.key])
        raise


def blob_open(blob: Blob) -> File:
    """The blob's bytes, for reading (``with blob_open(blob) as f: ...``)."""
    return default_storage.open(blob.storage_key, "rb")
