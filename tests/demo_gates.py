"""The demo as ``scripts/run`` seeds it with ``seed_demo --lab-validation`` (real
lab runs of both example bundles on RFP-DEMO-2, lab validation evaluated), for
the tests that start from it (``demo_gates``): the seed's own test
(tests/gates/test_demo_verdicts.py) and the browser journeys.

Seeding runs the lab for real, about two minutes, so a session seeds it once. The
first test seeds it with every file it writes under one folder of the session's
(the var dir, blobs on files, the transparency log's and the reports' keys), then
keeps a copy of that folder and of the SQLite database (sqlite3's backup API), and
the seed's progress lines. Each later test gets them back as the first test left
them after seeding, so what a test changes never reaches the next. On PostgreSQL
each test seeds its own. The fixture is registered once, in tests/conftest.py: a
second registration would be a second session-wide seed."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from benchmarks.lib.sandbox.capabilities import host_support
from portal.demo import demo_seed
from tests.escrow.conftest import blobs_on_disk


@dataclass
class Snapshot:
    """The seeded demo's files (``live``, what the test sees; ``kept``, the copy)
    and database copy."""

    home: Path
    database: sqlite3.Connection | None = None
    progress: list[str] = field(default_factory=list)  # what the seed said

    @property
    def live(self) -> Path:
        return self.home / "live"

    @property
    def kept(self) -> Path:
        return self.home / "kept"


def _files_under(settings: Any, folder: Path) -> None:
    """Everything the seed writes to files, under ``folder``."""
    settings.VAR_DIR = folder / "var"
    blobs_on_disk(settings, settings.VAR_DIR)
    settings.REPROGATE_LOG_KEY_PATH = str(folder / "log-key" / "log.pem")
    settings.REPROGATE_REPORT_KEYS_DIR = str(folder / "report-keys")
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(
        folder / "report-keys" / "statement.pem"
    )


@pytest.fixture(scope="session")
def demo_gates_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    snapshot = Snapshot(tmp_path_factory.mktemp("demo-gates"))
    yield snapshot
    if snapshot.database is not None:
        snapshot.database.close()


@pytest.fixture
def demo_gates(
    transactional_db: None,
    settings: Any,
    runner_work_dir: Path,  # registered beside this fixture, in tests/conftest.py
    demo_gates_snapshot: Snapshot,
) -> None:
    """The demo seeded with lab validation (module docstring)."""
    snapshot, connection = demo_gates_snapshot, connections["default"]
    kept = snapshot.database if connection.vendor == "sqlite" else None
    shutil.rmtree(snapshot.live, ignore_errors=True)
    if kept is not None:
        shutil.copytree(snapshot.kept, snapshot.live)
    _files_under(settings, snapshot.live)
    if kept is not None:
        connection.ensure_connection()
        kept.backup(connection.connection)
        return
    if not host_support().bwrap_works:
        pytest.fail("the demo's lab runs need bubblewrap (apt-get install bubblewrap)")
    snapshot.progress = []
    demo_seed(lab_validation=True, progress=snapshot.progress.append)
    if connection.vendor == "sqlite":
        shutil.copytree(snapshot.live, snapshot.kept)
        snapshot.database = sqlite3.connect(":memory:")
        connection.connection.backup(snapshot.database)
