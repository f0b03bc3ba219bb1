"""Where a bundle's files wait for the verdict while the archive is checked.

``Spool.sink`` is the ``sink`` of ``inspect_bundle``: each member's bytes arrive
in chunks during the one pass over the archive. Small files stay in memory
(within a budget; beyond it, or with a budget of 0, each is written to its
spool file once complete, many such files per step of the writer thread);
larger ones stream into numbered files
in a private directory, never under a vendor's name. One background thread does
all the file work, so that writing overlaps with reading, inflating and hashing
the archive (measured: +20 % on a 1 GiB tar with two cores). ``Spool.flush()``
waits for every write and raises the first write error; ``close()`` deletes
everything.

Large files are written with direct I/O (``O_DIRECT``) where the file system
allows it: they are escrow blobs that nobody reads soon, so they should not
evict the page cache, and writing them costs no page-cache allocation (on the
development VM, buffered writes into fresh page cache ran at 0.4-0.5 GB/s, direct
writes at about 2 GB/s). Elsewhere (tmpfs, macOS) they are written normally.

No Django here.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final

from artifacts.lib.archive import FileDigest, Member

SMALL_FILE: Final = 64 * 1024  # files up to this size wait in memory ...
BATCH_FILES: Final = 64  # ... or are handed to the writer this many at a time
BATCH_BYTES: Final = 1024 * 1024  # (or once they add up to this)
MEMORY_BUDGET: Final = 32 * 1024 * 1024  # ... while they add up to less than this
QUEUE_CHUNKS: Final = 8  # chunks (≤ 1 MiB each) waiting for the writer thread
DIRECT_BLOCK: Final = 4096  # direct I/O writes whole blocks from aligned memory
DIRECT_BUFFER: Final = 4 * 1024 * 1024
DIRECT_MIN: Final = 1024 * 1024  # smaller files are written through the page cache


@dataclass(frozen=True)
class Spooled:
    """One file received in full: in a spool file or, if small, in memory."""

    digest: FileDigest
    path: Path | None = None
    data: bytes | None = None

    @property
    def source(self) -> Path | bytes:
        return self.data if self.data is not None else self.path  # type: ignore[return-value]

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None  # noqa: S101 - one of the two is set
        return self.path.read_bytes()


class DirectFile:
    """A new file written with ``O_DIRECT``: bytes gather in a page-aligned
    buffer (``mmap``) and go out in whole blocks; the tail that is not a whole
    block is written after switching direct I/O off. Write from one thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = mmap.mmap(-1, DIRECT_BUFFER)
        self._view = memoryview(self._buffer)
        self._fill = 0
        self._direct_refused = False
        self.closed = False

    @classmethod
    def create(cls, path: Path) -> DirectFile | None:
        """The new file, or None where direct I/O is refused (the caller then
        writes it normally)."""
        flag = getattr(os, "O_DIRECT", 0)
        if not flag:
            return None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag, 0o600)
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
            return None
        return cls(fd)

    def _buffered(self) -> None:
        flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        fcntl.fcntl(self.fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)

    def _out(self, view: memoryview) -> None:
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except OSError as error:  # a file system that opened but won't write
                if error.errno != errno.EINVAL or self._direct_refused:
                    raise
                self._direct_refused = True
                self._buffered()

    def write(self, data: bytes) -> int:
        source, size = memoryview(data), len(data)
        while source:
            room = DIRECT_BUFFER - self._fill
            piece = source[:room]
            self._view[self._fill : self._fill + len(piece)] = piece
            self._fill += len(piece)
            source = source[len(piece) :]
            if self._fill == DIRECT_BUFFER:
                self._out(self._view)
                self._fill = 0
        return size

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            whole = self._fill - self._fill % DIRECT_BLOCK
            if whole:
                self._out(self._view[:whole])
            if self._fill > whole:
                self._buffered()
                self._out(self._view[whole : self._fill])
        finally:
            os.close(self.fd)
            self._view.release()
            # A failed write's traceback still holds a slice of the buffer (a
            # full disk): closing it then would hide that error; it goes with it.
            with contextlib.suppress(BufferError):
                self._buffer.close()


