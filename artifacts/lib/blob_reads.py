"""Reading and hashing blobs stored as local files, for the fixity check. No
Django.

- ``hash_file``: one blob, opened relative to the storage's folder (``os.open``
  with ``dir_fd``, without writing its access time). A small one is read in one
  call asking for one byte more than its recorded size (a read into a 1 MiB
  buffer costs a 4 KiB file more than twice what a read of its size does); a
  larger one with ``os.readv`` into the caller's reused buffer. A short read
  that ends at the recorded size is the file's end (no read of 0 bytes to
  confirm it); any other size reads on until one.
- A reader process (``python -m artifacts.lib.blob_reads FOLDER``) hashes the
  blobs its parent names, so that small blobs, whose cost is the system calls
  and the interpreter around them rather than the hash, are read on more than
  one core. Threads cannot do that: they take turns at the GIL at each of a
  blob's system calls.
- A reader process opens ``AHEAD`` blobs ahead of the one it hashes and, while
  its blobs come from the disk, asks the kernel to read them meanwhile
  (``POSIX_FADV_WILLNEED``): a daily check finds most blobs out of the page
  cache, and reading one blob at a time would wait for each read in turn.
  Measured on the development VM with 50,000 blobs of 4 KiB after dropping the
  caches: 156-169 us a blob one at a time, 76-82 us 16 ahead, 59 us 64 ahead.
  The hint costs about 1 us a blob that is in the page cache, so a task whose
  blobs took less than ``COLD_BLOB_SECONDS`` each on average turns it off for
  the next task; a slower one turns it on.

The reader's protocol. In: one line per blob, ``<storage key>\\t<recorded
size>\\t<recorded sha256 hex>\\n``, and an empty line at the end of each task.
Out, for each task: the length of its replies in bytes on a line of its own,
then one line for each blob that does not hold what was recorded, in order:
``<its place in the task> <sha256 hex> <size>\\n``, or ``<its place> !<why it
cannot be read>\\n`` (``read_task`` reads them). A blob that does hold the
recorded bytes gets no line: the parent has nothing to learn of it but that.
The reader ends at the end of its input: its parent closed the pipe, or died.
The parent names only content keys (``blobs/ab/<sha256>``), never a path of a
vendor's choosing, and the reader refuses a key that could leave its folder."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import deque
from typing import IO, Final

CHUNK: Final = 1024 * 1024  # one read, and a reader's buffer
SMALL: Final = 64 * 1024  # a blob recorded smaller is read in one call
MISSING: Final = "it is missing from the storage"
AHEAD: Final = 32  # blobs a reader process opens ahead of the one it hashes
COLD_BLOB_SECONDS: Final = 40e-6  # a task slower than this a blob: read ahead
WILL_NEED: Final = getattr(os, "POSIX_FADV_WILLNEED", None)  # not on macOS
Answer = tuple[str, int, str]  # what ``hash_file`` returns
# The check reads every blob each day, and would write each one's access time
# (relatime writes it once a day): O_NOATIME. Only the files' owner may ask for
# it: a folder of another user's files is opened without it.
NO_ATIME: Final = getattr(os, "O_NOATIME", 0)
_open_flags = [os.O_RDONLY | NO_ATIME]


def _open(key: str, folder_fd: int) -> int:
    try:
        return os.open(key, _open_flags[0], dir_fd=folder_fd)
    except PermissionError:
        if not _open_flags[0] & NO_ATIME:
            raise
        fd = os.open(key, os.O_RDONLY, dir_fd=folder_fd)
        _open_flags[0] = os.O_RDONLY  # not the files' owner: ask no more
        return fd


def hash_file(folder_fd: int, key: str, expected: int, view: memoryview) -> Answer:
    """(SHA-256 hex, size, "") of the file at ``key`` under ``folder_fd``, or
    ("", 0, why it cannot be read). ``view``: the caller's buffer."""
    opened = open_blob(folder_fd, key)
    if isinstance(opened, str):
        return "", 0, opened
    return hash_open(opened, expected, view)


def open_blob(folder_fd: int, key: str) -> int | str:
    """The file at ``key`` under ``folder_fd``, open; or why it cannot be."""
    try:
        return _open(key, folder_fd)
    except FileNotFoundError:
        return MISSING
    except OSError as error:
        return f"it cannot be read ({error})"


def read_soon(fd: int, expected: int) -> None:
    """Ask the kernel to start reading the blob's first bytes (a hint: where it
    cannot be given, the read just waits)."""
    if WILL_NEED is not None:
        try:  # noqa: SIM105 - once a blob: a try costs nothing, a `with` does
            os.posix_fadvise(fd, 0, min(expected + 1, CHUNK), WILL_NEED)
        except OSError:
            pass


def hash_open(fd: int, expected: int, view: memoryview) -> Answer:
    """``hash_file``'s answer for the blob open as ``fd``, which it closes."""
    try:
        if expected < SMALL:  # one byte more than recorded: a longer file shows
            data = os.read(fd, expected + 1)
            digest, size = hashlib.sha256(data), len(data)
            # a short read that ends at the recorded size: the file's end
            more = size not in (0, expected)
        else:
            digest, size, more = hashlib.sha256(), 0, True
        while more:
            read = os.readv(fd, (view,))
            digest.update(view[:read])
            size += read
            more = read > 0 and not (read < len(view) and size == expected)
    except OSError as error:
        return "", 0, f"it cannot be read ({error})"
    finally:
        os.close(fd)
    return digest.hexdigest(), size, ""


