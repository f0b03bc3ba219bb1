"""Reading and hashing blobs stored as local files, for the fixity check. No
Django.

- ``hash_file``: one blob, opened relative to the storage's folder (``os.open``
  with ``dir_fd``) and read with ``os.readv`` into the caller's reused buffer. A
  short read that ends at the recorded size is the file's end (no read of 0
  bytes to confirm it); any other size reads on until one.
- A reader process (``python -m artifacts.lib.blob_reads FOLDER``) hashes the
  blobs its parent names, so that small blobs, whose cost is the system calls
  and the interpreter around them rather than the hash, are read on more than
  one core. Threads cannot do that: they take turns at the GIL at each of a
  blob's system calls.

The reader's protocol. In: one line per blob, ``<storage key>\\t<recorded
size>\\n``, and an empty line at the end of each task. Out, for each task: the
length of its replies in bytes on a line of its own, then the replies, one line
per blob in order, ``<sha256 hex> <size>\\n`` or ``!<why it cannot be
read>\\n`` (``read_task`` reads them). The reader ends at the end of its input:
its parent closed the pipe, or died. The parent names only content keys
(``blobs/ab/<sha256>``), never a path of a vendor's choosing, and the reader
refuses a key that could leave its folder."""

from __future__ import annotations

import hashlib
import os
import sys
from typing import IO, Final

CHUNK: Final = 1024 * 1024  # one read, and a reader's buffer
MISSING: Final = "it is missing from the storage"


def hash_file(
    folder_fd: int, key: str, expected: int, view: memoryview
) -> tuple[str, int, str]:
    """(SHA-256 hex, size, "") of the file at ``key`` under ``folder_fd``, or
    ("", 0, why it cannot be read). ``view``: the caller's buffer."""
    try:
        fd = os.open(key, os.O_RDONLY, dir_fd=folder_fd)
    except FileNotFoundError:
        return "", 0, MISSING
    except OSError as error:
        return "", 0, f"it cannot be read ({error})"
    chunk = len(view)
    try:
        read = os.readv(fd, (view,))
        digest, size = hashlib.sha256(view[:read]), read
        # a short read that ends at the recorded size: the file's end
        while read and not (read < chunk and size == expected):
            read = os.readv(fd, (view,))
            digest.update(view[:read])
            size += read
    except OSError as error:
        return "", 0, f"it cannot be read ({error})"
    finally:
        os.close(fd)
    return digest.hexdigest(), size, ""


def reply(digest: str, size: int, unreadable: str) -> bytes:
    """One line of a reader's output."""
    if unreadable:
        return ("!" + " ".join(unreadable.split()) + "\n").encode("utf-8", "replace")
    return f"{digest} {size}\n".encode("ascii")


def parse_reply(line: bytes) -> tuple[str, int, str]:
    """A reader's line as ``hash_file`` returns it; ValueError if it is none."""
    if not line.endswith(b"\n"):
        raise ValueError("the reader process ended before its reply")
    if line.startswith(b"!"):
        return "", 0, line[1:-1].decode("utf-8", "replace")
    digest, size = line.split()
    return digest.decode("ascii"), int(size), ""


def read_task(replies: IO[bytes], count: int) -> list[tuple[str, int, str]]:
    """A task's ``count`` replies, as ``hash_file`` returns them; ValueError if
    the reader ended first or said something else."""
    header = replies.readline()
    if not header.endswith(b"\n"):
        raise ValueError("the reader process ended before its reply")
    length = int(header)
    body = replies.read(length)
    if len(body) != length:
        raise ValueError("the reader process ended before its reply")
    lines = body.splitlines(keepends=True)
    if len(lines) != count:
        raise ValueError(f"the reader process replied {len(lines)} times, not {count}")
    return [parse_reply(line) for line in lines]


def _send(replies: IO[bytes], pending: list[bytes]) -> None:
    body = b"".join(pending)
    replies.write(b"%d\n" % len(body))
    replies.write(body)
    replies.flush()
    pending.clear()


def serve(folder: str, requests: IO[bytes], replies: IO[bytes]) -> None:
    """Hash the blobs named on ``requests`` until its end (module docstring)."""
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    view = memoryview(bytearray(CHUNK))
    pending: list[bytes] = []
    try:
        for line in requests:
            if line == b"\n":
                _send(replies, pending)
                continue
            key, _, expected = line.rstrip(b"\n").partition(b"\t")
            if key.startswith(b"/") or b".." in key:  # never outside the folder
                found = ("", 0, f"{key!r} is not a content key")
            else:
                found = hash_file(folder_fd, os.fsdecode(key), int(expected), view)
            pending.append(reply(*found))
        if pending:
            _send(replies, pending)
    finally:
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
