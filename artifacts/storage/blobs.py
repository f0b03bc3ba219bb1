"""Content-addressed blobs in Django's default storage.

A blob's key derives from its SHA-256 only (``blobs/ab/<sha256>``), never from
a name a vendor chose (python-tuf CVE-2021-41131: names used as paths). Only the
storage API is used (``exists``, ``size``, ``save``, ``open``, ``delete``), so the
same code runs on local files, ``InMemoryStorage`` and S3 (django-storages).

Writing and recording are two steps, so that an ingest can write every blob
before its transaction and record the rows inside it:

- ``blob_write`` puts the bytes at the content key unless they are there already
  (then it is a no-op: the same key holds the same bytes) and says whether this
  call wrote them (``blob_known`` first tells which digests have rows, so known
  bytes are not even looked up in storage);
- ``blob_record_many`` / ``blob_record`` get or create the ``Blob`` rows;
- ``blob_ensure``, once the rows are committed, writes back bytes the caller
  found stored without a row if they have vanished since;
- ``blob_put`` does write + record (+ ensure) for callers with one file.

Nothing here deletes a blob another write may rely on: a failed ingest leaves
the bytes it wrote where they are, and ``artifacts.services.blob_sweep`` deletes
objects that no row refers to once they are older than the grace period. Bytes
found stored without a row may be such an object, swept between the moment they
were found and the moment their row was committed: ``blob_ensure`` is for that.
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


HEX_DIGITS: Final = "0123456789abcdef"


def is_sha256_hex(text: str) -> bool:
    """Whether ``text`` is a lowercase SHA-256 hex digest."""
    return SHA256_HEX.fullmatch(text) is not None


def blob_key(sha256: str) -> str:
    """``blobs/ab/abcd…``: the only place a blob may be stored. One level of
    256 folders, as git and the OCI registry do: a fresh store makes 256 folders,
    not one per blob, and ext4/XFS index large folders."""
    if not is_sha256_hex(sha256):
        raise ValueError(f"not a lowercase SHA-256 hex digest: {sha256[:80]!r}")
    return f"{BLOB_PREFIX}/{sha256[:2]}/{sha256}"


def is_blob_key(sha256: str, storage_key: str) -> bool:
    """Whether ``storage_key`` is ``blob_key(sha256)`` (False, not an error,
    for a digest that is not one)."""
    return storage_key == f"{BLOB_PREFIX}/{sha256[:2]}/{sha256}" and is_sha256_hex(
        sha256
    )


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
    """The bytes are stored already; a stray object of another size (not these
    bytes: a write cut short outside the application) is removed."""
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
    storage holds it already (a no-op then); the caller computed its digest and
    size. ``consume``: the file is a spool file the storage may move or delete."""
    key = blob_key(sha256)
    adopt = getattr(default_storage, "adopt", None)  # local files: link, don't copy
    if (
        consume
        and adopt is not None
        and not isinstance(source, bytes)
        and adopt(key, os.fspath(source))
    ):
        return BlobWrite(sha256, size, key, written=True)
    if _present(key, size):
        return BlobWrite(sha256, size, key, written=False)
    with _content(source, consume) as content:
        saved = default_storage.save(key, content)
    if saved != key:  # a concurrent write stored the same bytes first
        default_storage.delete(saved)  # our own copy, under a name no row uses
        return BlobWrite(sha256, size, key, written=False)
    return BlobWrite(sha256, size, key, written=True)


def blob_known(digests: Iterable[str]) -> dict[str, Blob]:
    """The ``Blob`` rows of those ``digests`` that have one."""
    digests = sorted(set(digests))
    known: dict[str, Blob] = {}
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


def blob_ensure(
    stored: Iterable[BlobWrite],
    rewrite: Callable[[BlobWrite], object],
    *,
    written_too: bool = False,
) -> list[str]:
    """After the caller committed the rows of ``stored``: write back, with
    ``rewrite``, bytes that are no longer there. Bytes the caller found stored
    without a row (``written=False``) may be an object a failed write left,
    swept (``blob_sweep``) after they were found; those the caller wrote itself
    are checked too with ``written_too`` (an ingest that took half the sweep's
    grace period or more). Returns the keys written back; never raises (the
    rows are committed: a blob that could not be written back is logged, and
    fixity reports it missing)."""
    rewritten = []
    for item in stored:
        if item.written and not written_too:
            continue
        try:
            if default_storage.exists(item.key):
                continue
            rewrite(item)
        except Exception:
            logger.exception("blob %s: checking or writing it back failed", item.key)
            continue
        logger.warning("blob %s vanished once recorded: written back", item.key)
        rewritten.append(item.key)
    return rewritten


def blob_put(source: Source, sha256: str, size: int) -> Blob:
    """Store a file (its path) or bytes deduplicated by SHA-256 and return its
    ``Blob`` row. If the row cannot be recorded, the bytes written stay for the
    sweep."""
    known = blob_known([sha256])
    if known:
        return known[sha256]
    stored = blob_write(source, sha256, size)
    with transaction.atomic():
        blob = blob_record(stored)

    def ensure() -> None:
        blob_ensure([stored], lambda item: blob_write(source, item.sha256, item.size))

    transaction.on_commit(ensure, robust=True)  # now, unless the caller has one open
    return blob


def blob_open(blob: Blob) -> File:
    """The blob's bytes, for reading (``with blob_open(blob) as f: ...``)."""
    return default_storage.open(blob.storage_key, "rb")