class _Writer:
    """Runs file operations in order on one thread; keeps the first error."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self._ops: queue.Queue[Callable[[], object] | None] = queue.Queue(
            maxsize=QUEUE_CHUNKS
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (op := self._ops.get()) is not None:
            try:
                op()
            except Exception as error:
                self.error = self.error or error

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def put(self, op: Callable[[], object]) -> None:
        self.check()
        self._ops.put(op)

    def stop(self) -> None:
        self._ops.put(None)
        self._thread.join()


class _SpoolFile:
    """One spool file, opened, written and closed by the writer thread only, so
    that creating files (the costly part for many small ones) overlaps with the
    scan too. Large files use direct I/O (``DirectFile``) where allowed."""

    def __init__(self, path: Path, *, direct: bool) -> None:
        self.path, self.direct = path, direct
        self.handle: BinaryIO | DirectFile | None = None

    def open(self) -> None:
        handle = DirectFile.create(self.path) if self.direct else None
        self.handle = handle or open(self.path, "xb")  # noqa: SIM115 - see close()

    def write(self, chunk: bytes) -> None:
        if self.handle is not None:  # None: opening failed (the writer kept why)
            self.handle.write(chunk)

    def close(self) -> None:
        if self.handle is not None:
            handle, self.handle = self.handle, None
            handle.close()


_NEW_FILE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _write_new(path: Path, data: bytes) -> None:
    """A new file holding ``data``, with three system calls (no file object)."""
    fd = os.open(path, _NEW_FILE, 0o666)  # spool names are never reused
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_batch(files: list[tuple[Path, bytes]]) -> None:
    for path, data in files:
        _write_new(path, data)


class Spool:
    """Use as a context manager; give ``sink`` to ``inspect_bundle``.

    ``memory_budget``: bytes of small files kept in memory (0: every file goes
    to a spool file, which suits local storage: the file is later linked into
    place instead of being created then); ``direct_io``: files of at least
    ``DIRECT_MIN`` bytes are written with ``O_DIRECT`` where allowed."""

    def __init__(
        self,
        directory: str | None = None,
        *,
        skip: frozenset[str] = frozenset(),
        small_file: int = SMALL_FILE,
        memory_budget: int = MEMORY_BUDGET,
        direct_io: bool = True,
    ) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="bundle-", dir=directory))
        self.files: dict[str, Spooled] = {}
        self.skip = skip  # members nobody needs from the spool
        self.small_file = small_file
        self.memory_left = memory_budget
        self.direct_io = direct_io
        self._count = 0
        self._batch: list[tuple[Path, bytes]] = []  # small files not queued yet
        self._batch_bytes = 0
        self._writer: _Writer | None = None
        self._open: set[_SpoolFile] = set()  # closed by the writer, or by close()

    def __enter__(self) -> Spool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def sink(self, member: Member) -> SpoolSink | None:
        if member.name in self.skip:
            return None
        return SpoolSink(self, member)

    def new_file(self, size: int) -> _SpoolFile:
        """A numbered spool file for a member of about ``size`` bytes, opened
        by the writer thread."""
        self._count += 1
        direct = self.direct_io and size >= DIRECT_MIN
        spool_file = _SpoolFile(self.directory / f"{self._count:07d}", direct=direct)
        self._open.add(spool_file)
        self.writer.put(spool_file.open)
        return spool_file

    def write_file(self, data: bytes) -> Path:
        """A numbered spool file holding ``data``, created, written and closed
        by the writer thread (a small member's, gathered in memory while it
        streamed). Such files go to the writer in batches (``BATCH_FILES``,
        ``BATCH_BYTES``): one queued step for many files instead of one each,
        as every step costs the two threads a lock hand-over."""
        self._count += 1
        path = self.directory / f"{self._count:07d}"
        self._batch.append((path, data))
        self._batch_bytes += len(data)
        if len(self._batch) >= BATCH_FILES or self._batch_bytes >= BATCH_BYTES:
            self._queue_batch()
        return path

    def _queue_batch(self) -> None:
        if self._batch:
            batch, self._batch, self._batch_bytes = self._batch, [], 0
            self.writer.put(lambda: _write_batch(batch))

    def close_file(self, spool_file: _SpoolFile) -> None:
        self._open.discard(spool_file)
        self.writer.put(spool_file.close)

    @property
    def writer(self) -> _Writer:
        if self._writer is None:
            self._writer = _Writer()
        return self._writer

    def flush(self) -> None:
        """Wait until every file is written and closed; raise a write error."""
        self._queue_batch()
        if self._writer is not None:
            self._writer.stop()
            self._writer.check()
            self._writer = None

    def close(self) -> None:
        self._batch = []  # never written: everything is deleted anyway
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
        for spool_file in self._open:
            spool_file.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class SpoolSink:
    """Receives one member: in memory while it stays small (kept there within
    the memory budget, else written to a spool file in one step at the end),
    else streamed into a spool file."""

    def __init__(self, spool: Spool, member: Member) -> None:
        self.spool, self.name, self.size = spool, member.name, 0
        self.chunks: list[bytes] | None = None
        self.file: _SpoolFile | None = None
        self.keep = member.size <= min(spool.small_file, spool.memory_left)
        if member.size <= spool.small_file:
            self.chunks = []
        else:
            self.file = spool.new_file(member.size)

    def _to_file(self) -> None:
        """The member is larger than its header said: move it to a file."""
        self.file = self.spool.new_file(self.size)
        self._file_write(b"".join(self.chunks or []))
        self.chunks, self.keep = None, False

    def _file_write(self, chunk: bytes) -> None:
        spool_file = self.file
        assert spool_file is not None  # noqa: S101 - file-backed
        self.spool.writer.put(lambda: spool_file.write(chunk))

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.chunks is not None and self.size > self.spool.small_file:
            self._to_file()
        if self.chunks is not None:
            self.chunks.append(chunk)
        else:
            self._file_write(chunk)

    def finish(self, digest: FileDigest | None) -> None:
        spool_file = self.file
        if spool_file is not None:
            self.spool.close_file(spool_file)
        path = spool_file.path if spool_file is not None else None
        if digest is None:
            if path is not None:
                self.spool.writer.put(lambda: path.unlink(missing_ok=True))
            return
        if self.chunks is None:
            self.spool.files[self.name] = Spooled(digest, path)
            return
        data = b"".join(self.chunks)
        if self.keep:
            self.spool.memory_left -= len(data)
            self.spool.files[self.name] = Spooled(digest, data=data)
        else:
            self.spool.files[self.name] = Spooled(digest, self.spool.write_file(data))
