"""The archive reader on its own: formats, paths, limits and streaming."""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import struct
import subprocess
import tarfile
import threading
import tracemalloc
import zipfile
from pathlib import Path
from typing import Literal

import pytest

from artifacts.lib.archive import (
    DEFAULT_LIMITS,
    ArchiveLimits,
    BundleArchive,
    FileDigest,
    Member,
    digest_archive,
    path_problems,
    strip_dot_prefix,
)
from tests.artifacts.corpus.build import (
    Entry,
    good_bundle,
    good_files,
    noise,
    patch_zip,
    write_tar,
    write_zip,
)

SMALL = ArchiveLimits(
    max_member_bytes=1 << 20, max_members=20, max_total_bytes=4 << 20, max_ratio=10
)


def codes(path: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> set[str]:
    return {problem.code for problem in digest_archive(path, limits).problems}


def archive(path: Path, *entries: Entry) -> Path:
    """``entries`` as a zip, tar or tar.gz, chosen by the name's suffix."""
    if path.suffix == ".zip":
        return write_zip(path, list(entries))
    compression: Literal["", "gz"] = "gz" if path.suffix == ".gz" else ""
    return write_tar(path, list(entries), compression=compression)


@pytest.mark.parametrize("fmt", ["tar.gz", "tar", "zip"])
def test_digest_archive_hashes_every_file_of_a_good_bundle(
    tmp_path: Path, fmt: str
) -> None:
    path = good_bundle(tmp_path, fmt)  # type: ignore[arg-type]

    result = digest_archive(path)

    assert result.ok
    assert result.format == fmt
    for name, data in good_files().items():
        assert result.files[name] == FileDigest(
            len(data), hashlib.sha256(data).hexdigest()
        )
    assert set(result.files) == {*good_files(), "manifest.json", "manifest.json.sig"}


def test_format_is_detected_by_magic_bytes_not_the_name(tmp_path: Path) -> None:
    path = good_bundle(tmp_path, "zip").rename(tmp_path / "bundle.tar.gz")

    result = digest_archive(path)

    assert result.format == "zip"
    assert result.ok


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "empty"),
        (b"BZh91AY&SY" + bytes(600), "bzip2"),
        (b"\xfd7zXZ\x00" + bytes(600), "xz"),
        (b"hello, world\n" * 100, "not a tar"),
    ],
)
def test_unknown_formats_are_refused_with_a_reason(
    tmp_path: Path, data: bytes, fragment: str
) -> None:
    path = tmp_path / "upload"
    path.write_bytes(data)

    (problem,) = digest_archive(path).problems

    assert problem.code == "archive_format"
    assert fragment in problem.message


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_long_and_non_ascii_names_are_read_as_tarfile_reads_them(
    tmp_path: Path, tar_format: int
) -> None:
    names = ["a" * 99, "deep/" + "b" * 200 + ".json", "données/é.txt", "x/" * 60 + "y"]
    path = write_tar(
        tmp_path / "t.tar", [Entry(n, n.encode()) for n in names], tar_format=tar_format
    )

    result = digest_archive(path)

    with tarfile.open(path) as archive:
        assert set(result.files) == set(archive.getnames()) == set(names)


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar")
def test_tar_made_by_plain_tar_with_dot_prefixes_is_accepted(tmp_path: Path) -> None:
    source = tmp_path / "src"
    for name, data in good_files().items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    subprocess.run(
        ["tar", "-czf", str(tmp_path / "b.tgz"), "-C", str(source), "."], check=True
    )

    result = digest_archive(tmp_path / "b.tgz")

    assert result.ok
    assert set(result.files) == set(good_files())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("traces/a.json", set()),
        ("../a", {"path_traversal"}),
        ("a/../../b", {"path_traversal"}),
        ("/etc/passwd", {"path_absolute"}),
        ("C:/windows/evil.dll", {"path_absolute"}),
        ("..\\..\\evil.bat", {"path_backslash", "path_traversal"}),
        ("a\\b", {"path_backslash"}),
        ("", {"path_empty"}),
        (".", {"path_empty"}),
        ("a//b", {"path_invalid"}),
        ("a/./b", {"path_invalid"}),
        ("evil\n.json", {"path_invalid"}),
        ("right\u202eto-left.sh", {"path_invalid"}),
        ("x" * 1025, {"path_invalid"}),
    ],
)
def test_path_problems(name: str, expected: set[str]) -> None:
    assert {code for code, _ in path_problems(name)} == expected


