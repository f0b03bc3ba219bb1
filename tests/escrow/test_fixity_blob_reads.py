"""The re-hash of local blobs reads files directly (``LocalReader``: by
content key, relative to the storage's folder, several threads, several tasks
ahead; small blobs in reader processes) and finds exactly what reading each
blob through the storage finds: the same findings, in the same order, with the
same counts, whatever was done to the files (changed, cut short, grown,
removed, replaced by a folder, empty) or to a row's storage key. A reader
process that dies, or cannot start, leaves its blobs to the calling thread."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from artifacts.models import Blob
from artifacts.services.fixity import blobs
from artifacts.services.fixity.report import FixityReport
from artifacts.storage.blobs import blob_put, is_blob_key
from tests.escrow.conftest import blobs_on_disk

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def disk(settings: Any, tmp_path: Path) -> Path:
    return blobs_on_disk(settings, tmp_path)


@pytest.fixture(autouse=True, params=["threads", "inline", "processes"])
def small_tasks(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """Tasks of 3 blobs for 3 threads: many tasks, several in flight; or (the
    blobs being small) each task read in the calling thread; or (small, on a
    machine of 4 CPUs) by 2 reader processes, but for the first task."""
    monkeypatch.setattr(blobs, "TASK_BLOBS", 3)
    monkeypatch.setattr(blobs, "READ_THREADS", 3)
    inline = 0 if request.param == "threads" else 1 << 40
    monkeypatch.setattr(blobs, "LOCAL_INLINE_BELOW", inline)
    processes = 2 if request.param == "processes" else 0
    monkeypatch.setattr(blobs, "READ_PROCESSES", processes)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    return str(request.param)


def _store(data: bytes) -> Blob:
    return blob_put(data, hashlib.sha256(data).hexdigest(), len(data))


def _check(through_storage: bool, monkeypatch: pytest.MonkeyPatch) -> FixityReport:
    report = FixityReport(started_at=timezone.now())
    with monkeypatch.context() as patched:
        if through_storage:  # no folder to read from: the storage reads
            patched.setattr(blobs, "_root_fd", lambda storage: None)
        blobs.rehash_blobs(report)
    return report


def _read_directly(
    monkeypatch: pytest.MonkeyPatch, threads: set[str] | None = None
) -> list[str]:
    """Keys the local reader opened itself (and into ``threads``, the names of
    the threads that opened them)."""
    opened: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if kwargs.get("dir_fd") is not None:
            opened.append(str(path))
            if threads is not None:
                threads.add(threading.current_thread().name)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(blobs.os, "open", spy)
    return opened


def test_direct_reads_find_what_reads_through_the_storage_find(
    disk: Path, monkeypatch: pytest.MonkeyPatch, small_tasks: str
) -> None:
    stored = [_store(os.urandom(100 + 997 * n)) for n in range(40)]
    stored.append(_store(b""))  # empty
    changed, short, grown, gone, folder, moved = stored[:6]
    (disk / changed.storage_key).write_bytes(b"x" * changed.size)
    with open(disk / short.storage_key, "r+b") as handle:
        handle.truncate(short.size - 1)
    with open(disk / grown.storage_key, "ab") as handle:
        handle.write(b"+")
    (disk / gone.storage_key).unlink()
    (disk / folder.storage_key).unlink()
    (disk / folder.storage_key).mkdir()
    other = hashlib.sha256(b"elsewhere").hexdigest()
    Blob.objects.create(
        sha256=other, size=4, storage_key=moved.storage_key, created_at=timezone.now()
    )  # a row naming another blob's file: its storage key is not its content key

    direct = _read_directly(monkeypatch)
    found = _check(through_storage=False, monkeypatch=monkeypatch)
    opened = list(direct)
    expected = _check(through_storage=True, monkeypatch=monkeypatch)

    if small_tasks == "processes":  # the first task here, the rest in processes
        first = Blob.objects.order_by("storage_key", "pk")[:3]
        assert len(opened) == sum(is_blob_key(b.sha256, b.storage_key) for b in first)
    else:
        assert len(opened) == len(stored)  # all but the moved row's, directly
    assert len(direct) == len(opened)  # and none through the storage
    kinds = [(f.kind, f.sha256) for f in found.findings.items]
    assert kinds == [(f.kind, f.sha256) for f in expected.findings.items]
    assert sorted(kinds) == sorted(
        [
            ("blob.altered", changed.sha256),
            ("blob.altered", short.sha256),
            ("blob.altered", grown.sha256),
            ("blob.missing", gone.sha256),
            ("blob.missing", folder.sha256),
            ("row.altered", other),
            ("blob.altered", other),
        ]
    )
    unreadable = [f for f in found.findings.items if f.sha256 == folder.sha256]
    assert "cannot be read" in unreadable[0].detail
    same = [f for f in found.findings.items if f.sha256 != folder.sha256]
    assert same == [f for f in expected.findings.items if f.sha256 != folder.sha256]
    assert found.counts == expected.counts
    assert found.counts.blobs_checked == len(stored) + 1
    assert (
        found.counts.bytes_hashed
        == sum(b.size for b in stored if b not in (gone, folder)) - 1 + 1 + moved.size
    )  # one byte less, one more, the moved file read twice


def test_blobs_are_read_in_storage_key_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(blobs, "READ_THREADS", 1)  # opened in the order read
    stored = [_store(os.urandom(64)) for _ in range(20)]
    direct = _read_directly(monkeypatch)

    _check(through_storage=False, monkeypatch=monkeypatch)

    assert direct == sorted(blob.storage_key for blob in stored)


def test_small_blobs_are_read_in_the_calling_thread_only_when_told(
    monkeypatch: pytest.MonkeyPatch, small_tasks: str
) -> None:
    for _ in range(12):
        _store(os.urandom(64))
    threads: set[str] = set()
    opened = _read_directly(monkeypatch, threads)
    started = _processes_started(monkeypatch)

    report = _check(through_storage=False, monkeypatch=monkeypatch)

    assert report.counts.blobs_checked == 12
    assert report.counts.bytes_hashed == 12 * 64
    if small_tasks == "threads":
        assert threads
        assert all(name.startswith("fixity") for name in threads)
    else:
        assert threads == {threading.current_thread().name}
    if small_tasks == "processes":
        assert len(opened) == 3  # the first task
        assert len(started) == 2
        assert all(process.returncode == 0 for process in started)  # ended
    else:
        assert len(opened) == 12
        assert started == []


def _processes_started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    started: list[Any] = []
    real = subprocess.Popen

    def spy(*args: Any, **kwargs: Any) -> Any:
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(blobs.subprocess, "Popen", spy)
    return started


@pytest.mark.parametrize("small_tasks", ["processes"], indirect=True)
def test_a_reader_process_that_dies_leaves_its_blobs_to_the_calling_thread(
    disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = [_store(os.urandom(64)) for _ in range(15)]
    (disk / stored[-1].storage_key).write_bytes(b"y" * 64)
    started = _processes_started(monkeypatch)
    real_receive = blobs.ReaderProcesses.receive

    def receive(self: Any, index: int, task: list[Any], direct: list[bool]) -> Any:
        if index == 1:  # the second process dies before its replies are read
            self.processes[1].kill()
            self.processes[1].wait()
        return real_receive(self, index, task, direct)

    monkeypatch.setattr(blobs.ReaderProcesses, "receive", receive)

    report = _check(through_storage=False, monkeypatch=monkeypatch)

    assert len(started) == 2
    assert report.counts.blobs_checked == 15
    assert report.counts.bytes_hashed == 15 * 64
    assert [(f.kind, f.sha256) for f in report.findings.items] == [
        ("blob.altered", stored[-1].sha256)
    ]


@pytest.mark.parametrize("small_tasks", ["processes"], indirect=True)
def test_no_reader_process_can_start_and_the_calling_thread_reads(
    disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = [_store(os.urandom(64)) for _ in range(10)]
    (disk / stored[4].storage_key).unlink()
    monkeypatch.setattr(sys, "executable", str(disk / "no-such-python"))
    opened = _read_directly(monkeypatch)

    report = _check(through_storage=False, monkeypatch=monkeypatch)

    assert len(opened) == 10
    assert report.counts.blobs_checked == 10
    assert [(f.kind, f.sha256) for f in report.findings.items] == [
        ("blob.missing", stored[4].sha256)
    ]
