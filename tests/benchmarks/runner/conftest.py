"""Runner fixtures: the corpus keys registered for both vendors, an RFP open
for bids (opened once a bundle is in), the engaged lab's pool, and no broker:
tasks sent by services are recorded, never delivered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import LabPool
from procurement.models import Rfp
from tests.artifacts.ingest_support import (
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.benchmarks.runner.support import (
    accepted_bundle,
    make_pool,
    runner_work_dir,  # noqa: F401 (fixture)
    runs_sent_to,
)


@pytest.fixture(autouse=True)
def _runner_settings(settings: Any, runner_work_dir: Path) -> None:  # noqa: F811
    settings.REPROGATE_LOG_ORIGIN = "runner.test/log"


@pytest.fixture
def sent_tasks(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every ``execute_run`` the services send, instead of a broker."""
    sent: list[dict[str, Any]] = []

    def record(args: list[Any], **options: Any) -> None:
        sent.append({"args": list(args), **options})

    runs_sent_to(monkeypatch, record)
    return sent


@pytest.fixture
def lab_org(buyer_org: Organisation) -> Organisation:
    return buyer_org.engages.get(kind=Organisation.Kind.LAB)


@pytest.fixture
def pool(lab_org: Organisation) -> LabPool:
    return make_pool(lab_org)


@pytest.fixture
def bundle(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> Bundle:
    return accepted_bundle(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)
