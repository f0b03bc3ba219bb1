"""The streamed zip: chunks stay small whatever the member sizes (no full copy
in memory), members read lazily one after the other, and the result is a zip
that Python and Info-ZIP read."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import IO, cast

import pytest

from artifacts.lib.evidence.zipstream import CHUNK, Member, bytes_member, stream_zip

MIB = 1024 * 1024


class CountingReader(io.RawIOBase):
    """``size`` pseudo-random bytes, produced as they are read."""

    opened = 0

    def __init__(self, size: int, seed: bytes) -> None:
        CountingReader.opened += 1
        self.left, self.block = size, hashlib.sha512(seed).digest() * 1024

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), self.left, len(self.block))
        buffer[:count] = self.block[:count]
        self.left -= count
        return count


def _raw(reader: io.RawIOBase) -> IO[bytes]:
    """A raw reader as the members' opener returns a file (zipstream reads it)."""
    return cast(IO[bytes], reader)


def _lazy(name: str, size: int) -> Member:
    return Member(name, lambda: _raw(CountingReader(size, name.encode())), size, False)


def test_chunks_stay_small_for_large_members() -> None:
    CountingReader.opened = 0
    members = [_lazy("blobs/a", 6 * MIB), _lazy("blobs/b", 3 * MIB)]

    chunks = stream_zip(members)
    first = next(chunks)
    opened_after_first_chunk = CountingReader.opened
    rest = list(chunks)

    assert opened_after_first_chunk == 1  # the second member is not open yet
    assert max(len(c) for c in [first, *rest]) <= CHUNK + 1024
    assert sum(len(c) for c in [first, *rest]) > 9 * MIB


def test_streamed_zip_reads_back_exactly(tmp_path: Path) -> None:
    data = os.urandom(300_000)
    members = [bytes_member("evidence.json", b'{"a":1}'), bytes_member("blobs/x", data)]
    path = tmp_path / "out.zip"

    path.write_bytes(b"".join(stream_zip(members)))

    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == ["evidence.json", "blobs/x"]
        assert archive.read("blobs/x") == data
        assert archive.getinfo("blobs/x").date_time == (1980, 1, 1, 0, 0, 0)


def test_same_members_give_the_same_bytes() -> None:
    members = [bytes_member("README.txt", b"hello\n" * 100)]

    assert b"".join(stream_zip(members)) == b"".join(stream_zip(members))


@pytest.mark.skipif(shutil.which("unzip") is None, reason="needs Info-ZIP unzip")
def test_info_zip_accepts_the_streamed_zip(tmp_path: Path) -> None:
    members = [
        bytes_member("log/checkpoint", b"origin\n1\nroot\n"),
        Member(
            "blobs/big", lambda: _raw(CountingReader(2 * MIB, b"x")), 2 * MIB, False
        ),
    ]
    path = tmp_path / "out.zip"
    path.write_bytes(b"".join(stream_zip(members)))

    done = subprocess.run(["unzip", "-t", str(path)], capture_output=True, text=True)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "No errors detected" in done.stdout
