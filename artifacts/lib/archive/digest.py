"""One pass over an archive: the size and SHA-256 of every file, chunks handed
to a sink (the ingest's spool) as they stream. No Django."""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from artifacts.lib.archive.base import (
    DEFAULT_LIMITS,
    THREADED_HASH_BYTES,
    ArchiveLimits,
    Format,
    Member,
    MemberStream,
)
from artifacts.lib.archive.reader import BundleArchive
from artifacts.lib.problems import BundleProblem

KiB: Final = 1024


# --- one pass: digests of every file ------------------------------------------------


@dataclass(frozen=True)
class FileDigest:
    size: int
    sha256: str


class MemberSink(Protocol):
    """Receives one member's bytes during ``digest_archive`` (e.g. blob storage)."""

    def write(self, chunk: bytes, /) -> object: ...

    def finish(self, digest: FileDigest | None, /) -> object:
        """Called once: the digest if every byte was read and checked, else None."""
        ...


@dataclass
class ArchiveDigest:
    format: Format | None
    complete: bool  # the whole archive was read
    files: dict[str, FileDigest]  # safe members read in full
    rejected: set[str]  # members present but unsafe or unreadable
    kept: dict[str, bytes]  # contents of the members asked for with ``keep``
    oversized: set[str]  # ``keep`` members larger than allowed (not kept)
    problems: list[BundleProblem]

    @property
    def ok(self) -> bool:
        return self.complete and not self.problems


def digest_archive(
    path: str | os.PathLike[str],
    limits: ArchiveLimits = DEFAULT_LIMITS,
    *,
    keep: Mapping[str, int] | None = None,
    sink: Callable[[Member], MemberSink | None] | None = None,
) -> ArchiveDigest:
    """Check and hash every member in one pass. ``keep`` maps member names to the
    most bytes to keep in memory (manifest, signature); ``sink`` may return a
    ``MemberSink`` per member to receive its bytes."""
    keep = keep or {}
    result = ArchiveDigest(None, False, {}, set(), {}, set(), [])
    with BundleArchive(path, limits) as archive:
        for stream in archive.scan():
            _digest_member(stream, keep, sink, result)
        result.format, result.complete = archive.format, archive.complete
        result.rejected |= archive.unsafe
        result.problems = archive.problems
    return result


def _digest_member(
    stream: MemberStream,
    keep: Mapping[str, int],
    sink: Callable[[Member], MemberSink | None] | None,
    result: ArchiveDigest,
) -> None:
    name, size = stream.name, 0
    hasher = Sha256Hasher(threaded=stream.member.size >= THREADED_HASH_BYTES)
    target = sink(stream.member) if sink else None
    kept: list[bytes] | None = [] if name in keep else None
    try:
        for chunk in stream.chunks():
            hasher.update(chunk)
            size += len(chunk)
            if target is not None:
                target.write(chunk)
            if kept is not None:
                kept.append(chunk)
                if size > keep[name]:
                    kept = None
                    result.oversized.add(name)
    finally:
        sha256 = hasher.hexdigest()
    digest = FileDigest(size, sha256) if stream.complete else None
    if target is not None:
        target.finish(digest)
    if digest is None:
        result.rejected.add(name)
        return
    result.files[name] = digest
    if kept is not None:
        result.kept[name] = b"".join(kept)


HASHER_THREAD: Final = "sha256-hasher"


class Sha256Hasher:
    """SHA-256, optionally in a worker thread: hashlib and zlib release the GIL,
    so hashing one chunk overlaps with reading and inflating the next (measured
    1.8x faster on tar.gz, 1.25x on tar, with two cores), or with writing it
    (the upload handler). Call ``hexdigest()`` once, also on errors: it ends the
    thread; a hasher dropped without it ends its thread when it is collected."""

    def __init__(self, *, threaded: bool) -> None:
        self._hash = hashlib.sha256()
        self._chunks: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._chunks = queue.Queue(maxsize=4)
            # The thread holds the hash and the queue, not this object, so that
            # the finaliser can run if the owner is dropped mid-stream.
            self._thread = threading.Thread(
                target=_hash_chunks,
                args=(self._hash, self._chunks),
                name=HASHER_THREAD,
                daemon=True,
            )
            self._thread.start()
            self._stop = weakref.finalize(self, self._chunks.put, None)
            self._stop.atexit = False  # a daemon thread needs no stopping at exit

    def update(self, chunk: bytes) -> None:
        if self._chunks is None:
            self._hash.update(chunk)
        else:
            self._chunks.put(chunk)

    def hexdigest(self) -> str:
        """The digest; ends the worker thread."""
        if self._chunks is not None and self._thread is not None:
            self._stop()
            self._thread.join()
            self._chunks = None
        return self._hash.hexdigest()


def _hash_chunks(digest: Any, chunks: queue.Queue[bytes | None]) -> None:
    while (chunk := chunks.get()) is not None:
        digest.update(chunk)
