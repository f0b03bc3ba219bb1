"""The storage half of an ingest: the blobs to keep (one job per digest), written
before the accept transaction (in parallel where storage round trips dominate),
and written again if another upload's clean-up removed them meanwhile
(``artifacts.storage.blobs.blob_cleanup``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from artifacts.conf import bundle_storage_threads
from artifacts.lib.archive import FileDigest
from artifacts.lib.manifest import Manifest
from artifacts.lib.spool import Spool
from artifacts.storage.blobs import BlobWrite, Source, blob_key, blob_known, blob_write


class BundleStorageError(Exception):
    """Storage failed while keeping an accepted bundle; nothing was kept."""


@dataclass(frozen=True)
class BlobJob:
    """Bytes to keep: a spooled file or small file's bytes, or the archive."""

    sha256: str
    size: int
    source: Source
    consume: bool  # the storage may move the file instead of copying it


def blob_jobs(
    manifest: Manifest, spool: Spool, archive: FileDigest, upload: str, consume: bool
) -> dict[str, BlobJob]:
    """One job per digest: every listed file, and the archive (the caller's
    file ``upload``, taken over only if ``consume``)."""
    jobs = {
        f.sha256: BlobJob(f.sha256, f.size, spool.files[f.path].source, True)
        for f in manifest.files
    }
    jobs.setdefault(
        archive.sha256, BlobJob(archive.sha256, archive.size, upload, consume)
    )
    return jobs


def _write_each(jobs: list[BlobJob], written: list[str]) -> list[BlobWrite]:
    """Write one after the other (local files); stop at the first failure."""
    stored = []
    for job in jobs:
        try:
            result = blob_write(job.source, job.sha256, job.size, consume=job.consume)
        except Exception as error:
            raise BundleStorageError(f"Storing the bundle failed: {error}") from error
        stored.append(result)
        if result.written:
            written.append(result.key)
    return stored


def _write_all(jobs: list[BlobJob], written: list[str]) -> list[BlobWrite]:
    """Write in parallel where storage round trips dominate (S3), else in turn.
    After a failure the writes not yet started are skipped, those under way
    finish, and ``written`` lists every key written, for the clean-up."""
    threads = bundle_storage_threads()
    if threads == 1:
        return _write_each(jobs, written)
    failed = threading.Event()

    def write(job: BlobJob) -> BlobWrite | None:
        if failed.is_set():
            return None
        try:
            return blob_write(job.source, job.sha256, job.size, consume=job.consume)
        except Exception:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(write, job) for job in jobs]
    errors = [error for f in futures if (error := f.exception()) is not None]
    stored = [r for f in futures if not f.exception() and (r := f.result())]
    written.extend(result.key for result in stored if result.written)
    if errors:
        message = f"Storing the bundle failed: {errors[0]}"
        raise BundleStorageError(message) from errors[0]
    return stored


def blobs_store(
    jobs: dict[str, BlobJob], written: list[str]
) -> tuple[list[BlobWrite], list[BlobWrite]]:
    """Write what storage lacks; ``written`` collects the keys, for clean-up.
    Returns the blobs that have rows already, and the others (written now, or
    found stored by another upload that has not recorded them yet)."""
    known = blob_known(jobs)
    recorded = [
        BlobWrite(sha256, jobs[sha256].size, blob.storage_key, written=False)
        for sha256, blob in known.items()
    ]
    missing = [job for sha256, job in jobs.items() if sha256 not in known]
    return recorded, _write_all(missing, written)


def blob_write_again(jobs: dict[str, BlobJob]) -> Callable[[str], object]:
    """Write the bytes stored under a key again (``blob_cleanup``, ``blob_ensure``)."""
    by_key = {blob_key(job.sha256): job for job in jobs.values()}

    def write(key: str) -> BlobWrite:
        job = by_key[key]
        return blob_write(job.source, job.sha256, job.size, consume=job.consume)

    return write
