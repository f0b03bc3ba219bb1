"""Fixity of the stored blobs: every ``Blob`` re-hashed as the escrow reads it
(``deposit_blob_open``: on S3 the recorded object version), one chunk at a
time; on S3 the key's current version must still be the deposited one, or hold
the same bytes (reads by key, such as bundle downloads, would otherwise get
other bytes; two uploads of the same bytes at once may each write a version,
and the row records the first); every
object under ``blobs/`` must have a ``Blob`` row; every ``Blob`` row must be
named by a deposit. A problem with a blob is reported once per deposit naming
it, so that each buyer sees it on its own dashboard.

The re-hash reads the rows as tuples in storage-key order (no model
instances, nothing prefetched), a chunk at a time, and hands them to a few
reader threads (``READ_THREADS``) a batch at a time, at most two batches per
thread ahead of the rows being judged: memory stays flat however many blobs
there are. A batch of local blobs smaller than ``LOCAL_INLINE_BELOW`` on
average goes to ``READ_PROCESSES`` reader processes instead (on a machine of
more than one CPU; else it is read in the calling thread): threads taking turns
at the GIL around many small reads cost more than the reads, and the cost of a
small blob is its system calls and the interpreter around them, not its hash.
Readers only read and hash (no database access: the rows are judged, and
findings queried, in the calling thread), and say which of a task's blobs do not
hold what their rows record: the calling thread counts the others by the task,
and judges only those:

- local files (``FileSystemStorage``): a blob stored at its content key is
  opened relative to the storage's folder and read into the reader's reused
  buffer (``artifacts.lib.blob_reads``, which the reader processes run too);
  ``hashlib`` releases the GIL while it hashes more than 2 KiB, and so does
  the read;
- S3 (django-storages): ``get_object`` of the recorded version (the key's
  current object for a blob without one), a blob of ``RANGED_MIN`` bytes or
  more in ranges of ``PART`` fetched a few at a time and hashed in order; then
  ``head_object`` for the key's current version;
- anything else, and a row whose storage key is not its content key:
  ``deposit_blob_open``, as before."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import subprocess
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import IO, Any, Final, NamedTuple, Protocol

from django.core.files.storage import FileSystemStorage, default_storage, storages
from django.db.models import Exists, OuterRef

from artifacts.lib.blob_reads import MISSING, hash_file, read_task
from artifacts.lib.children import PROJECT, module_command
from artifacts.models import Blob, DepositBlob, FixityFinding
from artifacts.services.fixity.report import Finding, FixityReport
from artifacts.storage.blobs import BLOB_PREFIX, HEX_DIGITS, is_blob_key
from artifacts.storage.object_lock import deposit_blob_open

Kind = FixityFinding.Kind
logger = logging.getLogger(__name__)
CHUNK: Final = 1024 * 1024  # one read, and each thread's buffer
BATCH: Final = 2000  # rows per database round trip
READ_THREADS: Final = 4
TASK_BLOBS: Final = 256  # blobs per task handed to a reader thread, at most
TASK_BYTES: Final = 8 * CHUNK  # or about this many bytes
# Local files: a task of blobs smaller than this on average is read by reader
# processes (else in the calling thread); threads contending for the GIL over many
# small reads cost twice the reads.
LOCAL_INLINE_BELOW: Final = 32 * 1024
READ_PROCESSES: Final = 2  # at most the CPUs; fewer than 2: none (one would take turns)
READER: Final = "artifacts.lib.blob_reads"
CLOSE_WAIT_S: Final = 10.0
RANGED_MIN: Final = 16 * CHUNK  # S3: larger blobs are read in ranges
PART: Final = 4 * CHUNK  # S3: one ranged read
PARTS_AHEAD: Final = 3  # S3: ranged reads in flight per blob
VERSION_GONE: Final = "its object version is gone from the bucket"

# pk, sha256, size, storage key, version id
Row = tuple[int, str, int, str, str]


class Unreadable(Exception):
    """The stored bytes are not there (or cannot be read)."""


class Stored(NamedTuple):
    """What a reader found of one blob: its digest and size, or why it could
    not be read; on S3, the key's current version when it is not the
    recorded one. (A tuple: one is made per blob, and a frozen dataclass
    costs several times as much to make.)"""

    digest: str = ""
    size: int = 0
    unreadable: str = ""
    current_version: str | None = None


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
    """SHA-256 (hex) and size of the blob's stored bytes, read in chunks
    through the storage (any backend)."""
    digest, size = hashlib.sha256(), 0
    try:
        with deposit_blob_open(blob) as stored:
            while chunk := stored.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError as error:
        raise Unreadable(MISSING) from error
    except Exception as error:  # botocore errors, when the storage is S3
        if _is_missing(error):
            raise Unreadable(VERSION_GONE) from error
        raise Unreadable(f"it cannot be read ({error})") from error
    return digest.hexdigest(), size


def _read_through_storage(row: Row) -> Stored:
    pk, sha256, size, key, version = row
    blob = Blob(pk=pk, sha256=sha256, size=size, storage_key=key, version_id=version)
    try:
        digest, read = stored_digest(blob)
    except Unreadable as error:
        return Stored(unreadable=str(error))
    return Stored(digest, read)


class LocalReader:
    """Blobs in a local folder, read directly (see the module's docstring)."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.local = threading.local()

    def _buffer(self) -> memoryview:
        view: memoryview | None = getattr(self.local, "view", None)
        if view is None:
            view = self.local.view = memoryview(bytearray(CHUNK))
        return view

    def read(self, row: Row) -> Stored:
        if not is_blob_key(row[1], row[3]):
            return _read_through_storage(row)  # the storage checks the name
        return Stored(*hash_file(self.root_fd, row[3], row[2], self._buffer()))


# What was found of a task's blobs that do not hold what their rows record (or
# whose row is not plainly intact), by their place in the task: the others hold it.
Found = dict[int, Stored]


def _intact(row: Row, stored: Stored) -> bool:
    """Whether ``stored`` is what ``row`` records, at its content key: nothing
    to judge but that."""
    _, sha256, size, storage_key, version = row
    return (
        stored.digest == sha256
        and stored.size == size
        and not stored.unreadable
        and (stored.current_version is None or stored.current_version == version)
        and is_blob_key(sha256, storage_key)
    )


class _Reading(Protocol):
    def result(self) -> Found: ...


class _Replies:
    """A task handed to a reader process: its replies, read when asked for;
    ``direct``, which of its rows the process reads (the others are read
    through the storage)."""

    def __init__(
        self, readers: ReaderProcesses, index: int, task: list[Row], direct: list[bool]
    ) -> None:
        self.readers, self.index, self.task, self.direct = readers, index, task, direct

    def result(self) -> Found:
        return self.readers.receive(self.index, self.task, self.direct)


def _feed(stdin: IO[bytes], tasks: queue.Queue[bytes | None]) -> None:
    """A reader process's input, written from a thread of its own: the calling
    thread only reads replies, so neither side can wait on the other."""
    try:
        while (data := tasks.get()) is not None:
            stdin.write(data)
            stdin.flush()
    except OSError:
        pass  # the process is gone: reading its replies says so
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


class ReaderProcesses:
    """Reader processes (``artifacts.lib.blob_reads``) for tasks of small local
    blobs. The first task is read in the calling thread (a check of a few blobs
    starts no process); the processes start at the second, and each task goes
    to the next process in turn, its replies read in the order the tasks were
    handed out. Rows whose storage key is not their content key are read
    through the storage in the calling thread. If a process cannot start or
    ends without its replies, none is used again: what is left is read in the
    calling thread."""

    def __init__(self, folder: str, count: int, read: Callable[[Row], Stored]) -> None:
        self.folder, self.count, self.read = folder, count, read
        self.processes: list[subprocess.Popen[bytes]] = []
        self.inputs: list[queue.Queue[bytes | None]] = []
        self.handed = 0
        self.failed = False

    def submit(self, task: list[Row]) -> _Reading:
        self.handed += 1
        if self.handed == 1 or self.failed or not self._started():
            return _read_now(self.read, task)
        index = self.handed % len(self.processes)
        direct = [is_blob_key(row[1], row[3]) for row in task]
        named = [
            f"{r[3]}\t{r[2]}\t{r[1]}\n" for r, d in zip(task, direct, strict=True) if d
        ]
        self.inputs[index].put("".join(named).encode("ascii") + b"\n")
        return _Replies(self, index, task, direct)

    def receive(self, index: int, task: list[Row], direct: list[bool]) -> Found:
        if self.failed:
            return _read_task(self.read, task)
        replies = self.processes[index].stdout
        assert replies is not None  # noqa: S101 (started with stdout=PIPE)
        try:
            differ = read_task(replies, sum(direct))
        except ValueError as error:
            logger.warning("a fixity reader process failed (%s); reading here", error)
            self.failed = True
            return _read_task(self.read, task)
        found: Found = {}
        named = 0  # the blob's place among those the reader was sent
        for place, (row, d) in enumerate(zip(task, direct, strict=True)):
            if not d:  # its row is not plainly intact: judged whatever it holds
                found[place] = _read_through_storage(row)
                continue
            if named in differ:
                found[place] = Stored(*differ[named])
            named += 1
        return found

    def _started(self) -> bool:
        if self.processes:
            return True
        command, environment = module_command(READER, self.folder)
        try:
            for n in range(self.count):
                process = subprocess.Popen(  # noqa: S603 (our module, our folder)
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=environment,
                    cwd=PROJECT,
                )
                self.processes.append(process)
                self.inputs.append(queue.Queue())
                assert process.stdin is not None  # noqa: S101 (stdin=PIPE)
                threading.Thread(
                    target=_feed,
                    args=(process.stdin, self.inputs[-1]),
                    name=f"fixity-feed-{n}",
                    daemon=True,
                ).start()
        except OSError as error:
            logger.warning("no fixity reader process (%s); reading here", error)
            self.failed = True
            return False
        return True

    def close(self) -> None:
        """End the processes: the end of their input; their output closed, so
        that one with replies nobody will read ends too."""
        for tasks in self.inputs:
            tasks.put(None)
        for process in self.processes:
            if process.stdout is not None:
                process.stdout.close()
            try:
                process.wait(timeout=CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class S3Reader:
    """Blobs in an S3 bucket, by their recorded versions (see the module's
    docstring). boto3 clients may be shared between threads."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.client = storage.connection.meta.client
        self.bucket = storage.bucket_name

    def read(self, row: Row) -> Stored:
        _, sha256, size, storage_key, version = row
        if not is_blob_key(sha256, storage_key):
            stored = _read_through_storage(row)
            if stored.unreadable or not version:
                return stored
            current = self._current_version(self._key(storage_key))
            return stored._replace(current_version=current)
        where = {"Bucket": self.bucket, "Key": self._key(storage_key)}
        if version:
            where["VersionId"] = version
        try:
            digest, read = self._hash(where, size)
        except Exception as error:
            if _is_missing(error):
                return Stored(unreadable=VERSION_GONE if version else MISSING)
            return Stored(unreadable=f"it cannot be read ({error})")
        if not version:
            return Stored(digest, read)
        current = self._current_version(where["Key"])
        if current != version and self._holds(where["Key"], current, (sha256, size)):
            current = version  # the logged bytes again: reads by key get them
        return Stored(digest, read, current_version=current)

    def _holds(self, key: str, version: str, logged: tuple[str, int]) -> bool:
        """Whether ``version`` of ``key`` holds the ``logged`` bytes (digest,
        size): a later write of the same bytes, as two uploads of one blob at
        once make, is no overwrite."""
        where = {"Bucket": self.bucket, "Key": key, "VersionId": version}
        try:
            return self._hash(where, logged[1]) == logged
        except Exception:  # a deleted key's marker, a version gone: not these bytes
            return False

    def _key(self, storage_key: str) -> str:
        return str(self.storage._normalize_name(storage_key))

    def _current_version(self, key: str) -> str:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except Exception as error:
            if not _is_missing(error):
                raise
            return "none (the key was deleted)"
        return str(head.get("VersionId") or "none")

    def _hash(self, where: dict[str, str], size: int) -> tuple[str, int]:
        if size >= RANGED_MIN:
            try:
                return self._hash_ranges(where)
            except Exception as error:  # an empty object has no range
                response: dict[str, Any] = getattr(error, "response", None) or {}
                if response.get("Error", {}).get("Code") != "InvalidRange":
                    raise
        digest, read = hashlib.sha256(), 0
        body = self.client.get_object(**where)["Body"]
        try:
            while chunk := body.read(CHUNK):
                digest.update(chunk)
                read += len(chunk)
        finally:
            body.close()
        return digest.hexdigest(), read

    def _part(self, where: dict[str, str], start: int, end: int) -> bytes:
        response = self.client.get_object(**where, Range=f"bytes={start}-{end}")
        return bytes(response["Body"].read())

    def _hash_ranges(self, where: dict[str, str]) -> tuple[str, int]:
        """The object in ranges of ``PART``, a few fetched at once, hashed in
        order; its size from the first range's ``Content-Range``."""
        first = self.client.get_object(**where, Range=f"bytes=0-{PART - 1}")
        digest = hashlib.sha256(body := first["Body"].read())
        if not first.get("ContentRange"):  # the whole object (an empty one)
            return digest.hexdigest(), len(body)
        total = int(str(first["ContentRange"]).rsplit("/", 1)[1])
        starts = iter(range(PART, total, PART))
        with ThreadPoolExecutor(PARTS_AHEAD) as pool:
            ahead: deque[Future[bytes]] = deque()
            for start in starts:
                end = min(start + PART, total) - 1
                ahead.append(pool.submit(self._part, where, start, end))
                if len(ahead) >= PARTS_AHEAD:
                    digest.update(ahead.popleft().result())
            while ahead:
                digest.update(ahead.popleft().result())
        return digest.hexdigest(), total


def _tasks(rows: Iterable[Row]) -> Iterator[list[Row]]:
    """Rows in tasks of ``TASK_BLOBS`` blobs or about ``TASK_BYTES`` bytes."""
    task: list[Row] = []
    size = 0
    for row in rows:
        task.append(row)
        size += row[2]
        if len(task) >= TASK_BLOBS or size >= TASK_BYTES:
            yield task
            task, size = [], 0
    if task:
        yield task


def _read_task(read: Callable[[Row], Stored], task: list[Row]) -> Found:
    found: Found = {}
    for place, row in enumerate(task):
        if not _intact(row, stored := read(row)):
            found[place] = stored
    return found


def _read_now(read: Callable[[Row], Stored], task: list[Row]) -> Future[Found]:
    found: Future[Found] = Future()
    found.set_result(_read_task(read, task))
    return found


def read_blobs(
    rows: Iterable[Row],
    read: Callable[[Row], Stored],
    threads: int,
    *,
    inline_below: int = 0,
    processes: ReaderProcesses | None = None,
) -> Iterator[tuple[list[Row], Found]]:
    """The rows in tasks, in the rows' order, each with what ``read`` found of
    its blobs that do not hold what their rows record; read by ``threads``
    threads at most two tasks each ahead. A task whose blobs are smaller than
    ``inline_below`` bytes on average is handed to ``processes``, or without
    them read in the calling thread (handing it to a thread would cost more
    than its reads)."""
    if threads <= 1:
        for task in _tasks(rows):
            yield task, _read_task(read, task)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="fixity") as pool:
        ahead: deque[tuple[list[Row], _Reading]] = deque()
        for task in _tasks(rows):
            reading: _Reading
            if sum(row[2] for row in task) >= inline_below * len(task):
                reading = pool.submit(_read_task, read, task)
            elif processes is not None:
                reading = processes.submit(task)
            else:
                reading = _read_now(read, task)
            ahead.append((task, reading))
            if len(ahead) >= 2 * threads:
                done, found = ahead.popleft()
                yield done, found.result()
        while ahead:
            done, found = ahead.popleft()
            yield done, found.result()


def _report(report: FixityReport, row: tuple[int, str], kind: str, detail: str) -> None:
    """One finding per deposit naming the blob ``row`` (its pk and digest):
    one without a deposit, if none does."""
    pk, sha256 = row
    named: list[tuple[uuid.UUID | str, int | None, str]] = list(
        DepositBlob.objects.filter(blob_id=pk)
        .values_list(
            "deposit__public_id", "deposit__log_index", "deposit__rfp__reference"
        )
        .order_by("deposit__log_index")
        .distinct()
    )
    _add(report, sha256, kind, detail, named or [("", None, "")])


def _add(
    report: FixityReport,
    sha256: str,
    kind: str,
    detail: str,
    named: Iterable[tuple[uuid.UUID | str, int | None, str]],
) -> None:
    subject = f"blob {sha256[:16]}"
    for deposit, index, rfp in named:
        where = f" (deposit #{index})" if index is not None else ""
        report.findings.add(
            Finding(
                kind,
                subject + where,
                detail,
                log_index=index,
                sha256=sha256,
                rfp_reference=rfp,
                deposit=str(deposit or ""),
            )
        )


def judge_blob(report: FixityReport, row: Row, stored: Stored) -> None:
    """The findings about one blob, from what its reader found."""
    pk, sha256, size, storage_key, version = row
    report.counts.blobs_checked += 1
    blob = (pk, sha256)
    if not is_blob_key(sha256, storage_key):
        _report(
            report,
            blob,
            Kind.ROW_ALTERED,
            f"The blob row's storage key {storage_key!r} is not its content key.",
        )
    if stored.unreadable:
        detail = f"The blob is unreadable: {stored.unreadable}."
        _report(report, blob, Kind.BLOB_MISSING, detail)
        return
    report.counts.bytes_hashed += stored.size
    if (stored.digest, stored.size) != (sha256, size):
        _report(
            report,
            blob,
            Kind.BLOB_ALTERED,
            f"The stored bytes hash to {stored.digest} ({stored.size} B); the "
            f"deposit logged {sha256} ({size} B).",
        )
    if stored.current_version is not None and stored.current_version != version:
        _report(
            report,
            blob,
            Kind.BLOB_OVERWRITTEN,
            f"The key's current version is {stored.current_version}, not the "
            f"deposited version {version}: the deposit still reads its version, "
            "but anything reading the key gets other bytes.",
        )


def judge_task(report: FixityReport, task: list[Row], found: Found) -> None:
    """The findings about a task's blobs: those in ``found`` judged one by one,
    the others counted (they hold what their rows record)."""
    report.counts.blobs_checked += len(task) - len(found)
    report.counts.bytes_hashed += sum(row[2] for row in task) - sum(
        task[place][2] for place in found
    )
    for place, stored in found.items():
        judge_blob(report, task[place], stored)


def _root_fd(storage: FileSystemStorage) -> int | None:
    try:
        return os.open(storage.location, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None  # no folder yet: the storage says what is missing


def rehash_blobs(report: FixityReport) -> None:
    """Every blob row's stored bytes re-hashed and compared, in storage-key
    order."""
    rows: Iterable[Row] = (
        Blob.objects.order_by("storage_key", "pk")
        .values_list("pk", "sha256", "size", "storage_key", "version_id")
        .iterator(chunk_size=BATCH)
    )
    storage, root_fd = storages["default"], None
    read: Callable[[Row], Stored] = _read_through_storage
    threads, inline_below = 1, 0  # another backend: through the storage, as it is
    processes: ReaderProcesses | None = None
    if isinstance(storage, FileSystemStorage):
        root_fd = _root_fd(storage)
        if root_fd is not None:
            read, threads = LocalReader(root_fd).read, READ_THREADS
            inline_below = LOCAL_INLINE_BELOW
            count = min(READ_PROCESSES, os.cpu_count() or 1)
            if count > 1:
                processes = ReaderProcesses(os.fspath(storage.location), count, read)
    elif (s3 := _s3()) is not None:
        read, threads = S3Reader(s3).read, READ_THREADS
    try:
        found = read_blobs(
            rows, read, threads, inline_below=inline_below, processes=processes
        )
        for task, differ in found:
            judge_task(report, task, differ)
    finally:
        if processes is not None:
            processes.close()
        if root_fd is not None:
            os.close(root_fd)


def _undeposited(report: FixityReport) -> None:
    named = DepositBlob.objects.filter(blob=OuterRef("pk"))
    blobs = Blob.objects.filter(~Exists(named)).order_by("pk")
    for sha256 in blobs.values_list("sha256", flat=True).iterator(chunk_size=BATCH):
        _add(
            report,
            sha256,
            Kind.BLOB_UNDEPOSITED,
            "A blob row no deposit names: it is not in escrow, and nothing "
            "stores a blob without depositing it.",
            [("", None, "")],  # no deposit names it
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


def _keys_in_folder(folder: str) -> set[str]:
    """The storage keys of the blob rows whose digest starts with ``folder``.
    A folder of two hex digits (as every blob's is) is read as a range of the
    digest's unique index, then held to the prefix (the range also holds
    digests that are not hex): a ``LIKE 'ab%'`` scans the whole table in
    SQLite, and in PostgreSQL under a non-C collation, once per folder."""
    if len(folder) != 2 or folder.strip(HEX_DIGITS):
        rows = Blob.objects.filter(sha256__startswith=folder)
    else:
        # the next folder's name: letters and digits only (a non-C collation
        # ignores punctuation); "ff" ends before "fg"
        after = f"{int(folder, 16) + 1:02x}" if folder != "ff" else "fg"
        rows = Blob.objects.filter(sha256__gte=folder, sha256__lt=after)
    return {
        key
        for sha256, key in rows.values_list("sha256", "storage_key")
        if sha256.startswith(folder)
    }


def _extra_objects(report: FixityReport, newer_than: datetime) -> None:
    folders, files = _listdir(BLOB_PREFIX)
    for name in files:
        report.counts.objects_listed += 1
        _extra(report, f"{BLOB_PREFIX}/{name}", newer_than)
    for folder in sorted(folders):
        path = f"{BLOB_PREFIX}/{folder}"
        known = _keys_in_folder(folder)
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
    rehash_blobs(report)
    _undeposited(report)
    _extra_objects(report, newer_than)