def test_strip_dot_prefix_drops_what_tar_adds() -> None:
    assert strip_dot_prefix("./a/b") == "a/b"
    assert strip_dot_prefix("././dir/") == "dir"
    assert strip_dot_prefix("./") == ""
    assert strip_dot_prefix("/") == "/"


def test_root_and_plain_directories_are_ignored(tmp_path: Path) -> None:
    path = archive(
        tmp_path / "a.tar.gz",
        *(Entry(name, type="dir") for name in ("./", "d")),
        Entry("d/f", b"1"),
    )

    result = digest_archive(path)

    assert result.ok
    assert set(result.files) == {"d/f"}


def test_directories_are_checked_like_files(tmp_path: Path) -> None:
    path = archive(
        tmp_path / "a.tar", Entry("../outside", type="dir"), Entry("f", b"1")
    )

    assert codes(path) == {"path_traversal"}


def test_a_file_later_used_as_a_folder_collides_in_either_order(tmp_path: Path) -> None:
    first = archive(tmp_path / "1.tar", Entry("a/b", b"1"), Entry("A", b"2"))
    second = archive(tmp_path / "2.zip", Entry("a", b"1"), Entry("a/b", b"2"))

    assert codes(first) == codes(second) == {"name_collision"}


# --- limits ------------------------------------------------------------------------


