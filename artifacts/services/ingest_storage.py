"""The storage half of an ingest: the blobs to keep (one job per digest), written
before the accept transaction (in parallel where storage round trips dominate),
and written again if they vanished before their rows were committed
(``artifacts.storage.blobs.blob_ensure``).

A failed ingest deletes nothing it wrote: another upload of the same bytes may
have found them stored and be about to record them. Objects no row refers to are
left for the sweep (``artifacts.services.blob_sweep``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from accounts.views.disk_full import is_disk_full
from artifacts.conf import bundle_storage_threads
from artifacts.lib.archive import FileDigest
from artifacts.lib.manifest import Manifest
from artifacts.lib.spool import Spool
from artifacts.services.fixity.report import grace_period
from artifacts.storage.blobs import BlobWrite, Source, blob_known, blob_write


class BundleStorageError(Exception):
    """Storage failed while keeping an accepted bundle; nothing was recorded."""


class BundleSpoolFullError(BundleStorageError):
    """The spool (``BUNDLE_SPOOL_DIR``) ran out of space while the upload was
    checked, or the local blob store while it was kept; nothing was recorded and
    the spool was emptied."""


@dataclass(frozen=True)
class BlobJob:
    """Bytes to keep: a spooled file or small file's bytes, or the archive."""

    sha256: str
    size: int
    source: Source
    consume: bool  # the storage may move the file instead of copying it

    def write(self) -> BlobWrite:
        return blob_write(self.source, self.sha256, self.size, consume=self.consume)


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


def _write_each(jobs: list[BlobJob]) -> list[BlobWrite]:
    """Write one after the other (local files); stop at the first failure."""
    stored = []
    for job in jobs:
        try:
            stored.append(job.write())
        except Exception as error:
            raise _storage_error(error) from error
    return stored


def _storage_error(error: BaseException) -> BundleStorageError:
    """A full disk under local storage, like a full spool, is the server's lack of
    space (507); anything else, storage failing (503)."""
    if is_disk_full(error):
        return BundleSpoolFullError(f"No space left to store the bundle: {error}")
    return BundleStorageError(f"Storing the bundle failed: {error}")


def _write_all(jobs: list[BlobJob]) -> list[BlobWrite]:
    """Write in parallel where storage round trips dominate (S3), else in turn.
    After a failure the writes not yet started are skipped and those under way
    finish."""
    threads = bundle_storage_threads()
    if threads == 1:
        return _write_each(jobs)
    failed = threading.Event()

    def write(job: BlobJob) -> BlobWrite | None:
        if failed.is_set():
            return None
        try:
            return job.write()
        except Exception:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(write, job) for job in jobs]
    errors = [error for f in futures if (error := f.exception()) is not None]
    if errors:
        raise _storage_error(errors[0]) from errors[0]
    return [r for f in futures if (r := f.result())]


def blobs_store(jobs: dict[str, BlobJob]) -> tuple[list[BlobWrite], list[BlobWrite]]:
    """Write what storage lacks. Returns the blobs that have rows already, and
    the others (written now, or found stored without a row: written by another
    upload that has not recorded them yet, or left by a failed one)."""
    known = blob_known(jobs)
    recorded = [
        BlobWrite(sha256, jobs[sha256].size, blob.storage_key, written=False)
        for sha256, blob in known.items()
    ]
    missing = [job for sha256, job in jobs.items() if sha256 not in known]
    return recorded, _write_all(missing)


def blob_write_again(jobs: dict[str, BlobJob]) -> Callable[[BlobWrite], object]:
    """Write a stored blob's bytes again (``blob_ensure``)."""
    return lambda stored: jobs[stored.sha256].write()


def blobs_may_be_swept_since(started: float) -> bool:
    """Whether blobs written since ``started`` (``time.monotonic()``) may be old
    enough for the sweep already: half its grace period has passed (the other
    half allows for the storage's clock running behind the sweep's)."""
    return time.monotonic() - started >= grace_period().total_seconds() / 2
