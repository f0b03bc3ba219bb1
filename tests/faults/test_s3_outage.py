"""S3 stopped mid-upload and mid-deposit: a moto server of the test's own on
loopback (real HTTP, as in tests/s3/) is killed with SIGKILL after the ingest
stored some of a bundle's blobs (mid-upload), or all of them, just before the
deposit locks them on the Object Lock bucket (mid-deposit). The vendor gets 503
``storage_unavailable`` in the API's error shape, no row is left (no bundle,
blob, deposit, log entry or acceptance audit row), and once the server is back
(a new one on the same port: moto keeps its objects in memory, so the buckets
are made again, as a restarted S3 would still have them) the same upload is
accepted and the fixity check finds escrow intact."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rest_framework.test import APIClient
from storages.backends.s3 import S3Storage

from accounts.models import AuditEvent
from artifacts.models import Blob, Bundle, Deposit, DepositBlob, LogEntry
from artifacts.services.fixity.run import fixity_check
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, noise
from tests.artifacts.ingest_support import (
    build_bundle,
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.faults.support import free_port, report, unavailable
from tests.s3.conftest import (
    BUCKET,
    HOST,
    LOCKED_BUCKET,
    _client,
    _wait_until_up,
    s3_options,
)

pytestmark = [pytest.mark.django_db, pytest.mark.integration, pytest.mark.timeout(120)]


class MotoServer:
    """A moto server on a fixed loopback port that can be killed and started again."""

    def __init__(self, log: Path) -> None:
        self.port, self.log = free_port(), log
        self.endpoint = f"http://{HOST}:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)],
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        if (failure := _wait_until_up(self.process, self.endpoint)) is not None:
            unavailable(f"{failure}\n{self.log.read_text('utf-8', 'replace')[-2000:]}")
        client = _client(self.endpoint)
        client.create_bucket(Bucket=BUCKET)
        client.create_bucket(Bucket=LOCKED_BUCKET, ObjectLockEnabledForBucket=True)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


class StoppingS3Storage(S3Storage):
    """django-storages' S3 backend that calls ``fault`` once, right after its
    ``stop_after``-th save: the outage lands between two real writes."""

    stop_after: ClassVar[int] = 0
    fault: ClassVar[Callable[[], None] | None] = None
    saves: ClassVar[int] = 0
    _lock = threading.Lock()

    def _save(self, name: str, content: Any) -> str:
        saved = str(super()._save(name, content))
        with self._lock:
            type(self).saves += 1
            stopping = type(self).saves == self.stop_after
            fault = type(self).fault if stopping else None
        if fault is not None:
            fault()
        return saved


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoServer]:
    try:
        import moto.server  # noqa: F401
    except ImportError as error:
        unavailable(f"moto[server] is not installed ({error})")
    server = MotoServer(tmp_path / "moto.log")
    server.start()
    yield server
    server.kill()
    StoppingS3Storage.fault, StoppingS3Storage.saves = None, 0


def _use_s3(settings: Any, moto: MotoServer, bucket: str, stop_after: int) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "tests.faults.test_s3_outage.StoppingS3Storage",
            "OPTIONS": s3_options(moto.endpoint, bucket),
        },
    }
    StoppingS3Storage.stop_after, StoppingS3Storage.saves = stop_after, 0
    StoppingS3Storage.fault = moto.kill


def _post(user: Any, rfp: Rfp, path: Path) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    with path.open("rb") as handle:
        url = f"/api/v1/rfps/{rfp.public_id}/bundles/"
        return client.post(url, {"file": handle}, format="multipart")


def _nothing_recorded() -> None:
    assert Bundle.objects.count() == 0
    assert Blob.objects.count() == 0
    assert Deposit.objects.count() == 0
    assert DepositBlob.objects.count() == 0
    assert LogEntry.objects.count() == 0
    assert not AuditEvent.objects.filter(action__startswith="bundle.").exists()


# 7 files, one of them 256 KiB, and the archive: 8 blobs.
FILES = {**good_files(), "traces/run.bin": noise(256 * 1024, "s3-outage")}


@pytest.mark.parametrize(
    ("moment", "bucket", "stop_after"),
    [("mid-upload", BUCKET, 2), ("mid-deposit", LOCKED_BUCKET, len(FILES) + 1)],
)
def test_s3_stopped_mid_ingest_answers_503_keeps_nothing_and_a_retry_succeeds(
    moment: str,
    bucket: str,
    stop_after: int,
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    moto: MotoServer,
    settings: Any,
) -> None:
    settings.BUNDLE_STORAGE_THREADS = 1  # the kill lands after exactly stop_after
    _use_s3(settings, moto, bucket, stop_after)
    path = build_bundle(tmp_path / "bundle", FILES)

    started = time.monotonic()
    response = _post(vendor_a, rfp, path)
    failed_after = time.monotonic() - started

    assert StoppingS3Storage.saves == stop_after, "the outage did not land"
    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert (body["code"], body["problems"]) == ("storage_unavailable", [])
    assert "Traceback" not in response.content.decode()
    _nothing_recorded()
    print(f"\n[fault] S3 stopped {moment}: answered 503 after {failed_after:.2f} s")

    StoppingS3Storage.fault = None
    moto.start()
    back = time.monotonic()  # the first upload after S3 answers again is accepted
    response = _post(vendor_a, rfp, path)
    report(f"S3 back ({moment}): the upload accepted", time.monotonic() - back)

    assert response.status_code == 201, response.content
    bundle = Bundle.objects.get()
    assert (bundle.status, bundle.files.count()) == (Bundle.Status.ACCEPTED, 7)
    deposit = Deposit.objects.get()
    assert deposit.blobs.count() == 8
    if bucket == LOCKED_BUCKET:
        assert not Blob.objects.filter(version_id="").exists()
    findings = fixity_check()
    assert findings.clean, findings.findings
