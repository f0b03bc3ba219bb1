"""The fixity check's blob reader (``artifacts.lib.blob_reads``): one blob
hashed from a folder, and the reader process's line protocol, in memory and as
a real process."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifacts.lib import blob_reads
from artifacts.lib.blob_reads import (
    MISSING,
    SMALL,
    hash_file,
    parse_reply,
    read_task,
    reply,
    serve,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield tmp_path, fd
    os.close(fd)


def _put(folder: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    key = f"blobs/{digest[:2]}/{digest}"
    (folder / key).parent.mkdir(parents=True, exist_ok=True)
    (folder / key).write_bytes(data)
    return key


@pytest.mark.parametrize("size", [0, 1, 4096, 10, 3 * 16 + 5])
def test_a_file_hashes_as_its_bytes_with_a_buffer_smaller_or_larger(
    folder: tuple[Path, int], size: int
) -> None:
    path, fd = folder
    data = os.urandom(size)
    key = _put(path, data)
    for buffer in (16, 1 << 20):  # many reads, or one short read
        view = memoryview(bytearray(buffer))
        found = hash_file(fd, key, size, view)
        assert found == (hashlib.sha256(data).hexdigest(), size, "")


def test_a_recorded_size_that_is_wrong_still_reads_to_the_end(
    folder: tuple[Path, int],
) -> None:
    path, fd = folder
    data = os.urandom(100)
    key = _put(path, data)

    for buffer in (64, 1 << 20):
        view = memoryview(bytearray(buffer))
        for recorded in (99, 100, 101, 64, 1, 0):
            assert hash_file(fd, key, recorded, view)[:2] == (
                hashlib.sha256(data).hexdigest(),
                100,
            )


def test_a_small_file_is_read_in_one_call_of_its_recorded_size_and_a_byte(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, fd = folder
    small, large = _put(path, os.urandom(4096)), _put(path, os.urandom(SMALL + 1))
    asked: list[tuple[str, int]] = []
    read, readv = os.read, os.readv

    def spy_read(fd: int, size: int) -> bytes:
        asked.append(("read", size))
        return read(fd, size)

    def spy_readv(fd: int, buffers: list[memoryview]) -> int:
        asked.append(("readv", len(buffers[0])))
        return readv(fd, buffers)

    monkeypatch.setattr(os, "read", spy_read)
    monkeypatch.setattr(os, "readv", spy_readv)
    view = memoryview(bytearray(1 << 20))
    hash_file(fd, small, 4096, view)
    assert asked == [("read", 4097)]
    asked.clear()
    hash_file(fd, small, 4000, view)  # it grew: read on to its end
    assert asked == [("read", 4001), ("readv", 1 << 20), ("readv", 1 << 20)]
    asked.clear()
    hash_file(fd, large, SMALL + 1, view)  # into the caller's buffer
    assert asked == [("readv", 1 << 20)]


@pytest.mark.skipif(not blob_reads.NO_ATIME, reason="no O_NOATIME on this system")
def test_a_file_s_access_time_is_left_as_it_was(folder: tuple[Path, int]) -> None:
    path, fd = folder
    key = _put(path, os.urandom(10))
    two_days_ago = time.time() - 2 * 86400  # relatime would write it on a read
    os.utime(path / key, (two_days_ago, two_days_ago))

    hash_file(fd, key, 10, memoryview(bytearray(64)))

    assert (path / key).stat().st_atime == pytest.approx(two_days_ago)


@pytest.mark.skipif(not blob_reads.NO_ATIME, reason="no O_NOATIME on this system")
def test_files_are_read_without_writing_their_access_time_where_allowed(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, fd = folder
    data = os.urandom(10)
    key = _put(path, data)
    flags: list[int] = []
    real = os.open

    def not_the_owner(key: str, mode: int, *, dir_fd: int) -> int:
        flags.append(mode)
        if mode & blob_reads.NO_ATIME:  # the kernel's answer to another user
            raise PermissionError(1, "Operation not permitted")
        return real(key, mode, dir_fd=dir_fd)

    monkeypatch.setattr(blob_reads, "_open_flags", [os.O_RDONLY | blob_reads.NO_ATIME])
    monkeypatch.setattr(os, "open", not_the_owner)
    view = memoryview(bytearray(64))
    expected = (hashlib.sha256(data).hexdigest(), 10, "")

    assert hash_file(fd, key, 10, view) == expected
    assert hash_file(fd, key, 10, view) == expected
    assert flags == [os.O_RDONLY | blob_reads.NO_ATIME, os.O_RDONLY, os.O_RDONLY]


def test_missing_and_unreadable_files_say_why(folder: tuple[Path, int]) -> None:
    path, fd = folder
    (path / "blobs" / "ab").mkdir(parents=True)
    view = memoryview(bytearray(64))

    assert hash_file(fd, "blobs/ab/" + "a" * 64, 1, view) == ("", 0, MISSING)
    digest, size, why = hash_file(fd, "blobs/ab", 1, view)  # a folder
    assert (digest, size) == ("", 0)
    assert why.startswith("it cannot be read (")


@pytest.mark.parametrize("ahead", [0, 1, 2, blob_reads.AHEAD])
def test_the_protocol_answers_for_blobs_that_differ_and_flushes_at_a_task_s_end(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch, ahead: int
) -> None:
    monkeypatch.setattr(blob_reads, "AHEAD", ahead)  # however far ahead it reads
    path, _ = folder
    first, second, third = os.urandom(10), os.urandom(5000), os.urandom(7)
    keys = [_put(path, first), _put(path, second), _put(path, third)]
    digests = [hashlib.sha256(data).hexdigest() for data in (first, second, third)]
    lines = [
        f"{keys[0]}\t10\t{digests[0]}\n",  # as recorded: no reply
        "blobs/00/" + "0" * 64 + "\t3\t" + "0" * 64 + "\n",  # missing
        f"{keys[2]}\t7\t{'1' * 64}\n",  # other bytes than recorded
        f"{keys[2][:8]}\t1\t{'0' * 64}\n",  # a folder
        "\n",  # the end of a task
        f"{keys[1]}\t5000\t{digests[1]}\n",
        f"{keys[2]}\t6\t{digests[2]}\n",  # another size than recorded
        "../outside\t1\t" + "0" * 64 + "\n",  # never outside the folder
        "/etc/passwd\t1\t" + "0" * 64 + "\n",
        "\n",
        f"{keys[0]}\t10\t{digests[0]}\n",
        "\n",  # a task with nothing to say
    ]
    out = io.BytesIO()

    serve(str(path), io.BytesIO("".join(lines).encode()), out)

    out.seek(0)
    replies = read_task(out, 4)
    assert replies.pop(3) == ("", 0, "it cannot be read ([Errno 21] Is a directory)")
    assert replies == {1: ("", 0, MISSING), 2: (digests[2], 7, "")}
    assert read_task(out, 4) == {
        1: (digests[2], 7, ""),
        2: ("", 0, "b'../outside' is not a content key"),
        3: ("", 0, "b'/etc/passwd' is not a content key"),
    }
    assert read_task(out, 1) == {}
    assert out.read() == b""


def _task(folder: Path, count: int) -> tuple[list[str], bytes]:
    """``count`` blobs of 10 bytes put in ``folder``: their keys, and a task
    naming them as recorded."""
    keys, lines = [], []
    for _ in range(count):
        data = os.urandom(10)
        keys.append(_put(folder, data))
        lines.append(f"{keys[-1]}\t10\t{hashlib.sha256(data).hexdigest()}\n")
    return keys, "".join(lines).encode() + b"\n"


@pytest.mark.skipif(blob_reads.WILL_NEED is None, reason="no posix_fadvise here")
@pytest.mark.parametrize(
    ("slow_below", "second_task_ahead"), [(0.0, True), (60.0, False)]
)
def test_blobs_are_read_ahead_until_a_task_shows_them_in_the_cache(
    folder: tuple[Path, int],
    monkeypatch: pytest.MonkeyPatch,
    slow_below: float,
    second_task_ahead: bool,
) -> None:
    path, _ = folder
    keys, task = _task(path, 3)
    missing = "blobs/00/" + "0" * 64 + "\t10\t" + "0" * 64 + "\n"
    hinted: list[tuple[int, int, int]] = []
    hint = os.posix_fadvise

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        hinted.append((offset, length, advice))
        hint(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    # a task that took longer than this a blob was read from the disk
    monkeypatch.setattr(blob_reads, "COLD_BLOB_SECONDS", slow_below)
    out = io.BytesIO()

    serve(str(path), io.BytesIO(missing.encode() + task + task), out)

    out.seek(0)
    assert read_task(out, 4) == {0: ("", 0, MISSING)}
    assert read_task(out, 3) == {}
    first = [(0, 11, os.POSIX_FADV_WILLNEED)] * len(keys)  # not the missing one
    assert hinted == first * (2 if second_task_ahead else 1)


def test_a_hint_the_file_system_refuses_changes_nothing(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = folder
    _, task = _task(path, 2)

    def refused(*_: object) -> None:
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(os, "posix_fadvise", refused, raising=False)
    monkeypatch.setattr(blob_reads, "WILL_NEED", 3)
    out = io.BytesIO()

    serve(str(path), io.BytesIO(task), out)

    out.seek(0)
    assert read_task(out, 2) == {}


class _GoneParent(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def _failing_input(task: bytes) -> Iterator[bytes]:
    yield from task.splitlines(keepends=True)[:3]  # three blobs opened, waiting
    raise OSError(5, "Input/output error")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc/self/fd")
@pytest.mark.parametrize("end", ["whole", "cut", "parent gone", "input fails"])
def test_no_blob_stays_open_however_the_input_ends(
    folder: tuple[Path, int], end: str
) -> None:
    path, _ = folder
    _, task = _task(path, 5)
    requests: Any = io.BytesIO(task[:-1] if end == "cut" else task)  # not ended
    if end == "input fails":
        requests = _failing_input(task)
    replies = _GoneParent() if end == "parent gone" else io.BytesIO()
    before = len(os.listdir("/proc/self/fd"))

    if end in ("parent gone", "input fails"):
        with pytest.raises(OSError, match=r"Broken pipe|Input/output error"):
            serve(str(path), requests, replies)
    else:
        serve(str(path), requests, replies)
        replies.seek(0)
        assert read_task(replies, 5) == {}

    assert len(os.listdir("/proc/self/fd")) == before


def test_a_task_s_replies_cut_short_or_out_of_place_are_refused() -> None:
    line = reply(1, "ab" * 32, 7, "")
    whole = b"%d\n" % len(line) + line
    assert read_task(io.BytesIO(whole), 2) == {1: ("ab" * 32, 7, "")}
    for cut in (b"", whole[:2], whole[:-1]):
        with pytest.raises(ValueError, match="ended before its reply"):
            read_task(io.BytesIO(cut), 2)
    with pytest.raises(ValueError, match="replied for blob 1 of 1"):
        read_task(io.BytesIO(whole), 1)
    twice = line + line  # the same blob twice, or out of order
    with pytest.raises(ValueError, match="replied for blob 1 of 3"):
        read_task(io.BytesIO(b"%d\n" % len(twice) + twice), 3)


def test_a_reply_is_one_line_and_a_cut_one_is_refused() -> None:
    assert reply(3, "ab" * 32, 7, "") == ("3 " + "ab" * 32 + " 7\n").encode()
    assert reply(0, "", 0, "it cannot\nbe read") == b"0 !it cannot be read\n"
    assert parse_reply(reply(5, "", 0, "it cannot\nbe read")) == (
        5,
        ("", 0, "it cannot be read"),
    )
    for cut in (b"", b"0 ab 7", b"0 !no end"):
        with pytest.raises(ValueError, match="ended before its reply"):
            parse_reply(cut)
    for wrong in (b"not-a-reply\n", b"x ab 7\n", b"0 ab\n"):
        with pytest.raises(ValueError, match=r"invalid literal|values to unpack"):
            parse_reply(wrong)


def test_the_reader_process_answers_and_ends_with_its_input(tmp_path: Path) -> None:
    data = os.urandom(300)
    key, digest = _put(tmp_path, data), hashlib.sha256(data).hexdigest()
    command = [sys.executable, "-m", "artifacts.lib.blob_reads", str(tmp_path)]
    environment = {"PYTHONPATH": str(ROOT), "PATH": os.defpath}

    done = subprocess.run(
        command,
        input=f"{key}\t300\t{digest}\n{key}\t301\t{digest}\n\n".encode(),
        capture_output=True,
        env=environment,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    usage = subprocess.run(
        command[:-1], capture_output=True, env=environment, cwd=ROOT, timeout=60
    )

    assert done.returncode == 0, done.stderr
    assert read_task(io.BytesIO(done.stdout), 2) == {1: (digest, 300, "")}
    assert usage.returncode == 2
    assert b"usage" in usage.stderr
