"""Local storage for bundle files: the spool's direct-I/O writer, the blob file
storage's atomic ``_save`` and an ingest through both onto real files."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage

from accounts.models import Organisation
from artifacts.conf import bundle_storage_threads
from artifacts.lib import spool as spool_module
from artifacts.lib.archive import FileDigest, Member
from artifacts.lib.spool import (
    BATCH_FILES,
    DIRECT_BLOCK,
    DIRECT_BUFFER,
    DirectFile,
    Spool,
)
from artifacts.models import Bundle
from artifacts.storage.blobs import blob_key, blob_write
from artifacts.storage.local import BlobFileSystemStorage
from tests.artifacts.corpus.build import good_files, noise
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    open_rfp,
    register_corpus_keys,
)

SIZES = [0, 1, DIRECT_BLOCK - 1, DIRECT_BLOCK, DIRECT_BLOCK + 1, DIRECT_BUFFER + 7]


# --- DirectFile ---------------------------------------------------------------------


def _write_in_pieces(handle: Any, data: bytes, piece: int) -> None:
    for start in range(0, len(data), piece):
        handle.write(data[start : start + piece])
    handle.close()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("piece", [1000, 1 << 20])
def test_direct_file_writes_exactly_the_bytes(
    tmp_path: Path, size: int, piece: int
) -> None:
    data = noise(size, seed=str(size))
    path = tmp_path / "f"
    handle = DirectFile.create(path) or path.open("xb")

    _write_in_pieces(handle, data, piece)

    assert path.read_bytes() == data


def test_direct_file_is_refused_where_the_file_system_says_einval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any) -> int:
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(spool_module.os, "open", refusing_open)

    assert DirectFile.create(tmp_path / "f") is None
    assert not (tmp_path / "f").exists()


def test_direct_file_falls_back_when_a_direct_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = DirectFile.create(tmp_path / "f")
    if handle is None:
        pytest.skip("no O_DIRECT here")
    real_write, calls = os.write, []

    def write_refusing_direct_once(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(spool_module.os, "write", write_refusing_direct_once)
    data = noise(DIRECT_BUFFER + 5, seed="3")

    _write_in_pieces(handle, data, 1 << 20)

    assert (tmp_path / "f").read_bytes() == data
    assert len(calls) >= 2


def test_direct_file_reports_other_write_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = DirectFile.create(tmp_path / "f")
    if handle is None:
        pytest.skip("no O_DIRECT here")

    def full_disk(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool_module.os, "write", full_disk)

    with pytest.raises(OSError, match="No space"):
        _write_in_pieces(handle, noise(DIRECT_BUFFER, seed="4"), 1 << 20)


@pytest.mark.parametrize("direct_io", [True, False])
def test_spool_keeps_large_and_small_members_either_way(
    tmp_path: Path, direct_io: bool
) -> None:
    large, small = noise(300_000, seed="1"), noise(100, seed="2")
    with Spool(str(tmp_path), small_file=1024, direct_io=direct_io) as spool:
        for name, data in (("large", large), ("small", small)):
            sink = spool.sink(Member(name, len(data)))
            assert sink is not None
            for start in range(0, len(data), 65536):
                sink.write(data[start : start + 65536])
            sink.finish(FileDigest(len(data), "0" * 64))
        spool.flush()

        assert spool.files["large"].read() == large
        assert spool.files["large"].path is not None
        assert spool.files["small"].data == small
        directory = spool.directory
    assert not directory.exists()


def test_spool_without_a_memory_budget_writes_small_members_to_files(
    tmp_path: Path,
) -> None:
    small, cut = noise(700, seed="5"), noise(900, seed="6")
    with Spool(str(tmp_path), small_file=1024, memory_budget=0) as spool:
        for name, data, digest in (
            ("small", small, FileDigest(len(small), "0" * 64)),
            ("cut", cut, None),  # not read to its end: nothing is kept
        ):
            sink = spool.sink(Member(name, len(data)))
            assert sink is not None
            sink.write(data[:500])
            sink.write(data[500:])
            sink.finish(digest)
        spool.flush()

        kept = spool.files["small"]
        assert kept.data is None
        assert kept.path is not None
        assert kept.read() == small
        assert "cut" not in spool.files
        assert [p.name for p in spool.directory.iterdir()] == [kept.path.name]


def test_spool_writes_many_small_members_in_batches_all_there_after_flush(
    tmp_path: Path,
) -> None:
    count = 2 * BATCH_FILES + 3  # two full batches and a partial one
    data = {f"f{n:03d}": noise(n + 1, seed=str(n)) for n in range(count)}
    with Spool(str(tmp_path), small_file=1024, memory_budget=0) as spool:
        for name, content in data.items():
            sink = spool.sink(Member(name, len(content)))
            assert sink is not None
            sink.write(content)
            sink.finish(FileDigest(len(content), "0" * 64))
        spool.flush()

        assert {name: spool.files[name].read() for name in data} == data
        assert len(list(spool.directory.iterdir())) == count
        directory = spool.directory
    assert not directory.exists()


def test_a_spool_closed_before_its_flush_leaves_no_file(tmp_path: Path) -> None:
    with Spool(str(tmp_path), small_file=1024, memory_budget=0) as spool:
        sink = spool.sink(Member("pending", 10))
        assert sink is not None
        sink.write(b"0123456789")
        sink.finish(FileDigest(10, "0" * 64))
        directory = spool.directory
    assert not directory.exists()


# --- BlobFileSystemStorage ----------------------------------------------------------


@pytest.fixture
def blob_storage(tmp_path: Path) -> BlobFileSystemStorage:
    return BlobFileSystemStorage(location=tmp_path / "media")


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".incoming-*"))


def test_blob_storage_saves_bytes_under_the_name(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    name = blob_storage.save("blobs/ab/abc", ContentFile(b"hello"))

    assert name == "blobs/ab/abc"
    assert (tmp_path / "media/blobs/ab/abc").read_bytes() == b"hello"
    assert oct((tmp_path / "media/blobs/ab/abc").stat().st_mode & 0o777) == "0o644"
    assert _leftovers(tmp_path) == []


def test_blob_storage_never_overwrites_an_existing_name(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    blob_storage.save("blobs/ab/abc", ContentFile(b"first"))

    other = blob_storage.save("blobs/ab/abc", ContentFile(b"second"))

    assert other != "blobs/ab/abc"
    assert (tmp_path / "media/blobs/ab/abc").read_bytes() == b"first"
    assert blob_storage.open(other).read() == b"second"


def test_blob_storage_loses_a_race_without_overwriting(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    """Another writer publishes the name between the existence check and the
    link: the link refuses, Django's alternative name is used."""
    target = tmp_path / "media/blobs/ab/abc"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"the other writer's")

    name = blob_storage._save("blobs/ab/abc", ContentFile(b"mine"))

    assert name != "blobs/ab/abc"
    assert target.read_bytes() == b"the other writer's"
    assert _leftovers(tmp_path) == []


