"""The fixity check's blob reader (``artifacts.lib.blob_reads``): one blob
hashed from a folder, and the reader process's line protocol, in memory and as
a real process."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts.lib.blob_reads import (
    MISSING,
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
    view = memoryview(bytearray(64))

    for recorded in (99, 100, 101, 64, 0):
        assert hash_file(fd, key, recorded, view)[:2] == (
            hashlib.sha256(data).hexdigest(),
            100,
        )


def test_missing_and_unreadable_files_say_why(folder: tuple[Path, int]) -> None:
    path, fd = folder
    (path / "blobs" / "ab").mkdir(parents=True)
    view = memoryview(bytearray(64))

    assert hash_file(fd, "blobs/ab/" + "a" * 64, 1, view) == ("", 0, MISSING)
    digest, size, why = hash_file(fd, "blobs/ab", 1, view)  # a folder
    assert (digest, size) == ("", 0)
    assert why.startswith("it cannot be read (")


def test_the_protocol_answers_each_line_in_order_and_flushes_at_a_task_s_end(
    folder: tuple[Path, int],
) -> None:
    path, _ = folder
    first, second = os.urandom(10), os.urandom(5000)
    keys = [_put(path, first), _put(path, second)]
    lines = [
        f"{keys[0]}\t10\n",
        "blobs/00/" + "0" * 64 + "\t3\n",  # missing
        "\n",  # the end of a task
        f"{keys[1]}\t5000\n",
        "../outside\t1\n",  # never outside the folder
        "/etc/passwd\t1\n",
        "\n",
    ]
    out = io.BytesIO()

    serve(str(path), io.BytesIO("".join(lines).encode()), out)

    out.seek(0)
    assert read_task(out, 2) == [
        (hashlib.sha256(first).hexdigest(), 10, ""),
        ("", 0, MISSING),
    ]
    assert read_task(out, 3) == [
        (hashlib.sha256(second).hexdigest(), 5000, ""),
        ("", 0, "b'../outside' is not a content key"),
        ("", 0, "b'/etc/passwd' is not a content key"),
    ]
    assert out.read() == b""


def test_a_task_s_replies_cut_short_or_miscounted_are_refused() -> None:
    whole = b"%d\n" % len(reply("ab" * 32, 7, "")) + reply("ab" * 32, 7, "")
    assert read_task(io.BytesIO(whole), 1) == [("ab" * 32, 7, "")]
    for cut in (b"", whole[:2], whole[:-1]):
        with pytest.raises(ValueError, match="ended before its reply"):
            read_task(io.BytesIO(cut), 1)
    with pytest.raises(ValueError, match="replied 1 times, not 2"):
        read_task(io.BytesIO(whole), 2)


def test_a_reply_is_one_line_and_a_cut_one_is_refused() -> None:
    assert reply("ab" * 32, 7, "") == ("ab" * 32 + " 7\n").encode()
    assert reply("", 0, "it cannot\nbe read") == b"!it cannot be read\n"
    assert parse_reply(reply("", 0, "it cannot\nbe read")) == (
        "",
        0,
        "it cannot be read",
    )
    for cut in (b"", b"ab 7", b"!no end"):
        with pytest.raises(ValueError, match="ended before its reply"):
            parse_reply(cut)
    with pytest.raises(ValueError, match="values to unpack"):
        parse_reply(b"not-a-reply\n")


def test_the_reader_process_answers_and_ends_with_its_input(tmp_path: Path) -> None:
    data = os.urandom(300)
    key = _put(tmp_path, data)
    command = [sys.executable, "-m", "artifacts.lib.blob_reads", str(tmp_path)]
    environment = {"PYTHONPATH": str(ROOT), "PATH": os.defpath}

    done = subprocess.run(
        command,
        input=f"{key}\t300\n\n".encode(),
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
    assert read_task(io.BytesIO(done.stdout), 1) == [
        (hashlib.sha256(data).hexdigest(), 300, "")
    ]
    assert usage.returncode == 2
    assert b"usage" in usage.stderr