def reply(place: int, digest: str, size: int, unreadable: str) -> bytes:
    """One line of a reader's output: the blob at ``place`` in its task does
    not hold the recorded bytes."""
    if unreadable:
        why = " ".join(unreadable.split())
        return f"{place} !{why}\n".encode("utf-8", "replace")
    return f"{place} {digest} {size}\n".encode("ascii")


def parse_reply(line: bytes) -> tuple[int, Answer]:
    """A reader's line: the blob's place in its task, and what ``hash_file``
    returned for it; ValueError if it is none."""
    if not line.endswith(b"\n"):
        raise ValueError("the reader process ended before its reply")
    place, _, found = line[:-1].partition(b" ")
    if found.startswith(b"!"):
        return int(place), ("", 0, found[1:].decode("utf-8", "replace"))
    digest, size = found.split(b" ")
    return int(place), (digest.decode("ascii"), int(size), "")


def read_task(replies: IO[bytes], count: int) -> dict[int, Answer]:
    """The replies to a task of ``count`` blobs: what ``hash_file`` returned
    for each blob that does not hold the recorded bytes, by its place in the
    task; ValueError if the reader ended first or said something else."""
    header = replies.readline()
    if not header.endswith(b"\n"):
        raise ValueError("the reader process ended before its reply")
    length = int(header)
    body = replies.read(length)
    if len(body) != length:
        raise ValueError("the reader process ended before its reply")
    found: dict[int, Answer] = {}
    last = -1
    for line in body.splitlines(keepends=True):
        place, read = parse_reply(line)
        if not last < place < count:
            raise ValueError(f"the reader process replied for blob {place} of {count}")
        found[last := place] = read
    return found


def _send(replies: IO[bytes], pending: list[bytes]) -> None:
    body = b"".join(pending)
    replies.write(b"%d\n" % len(body))
    replies.write(body)
    replies.flush()
    pending.clear()


Waiting = tuple[Answer, int | Answer]  # recorded; the open file, or what it holds


def _opened(folder_fd: int, line: bytes, ahead: bool) -> Waiting:
    """The blob a request line names, with what was recorded: open (its read
    asked for if ``ahead``), or what is known of it already."""
    key, size, digest = line.rstrip(b"\n").split(b"\t")
    recorded = (digest.decode("ascii"), int(size), "")
    if key.startswith(b"/") or b".." in key:  # never outside the folder
        return recorded, ("", 0, f"{key!r} is not a content key")
    opened = open_blob(folder_fd, os.fsdecode(key))
    if isinstance(opened, str):
        return recorded, ("", 0, opened)
    if ahead:
        read_soon(opened, recorded[1])
    return recorded, opened


def _judge_oldest(
    waiting: deque[Waiting], named: int, view: memoryview, pending: list[bytes]
) -> None:
    """Hash the oldest blob waiting (if open) and add its reply to ``pending``
    if it does not hold what was recorded. Its place in the task: ``named``
    blobs so far, less those still waiting behind it."""
    place = named - len(waiting)
    recorded, blob = waiting.popleft()
    found = hash_open(blob, recorded[1], view) if isinstance(blob, int) else blob
    if found != recorded:
        pending.append(reply(place, *found))


def _end_task(
    waiting: deque[Waiting],
    named: int,
    view: memoryview,
    pending: list[bytes],
    replies: IO[bytes],
) -> None:
    """Hash the task's blobs still waiting and send its replies."""
    while waiting:
        _judge_oldest(waiting, named, view, pending)
    _send(replies, pending)


def serve(folder: str, requests: IO[bytes], replies: IO[bytes]) -> None:
    """Hash the blobs named on ``requests`` until its end (module docstring):
    each opened when named and hashed ``AHEAD`` blobs later."""
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    view = memoryview(bytearray(CHUNK))
    waiting: deque[Waiting] = deque()
    pending: list[bytes] = []
    named = 0  # blobs of the task so far
    # Hints on until a task shows its blobs in the page cache. A task's time
    # includes waiting for its lines: a slow parent can only turn them on.
    ahead, started = True, time.perf_counter()
    try:
        for line in requests:
            if line != b"\n":
                waiting.append(_opened(folder_fd, line, ahead))
                named += 1
                if len(waiting) > AHEAD:
                    _judge_oldest(waiting, named, view, pending)
                continue
            _end_task(waiting, named, view, pending, replies)
            now = time.perf_counter()
            ahead = now - started > COLD_BLOB_SECONDS * named
            named, started = 0, now
        if named:  # a task its parent did not end: it is gone
            _end_task(waiting, named, view, pending, replies)
    finally:
        for _, blob in waiting:
            if isinstance(blob, int):
                os.close(blob)
        os.close(folder_fd)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m artifacts.lib.blob_reads FOLDER\n")
        return 2
    try:
        serve(argv[0], sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the parent stopped reading: it is done with us
        # (and the interpreter's last flush at exit must not say so again)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
