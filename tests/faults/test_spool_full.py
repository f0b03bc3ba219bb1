"""Disk full in the spool: ``BUNDLE_SPOOL_DIR`` on a 1 MiB tmpfs (mounted for the
test; as root, else with ``sudo -n``), alone or with Django's upload folder on it
too (the default: the spool is ``FILE_UPLOAD_TEMP_DIR``). An upload whose files
do not fit gets a 507 in the API's error shape, leaves nothing in the spool, in
storage or in the database, and the next upload that fits is accepted. The spool's
direct-I/O file on a full device (``/dev/full``) reports the full disk, and a
spool on another file system than the blobs (``/dev/shm``) is copied into place."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from artifacts.lib.spool import DirectFile
from artifacts.models import Blob, Bundle, Deposit
from artifacts.services.fixity.run import fixity_check
from artifacts.storage.local import BlobFileSystemStorage
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, noise
from tests.artifacts.ingest_support import (
    build_bundle,
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.faults.support import mount, report, unavailable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SPOOL_BYTES = 1024 * 1024


@pytest.fixture(params=["spool", "spool-and-uploads"])
def tiny_spool(
    request: pytest.FixtureRequest, tmp_path: Path, settings: Any
) -> Iterator[Path]:
    """The spool on a file system of 1 MiB (and Django's upload folder, as the
    parameter says); blobs elsewhere."""
    spool = tmp_path / "spool"
    spool.mkdir()
    options = f"size={SPOOL_BYTES},mode=0700,uid={os.geteuid()},gid={os.getegid()}"
    if not mount(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(spool)]):
        unavailable("cannot mount a tmpfs for the spool (not root, no sudo -n)")
    settings.BUNDLE_SPOOL_DIR = str(spool)
    uploads = spool if request.param == "spool-and-uploads" else tmp_path
    settings.FILE_UPLOAD_TEMP_DIR = str(uploads)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    try:
        yield spool
    finally:
        mount(["umount", "-l", str(spool)])


def _post(user: Any, rfp: Rfp, path: Path) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    with path.open("rb") as handle:
        url = f"/api/v1/rfps/{rfp.public_id}/bundles/"
        return client.post(url, {"file": handle}, format="multipart")


def test_a_direct_file_on_a_full_device_reports_the_full_disk() -> None:
    try:
        fd = os.open("/dev/full", os.O_WRONLY)
    except OSError as error:
        unavailable(f"/dev/full cannot be opened: {error}")
    spool_file = DirectFile(fd)
    spool_file.write(b"x" * 10_000)  # buffered: two whole blocks and a tail

    with pytest.raises(OSError, match="No space left") as raised:
        spool_file.close()

    assert raised.value.errno == errno.ENOSPC
    assert spool_file.closed
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)  # the descriptor was closed all the same


def test_a_spool_file_on_another_file_system_is_copied_into_a_new_folder(
    tmp_path: Path,
) -> None:
    shm = Path("/dev/shm")  # noqa: S108 - a tmpfs, another device than tmp_path
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        unavailable("no /dev/shm on another file system than the tests' tmp_path")
    source = shm / f"spool-{os.getpid()}-{tmp_path.name}"
    source.write_bytes(b"spooled bytes")
    storage = BlobFileSystemStorage(location=str(tmp_path / "media"))
    try:
        assert storage.adopt("blobs/ab/abcdef", str(source)) is True
        assert (tmp_path / "media/blobs/ab/abcdef").read_bytes() == b"spooled bytes"
        assert source.exists()  # its owner, the spool, removes it
    finally:
        source.unlink(missing_ok=True)


@pytest.mark.django_db
def test_an_upload_larger_than_the_spool_is_refused_and_the_next_one_fits(
    tmp_path: Path, tiny_spool: Path, rfp: Rfp, vendor_a: Any, settings: Any
) -> None:
    big = build_bundle(
        tmp_path / "big",
        {**good_files(), "traces/big.bin": noise(3 * SPOOL_BYTES, "spool")},
    )
    small = build_bundle(tmp_path / "small")

    response = _post(vendor_a, rfp, big)

    assert response.status_code == 507, response.content
    body = response.json()
    assert body["code"] == "spool_full"
    assert "space" in body["message"]
    assert body["problems"] == []
    assert "Traceback" not in response.content.decode()
    assert list(tiny_spool.iterdir()) == []
    assert Bundle.objects.count() == 0
    assert Blob.objects.count() == 0
    assert Deposit.objects.count() == 0
    assert not AuditEvent.objects.filter(action__startswith="bundle.").exists()

    started = time.monotonic()
    response = _post(vendor_a, rfp, small)
    uploads_too = str(tiny_spool) == settings.FILE_UPLOAD_TEMP_DIR
    fault = f"spool full{' (uploads too)' * uploads_too}: next upload accepted"
    report(fault, time.monotonic() - started)

    assert response.status_code == 201, response.content
    assert list(tiny_spool.iterdir()) == []
    bundle = Bundle.objects.get()
    assert (bundle.status, bundle.files.count()) == (Bundle.Status.ACCEPTED, 6)
    assert Deposit.objects.count() == 1
    assert fixity_check().clean


@pytest.mark.django_db
def test_the_upload_page_says_the_disk_is_full(
    tmp_path: Path, tiny_spool: Path, rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    big = build_bundle(
        tmp_path / "big",
        {**good_files(), "traces/big.bin": noise(3 * SPOOL_BYTES, "page")},
    )
    url = reverse("artifacts:bundle_upload", args=[rfp.public_id])

    with big.open("rb") as handle:
        response = client_for(vendor_a).post(url, {"file": handle})

    assert response.status_code == 400
    assert "no disk space left" in response.content.decode()
    assert list(tiny_spool.iterdir()) == []
    assert Bundle.objects.count() == 0
