"""The reader inflates with ISA-L (``isal``) where installed, else with ``zlib``:
both must give the same verdicts on good and broken gzip and zip data."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path
from types import ModuleType

import pytest

from artifacts.lib.archive import digest_archive, inflate
from artifacts.lib.archive.inflate import INFLATE_ERRORS
from tests.artifacts.corpus.build import Entry, noise, write_tar, write_zip

isal_zlib = pytest.importorskip("isal.isal_zlib")


def test_isal_is_the_library_in_use() -> None:
    assert inflate.LIBRARY == "isal"
    assert isal_zlib.error in INFLATE_ERRORS
    assert zlib.error in INFLATE_ERRORS


@pytest.fixture(params=["isal", "zlib"])
def library(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    module: ModuleType = isal_zlib if request.param == "isal" else zlib
    monkeypatch.setattr(inflate, "_impl", module)
    return str(request.param)


def _tar(tmp_path: Path) -> bytes:
    path = write_tar(
        tmp_path / "a.tar",
        [Entry("big", noise(3 << 20)), Entry("small", b"hello\n")],
        compression="",
    )
    return path.read_bytes()


def _codes(path: Path) -> list[str]:
    return [problem.code for problem in digest_archive(path).problems]


def test_a_good_tar_gz_gives_the_same_digests(tmp_path: Path, library: str) -> None:
    raw = _tar(tmp_path)
    path = tmp_path / "a.tgz"
    path.write_bytes(gzip.compress(raw, compresslevel=6))

    result = digest_archive(path)

    assert result.ok
    assert sorted(result.files) == ["big", "small"]
    assert result.files["small"].size == 6


def test_a_wrong_gzip_crc_is_unreadable(tmp_path: Path, library: str) -> None:
    data = bytearray(gzip.compress(_tar(tmp_path)))
    data[-8] ^= 0x01  # the trailer's CRC-32
    path = tmp_path / "crc.tgz"
    path.write_bytes(bytes(data))

    result = digest_archive(path)

    assert _codes(path) == ["archive_unreadable"]
    assert "gzip data is corrupt" in result.problems[0].message


def test_a_wrong_gzip_length_is_unreadable(tmp_path: Path, library: str) -> None:
    data = bytearray(gzip.compress(_tar(tmp_path)))
    struct.pack_into("<I", data, len(data) - 4, 12345)  # the trailer's ISIZE
    path = tmp_path / "isize.tgz"
    path.write_bytes(bytes(data))

    assert _codes(path) == ["archive_unreadable"]


def test_corrupt_deflate_data_is_unreadable(tmp_path: Path, library: str) -> None:
    data = bytearray(gzip.compress(b"x" * 200_000 + _tar(tmp_path), compresslevel=9))
    data[20:40] = b"\xff" * 20  # inside the first deflate block
    path = tmp_path / "deflate.tgz"
    path.write_bytes(bytes(data))

    assert _codes(path) == ["archive_unreadable"]


def test_a_cut_gzip_stream_is_truncated(tmp_path: Path, library: str) -> None:
    data = gzip.compress(_tar(tmp_path))
    path = tmp_path / "cut.tgz"
    path.write_bytes(data[: len(data) // 2])

    assert _codes(path) == ["archive_truncated"]


def test_concatenated_members_and_trailing_garbage(
    tmp_path: Path, library: str
) -> None:
    raw = _tar(tmp_path)
    two = tmp_path / "two.tgz"
    two.write_bytes(gzip.compress(raw[:700_000]) + gzip.compress(raw[700_000:]))
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(gzip.compress(raw) + b"MZ hidden payload")

    assert digest_archive(two).ok
    assert _codes(junk) == ["archive_trailing_data"]


def test_zip_deflate_and_crc_are_checked(tmp_path: Path, library: str) -> None:
    path = write_zip(tmp_path / "a.zip", [Entry("a.txt", b"hello " * 50_000)])
    assert digest_archive(path).ok

    data = bytearray(path.read_bytes())
    start = data.index(b"a.txt") + len("a.txt")  # the local header's name ends
    data[start + 5 : start + 25] = b"\x00" * 20  # inside the deflate data
    path.write_bytes(bytes(data))

    result = digest_archive(path)

    assert _codes(path) == ["archive_unreadable"]
    assert result.files == {}
