"""Reads never write: the log API and the escrow pages show the latest
published checkpoint (and how many entries came since) without signing one or
remembering anything; a checkpoint is published when a deposit or an escrow
event commits, and by the beat task every minute."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from artifacts.models import Checkpoint, Deposit, DepositBlob, LogVisit
from artifacts.selectors.log import checkpoint_latest, log_size
from artifacts.services.escrow import deposit_create, deposit_legal_hold_set
from artifacts.services.escrow_records import DepositItem
from artifacts.services.transparency import checkpoint_publish, log_append
from artifacts.storage.blobs import blob_record, blob_write
from artifacts.tasks import checkpoint_publish_task
from tests.escrow.conftest import ingest_and_deposit, open_bids

pytestmark = pytest.mark.django_db
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@pytest.fixture
def grown(
    deposit: Deposit, tmp_path: Path, vendor_b: Any, vendor_b_org: Any
) -> Deposit:
    """A checkpoint of size 1, then the log grew by two (vendor b's deposit and
    one more entry): what a read used to sign a new checkpoint for. The newer
    deposit, not in any checkpoint yet."""
    checkpoint_publish()
    newer = ingest_and_deposit(
        tmp_path / "b", deposit.rfp, vendor_b_org, vendor_b, key="vendor_b"
    )
    with transaction.atomic():
        log_append(b'{"n":2}')
    open_bids(deposit.rfp)
    return newer


def _urls(deposit: Deposit) -> list[str]:
    return [
        "/api/v1/log/checkpoint",
        "/api/v1/log/key",
        "/api/v1/log/proof/inclusion?index=0&size=3",
        "/api/v1/log/proof/consistency?first=1&second=3",
        "/api/v1/escrow/deposits/",
        f"/api/v1/escrow/deposits/{deposit.public_id}/",
        "/artifacts/escrow/",
        "/artifacts/escrow/log/",
        f"/artifacts/escrow/deposits/{deposit.public_id}/",
    ]


def _writes(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().startswith(WRITES)
    ]


@pytest.mark.parametrize("index", range(9))
def test_a_get_of_the_log_and_escrow_pages_writes_nothing(
    grown: Deposit, auditor: Any, index: int
) -> None:
    url = _urls(grown)[index]
    client = Client()
    client.force_login(auditor)

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)

    assert response.status_code == 200, url
    assert _writes(queries) == [], url
    assert Checkpoint.objects.count() == 1
    assert not LogVisit.objects.exists()


def test_a_deposit_commit_publishes_a_checkpoint(
    grown: Deposit, buyer_org: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = b"signed report"
    blob = blob_record(blob_write(data, hashlib.sha256(data).hexdigest(), len(data)))

    with django_capture_on_commit_callbacks(execute=True):
        deposit = deposit_create(
            kind=Deposit.Kind.REPORT,
            organisation=buyer_org,
            rfp=grown.rfp,
            items=[DepositItem(blob, DepositBlob.Role.REPORT)],
            actor=None,
        )

    latest = checkpoint_latest()
    assert latest is not None
    assert latest.size == log_size() == deposit.log_index + 1


def test_an_escrow_event_commit_publishes_a_checkpoint(
    grown: Deposit, buyer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        deposit_legal_hold_set(deposit=grown, hold=True, actor=buyer, reason="x")

    assert checkpoint_latest().size == log_size() == 4


def test_a_failed_publication_leaves_the_deposit_and_is_logged(
    grown: Deposit,
    buyer: Any,
    django_capture_on_commit_callbacks: Any,
    caplog: Any,
) -> None:
    Path(settings.REPROGATE_LOG_KEY_PATH).unlink()  # the key file lost

    with (
        caplog.at_level(logging.WARNING),
        django_capture_on_commit_callbacks(execute=True),
    ):
        deposit_legal_hold_set(deposit=grown, hold=True, actor=buyer, reason="x")

    assert Deposit.objects.get(pk=grown.pk).legal_hold
    assert checkpoint_latest().size == 1
    assert "publishing a checkpoint after a commit failed" in caplog.text
    assert "Traceback" not in caplog.text  # one line: the key is not here


def test_the_beat_task_publishes_only_when_the_log_grew(grown: Deposit) -> None:
    assert checkpoint_publish_task() == 3
    assert checkpoint_publish_task() is None
    assert Checkpoint.objects.count() == 2


def test_the_beat_schedules_the_checkpoint_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["log-checkpoint"]

    assert entry == {"task": "artifacts.checkpoint_publish", "schedule": 60.0}
    assert checkpoint_publish_task.name == "artifacts.checkpoint_publish"
