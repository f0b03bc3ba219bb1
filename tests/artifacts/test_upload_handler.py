"""The upload handler hashes the bundle in a thread while writing it; the
thread always ends: digest taken, upload too large, or handler dropped."""

from __future__ import annotations

import gc
import hashlib
import os
import threading
from typing import Any

import pytest
from django.core.files.uploadhandler import StopUpload
from django.test import RequestFactory

from artifacts.api.bundles import BundleUploadHandler
from artifacts.lib.archive import FileDigest, Sha256Hasher
from artifacts.lib.archive.digest import HASHER_THREAD
from tests.artifacts.corpus.build import noise


def _hashers() -> int:
    return sum(t.name == HASHER_THREAD for t in threading.enumerate())


def _ended(before: int) -> bool:
    for thread in threading.enumerate():
        if thread.name == HASHER_THREAD:
            thread.join(timeout=5)
    return _hashers() == before


@pytest.mark.parametrize("threaded", [True, False])
def test_hasher_gives_the_digest_either_way(threaded: bool) -> None:
    data = noise(3 << 20, seed="h")
    hasher = Sha256Hasher(threaded=threaded)
    for start in range(0, len(data), 1 << 20):
        hasher.update(data[start : start + (1 << 20)])

    assert hasher.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_dropped_hasher_ends_its_thread() -> None:
    before = _hashers()
    hasher = Sha256Hasher(threaded=True)
    hasher.update(b"half an upload")
    assert _hashers() == before + 1

    del hasher
    gc.collect()

    assert _ended(before)


def _handler(settings: Any, limit: int) -> BundleUploadHandler:
    settings.BUNDLE_MAX_UPLOAD_BYTES = limit
    handler = BundleUploadHandler(RequestFactory().post("/"))
    handler.new_file("file", "bundle.tar.gz", "application/gzip", None)
    return handler


def test_upload_is_written_and_hashed(settings: Any) -> None:
    data = noise(5 << 20, seed="u")
    handler = _handler(settings, 10 << 20)

    for start in range(0, len(data), handler.chunk_size):
        handler.receive_data_chunk(data[start : start + handler.chunk_size], start)
    upload = handler.file_complete(len(data))
    handler.upload_complete()

    assert upload.digest == FileDigest(len(data), hashlib.sha256(data).hexdigest())
    with open(upload.temporary_file_path(), "rb") as written:
        assert written.read() == data
    upload.close()


def test_too_large_upload_stops_and_ends_the_hashing_thread(settings: Any) -> None:
    before = _hashers()
    handler = _handler(settings, 1 << 20)
    handler.receive_data_chunk(noise(1 << 20, seed="a"), 0)

    with pytest.raises(StopUpload):
        handler.receive_data_chunk(b"one byte too many", 1 << 20)
    handler.upload_complete()  # what Django's parser does after StopUpload

    assert handler.too_large
    assert _ended(before)


def test_interrupted_upload_ends_the_hashing_thread(settings: Any) -> None:
    before = _hashers()
    handler = _handler(settings, 10 << 20)
    handler.receive_data_chunk(b"part of a bundle", 0)
    path = handler.file.temporary_file_path()

    handler.upload_interrupted()

    assert _ended(before)
    assert not os.path.exists(path)