class _TakeOver(File):
    def __init__(self, path: Path) -> None:
        super().__init__(path.open("rb"), name=str(path))
        self._path = str(path)

    def temporary_file_path(self) -> str:
        return self._path


def test_blob_storage_takes_a_temporary_file_over_without_copying(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    source = tmp_path / "spooled"
    source.write_bytes(b"spooled bytes")
    inode = source.stat().st_ino

    with _TakeOver(source) as content:
        blob_storage.save("blobs/cd/cde", content)

    stored = tmp_path / "media/blobs/cd/cde"
    assert stored.read_bytes() == b"spooled bytes"
    assert stored.stat().st_ino == inode
    assert not source.exists()


def test_adopt_links_a_file_in_and_refuses_a_taken_name(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_bytes(b"spooled bytes")
    second.write_bytes(b"the same, again")
    inode = first.stat().st_ino

    assert blob_storage.adopt("blobs/cd/cde", str(first)) is True
    assert blob_storage.adopt("blobs/cd/cde", str(second)) is False

    stored = tmp_path / "media/blobs/cd/cde"
    assert stored.stat().st_ino == inode
    assert oct(stored.stat().st_mode & 0o777) == "0o644"
    assert first.stat().st_ino == inode  # left to its owner, who removes it
    assert second.read_bytes() == b"the same, again"


@pytest.mark.django_db
def test_blob_write_adopts_spool_files_on_local_storage(
    settings: Any, tmp_path: Path
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media"},
        },
    }
    data = b"adopted"
    digest = hashlib.sha256(data).hexdigest()
    spooled, again = tmp_path / "spooled", tmp_path / "again"
    spooled.write_bytes(data)
    again.write_bytes(data)
    inode = spooled.stat().st_ino

    first = blob_write(spooled, digest, len(data), consume=True)
    second = blob_write(again, digest, len(data), consume=True)

    assert (first.written, second.written) == (True, False)
    assert (tmp_path / "media" / blob_key(digest)).stat().st_ino == inode


def test_blob_storage_copies_when_linking_across_file_systems(
    blob_storage: BlobFileSystemStorage,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "spooled"
    source.write_bytes(b"from another disk")
    real_link = os.link

    def cross_device(src: Any, dst: Any) -> None:
        if Path(src) == source:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_link(src, dst)

    monkeypatch.setattr("artifacts.storage.local.os.link", cross_device)

    with _TakeOver(source) as content:
        blob_storage.save("blobs/ef/efg", content)

    assert (tmp_path / "media/blobs/ef/efg").read_bytes() == b"from another disk"
    assert not source.exists()
    assert _leftovers(tmp_path) == []


def test_blob_storage_leaves_nothing_when_the_content_fails_midway(
    blob_storage: BlobFileSystemStorage, tmp_path: Path
) -> None:
    class Broken(ContentFile):
        def chunks(self, chunk_size: int | None = None) -> Any:
            yield b"half"
            raise OSError("the source went away")

    with pytest.raises(OSError, match="went away"):
        blob_storage.save("blobs/ab/abc", Broken(b"whatever"))

    assert not (tmp_path / "media/blobs/ab/abc").exists()
    assert _leftovers(tmp_path) == []


# --- the storage threads' default ---------------------------------------------------


def test_storage_threads_default_to_one_on_local_files(
    settings: Any, tmp_path: Path
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": tmp_path},
        },
    }
    assert bundle_storage_threads() == 1


def test_storage_threads_default_to_four_elsewhere_and_follow_the_setting(
    settings: Any,
) -> None:
    assert bundle_storage_threads() == 4  # the tests' InMemoryStorage
    settings.BUNDLE_STORAGE_THREADS = 9
    assert bundle_storage_threads() == 9


# --- an ingest onto local files -----------------------------------------------------


@pytest.mark.django_db
def test_ingest_onto_local_files_links_every_blob_into_place(
    settings: Any,
    tmp_path: Path,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media"},
        },
    }
    settings.BUNDLE_SPOOL_DIR = str(tmp_path / "spool")
    (tmp_path / "spool").mkdir()
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    rfp = open_rfp(vendor_a_org, vendor_b_org)
    files = {"traces/big.bin": noise(3 * DIRECT_BUFFER + 11, seed="9")}
    path = build_bundle(tmp_path / "in", {**good_files(), **files})

    bundle = ingest(rfp, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    for item in bundle.files.select_related("blob"):
        assert item.blob.storage_key == blob_key(item.sha256)
        with default_storage.open(item.blob.storage_key) as stored:
            assert len(stored.read()) == item.size
    big = bundle.files.get(path="traces/big.bin")
    with default_storage.open(big.blob.storage_key) as stored:
        assert stored.read() == files["traces/big.bin"]
    assert list((tmp_path / "spool").iterdir()) == []
    assert _leftovers(tmp_path) == []