def test_member_count_limit_stops_the_walk(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar.gz", *(Entry(f"f{i}", b"") for i in range(50)))

    result = digest_archive(path, SMALL)

    assert [p.code for p in result.problems] == ["too_many_members"]
    assert not result.complete
    assert len(result.files) == SMALL.max_members


def test_declared_member_size_over_the_limit_is_not_read(tmp_path: Path) -> None:
    big = Entry("big.bin", noise((1 << 20) + 1))
    path = archive(tmp_path / "a.tar", big, Entry("after.txt", b"still read"))

    result = digest_archive(path, SMALL)

    assert codes(path, SMALL) == {"member_too_large"}
    assert result.complete
    assert set(result.files) == {"after.txt"}
    assert result.rejected == {"big.bin"}


def test_total_size_limit_stops_the_walk(tmp_path: Path) -> None:
    chunks = (Entry(f"part{i}", noise(900 << 10, str(i))) for i in range(6))
    path = archive(tmp_path / "a.tar", *chunks)

    result = digest_archive(path, SMALL)

    assert [p.code for p in result.problems] == ["total_too_large"]
    assert not result.complete
    assert len(result.files) == 4


def test_gzip_ratio_limit_stops_decompressing_early(tmp_path: Path) -> None:
    path = archive(
        tmp_path / "a.tar.gz", Entry("zeros", bytes(64 << 20)), Entry("b", b"1")
    )

    with BundleArchive(path, ArchiveLimits(max_ratio=10)) as bundle:
        scan = bundle.scan()
        read = sum(len(chunk) for chunk in next(scan).chunks())
        later = list(scan)

    assert [p.code for p in bundle.problems] == ["compression_ratio"]
    assert read < 2 << 20  # of 64 MiB
    assert later == []
    assert not bundle.complete


def test_zip_member_lying_about_its_size_is_cut_at_the_limit(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.zip", Entry("liar.bin", noise(5 << 20)))
    patch_zip(path, "liar.bin", file_size=1000)  # the headers claim 1000 bytes

    with BundleArchive(path, SMALL) as bundle:
        stream = next(bundle.scan())
        read = sum(len(chunk) for chunk in stream.chunks())
        found = {problem.code for problem in bundle.problems}

    assert read <= SMALL.max_member_bytes
    assert not stream.complete
    assert found == {"member_too_large", "header_size_mismatch"}


def test_zip_member_with_less_data_than_declared_is_refused(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.zip", Entry("short.txt", b"12345"), Entry("ok", b"1"))
    patch_zip(path, "short.txt", file_size=50)

    result = digest_archive(path)

    assert codes(path) == {"header_size_mismatch"}
    assert set(result.files) == {"ok"}


def test_zip_member_with_a_wrong_crc_is_refused_alone(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.zip", Entry("a.txt", b"hello" * 100), Entry("b", b"1"))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zipped:
        info = zipped.getinfo("a.txt")
    struct.pack_into("<L", data, info.header_offset + 14, info.CRC ^ 1)
    struct.pack_into("<L", data, data.index(b"PK\x01\x02") + 16, info.CRC ^ 1)
    path.write_bytes(bytes(data))

    result = digest_archive(path)

    assert [p.code for p in result.problems] == ["archive_unreadable"]
    assert "CRC" in result.problems[0].message
    assert set(result.files) == {"b"}


def test_zip_end_record_over_the_member_limit_is_refused_unread(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.zip", Entry("a", b"1"))
    data = bytearray(path.read_bytes())
    struct.pack_into("<HH", data, data.rindex(b"PK\x05\x06") + 8, 60000, 60000)
    path.write_bytes(bytes(data))

    assert codes(path, SMALL) == {"too_many_members"}


def test_zip_end_record_disagreeing_with_its_directory_is_refused(
    tmp_path: Path,
) -> None:
    path = archive(tmp_path / "a.zip", Entry("a", b"1"), Entry("b", b"2"))
    data = bytearray(path.read_bytes())
    struct.pack_into("<HH", data, data.rindex(b"PK\x05\x06") + 8, 1, 1)
    path.write_bytes(bytes(data))

    result = digest_archive(path)

    assert [p.code for p in result.problems] == ["archive_format"]
    assert set(result.files) == {"a", "b"}


def test_zip64_and_data_descriptors_are_read(tmp_path: Path) -> None:
    class Unseekable(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, chunk: bytes) -> int:  # type: ignore[override]
            self.data += chunk
            return len(chunk)

    sink = Unseekable()
    with (
        zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as zipped,
        zipped.open("big.json", "w", force_zip64=True) as member,
    ):
        member.write(noise(3000))
    (tmp_path / "a.zip").write_bytes(bytes(sink.data))

    result = digest_archive(tmp_path / "a.zip")

    assert result.ok
    assert result.files["big.json"].size == 3000


# --- damaged tars ------------------------------------------------------------------


def test_tar_cut_inside_member_data_is_truncated(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar", Entry("a", noise(5000)), Entry("b", b"1"))
    path.write_bytes(path.read_bytes()[:3000])

    result = digest_archive(path)

    assert [p.code for p in result.problems] == ["archive_truncated"]
    assert not result.complete
    assert result.files == {}


def test_corrupt_header_in_the_middle_is_unreadable(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar", Entry("a", b"1"), Entry("b", b"2"))
    data = bytearray(path.read_bytes())
    data[1024 + 10] ^= 0xFF  # inside the second header's name
    path.write_bytes(bytes(data))

    result = digest_archive(path)

    assert [p.code for p in result.problems] == ["archive_unreadable"]
    assert set(result.files) == {"a"}


def test_gzip_members_may_be_concatenated_but_garbage_may_not_follow(
    tmp_path: Path,
) -> None:
    raw = archive(tmp_path / "a.tar", Entry("a", b"1")).read_bytes()
    two = tmp_path / "two.tgz"
    two.write_bytes(gzip.compress(raw[:512]) + gzip.compress(raw[512:]))
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(gzip.compress(raw) + b"MZ hidden payload")

    assert digest_archive(two).ok
    assert codes(junk) == {"archive_trailing_data"}


def test_global_pax_header_may_carry_a_comment_but_not_a_path(tmp_path: Path) -> None:
    def build(name: str, headers: dict[str, str]) -> Path:
        with tarfile.open(tmp_path / name, "w", pax_headers=headers) as tar:
            info = tarfile.TarInfo("a")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"1"))
        return tmp_path / name

    assert digest_archive(build("git.tar", {"comment": "f00dfeed"})).ok  # git archive
    assert codes(build("evil.tar", {"path": "../x"})) == {"archive_format"}


# --- streaming ---------------------------------------------------------------------


class Pattern(io.RawIOBase):
    """``size`` bytes of a repeating 1 MiB block, generated on demand."""

    block = noise(1 << 20, "pattern")

    def __init__(self, size: int) -> None:
        self.left, self.position = size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        start = self.position % len(self.block)
        size = min(len(buffer), self.left, len(self.block) - start)
        buffer[:size] = self.block[start : start + size]
        self.left, self.position = self.left - size, self.position + size
        return size


@pytest.mark.parametrize("suffix", [".tar", ".zip"])
def test_a_200_mb_member_streams_in_small_chunks(tmp_path: Path, suffix: str) -> None:
    size, path = 200 << 20, tmp_path / f"big{suffix}"
    if suffix == ".zip":
        with zipfile.ZipFile(path, "w") as zipped, zipped.open("big.bin", "w") as out:
            shutil.copyfileobj(Pattern(size), out, 1 << 20)
    else:
        with tarfile.open(path, "w") as tar:
            info = tarfile.TarInfo("big.bin")
            info.size = size
            tar.addfile(info, Pattern(size))
    expected = hashlib.sha256()
    for _ in range(size >> 20):
        expected.update(Pattern.block)

    tracemalloc.start()
    result = digest_archive(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    assert result.files["big.bin"] == FileDigest(size, expected.hexdigest())
    assert peak < 8 << 20


def test_iter_chunks_reads_one_member(tmp_path: Path) -> None:
    for suffix in (".tar.gz", ".zip"):
        path = archive(
            tmp_path / f"a{suffix}", Entry("a", b"first"), Entry("b", b"2nd")
        )
        with BundleArchive(path) as bundle:
            assert b"".join(bundle.iter_chunks("b")) == b"2nd"
            with pytest.raises(KeyError):
                b"".join(bundle.iter_chunks("missing"))


def test_a_member_stream_is_read_once_and_only_during_its_scan(tmp_path: Path) -> None:
    path = archive(tmp_path / "a.tar", Entry("a", b"1"), Entry("b", b"2"))

    with BundleArchive(path) as bundle:
        streams = list(bundle.scan())

    with pytest.raises(RuntimeError):
        streams[0].chunks()


def test_digest_archive_feeds_a_sink_and_keeps_small_members(tmp_path: Path) -> None:
    path = good_bundle(tmp_path)
    received: dict[str, list[bytes]] = {}
    finished: dict[str, FileDigest | None] = {}

    class Sink:
        def __init__(self, member: Member) -> None:
            self.name = member.name
            received[self.name] = []

        def write(self, chunk: bytes) -> None:
            received[self.name].append(chunk)

        def finish(self, digest: FileDigest | None) -> None:
            finished[self.name] = digest

    result = digest_archive(
        path, keep={"manifest.json": 1 << 20, "harness/run.sh": 4}, sink=Sink
    )

    assert b"".join(received["harness/run.sh"]) == good_files()["harness/run.sh"]
    assert finished == result.files
    assert result.oversized == {"harness/run.sh"}
    assert set(result.kept) == {"manifest.json"}


def test_a_failing_sink_stops_the_digest_and_its_hashing_thread(
    tmp_path: Path,
) -> None:
    path = archive(tmp_path / "a.tar", Entry("big.bin", noise(6 << 20)))
    threads = threading.active_count()

    class Failing:
        def __init__(self, member: Member) -> None:
            pass

        def write(self, chunk: bytes) -> None:
            raise OSError("disk full")

        def finish(self, digest: FileDigest | None) -> None:
            pass

    with pytest.raises(OSError, match="disk full"):
        digest_archive(path, sink=Failing)
    assert threading.active_count() == threads
