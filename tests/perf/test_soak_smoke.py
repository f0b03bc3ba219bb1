"""The soak test (``tests/perf/soak.py``) for a minute in the suite: the embedded
default under its clients while its runner worker is killed, then its figures. It
must end with no errors and no lost run; no timing is asserted (the hour's figures
are in tests/perf/README.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.perf.soak import CampaignLedger, percentile

ROOT = Path(__file__).resolve().parents[2]


def _figure(name: str, text: str) -> int:
    found = re.search(rf"^{re.escape(name)} +(\d+)", text, re.M)
    assert found, f"no {name!r} line in:\n{text}"
    return int(found.group(1))


def _soak(work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.perf.soak", "--start", "direct"]
    # One campaign of 6 runs (about a minute, more with a killed run) starts at
    # once and none after it; with start-up and the wait for it, about 2.5 min.
    command += ["--seconds", "60", "--campaign-cutoff", "45"]
    command += ["--kill-every", "15", "30", "--work-dir", str(work), *extra]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False
    )


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(420)
def test_the_soak_serves_every_client_and_loses_no_run_while_the_runner_is_killed(
    tmp_path: Path,
) -> None:
    _passes(_soak(tmp_path / "soak"))


@pytest.fixture
def soak_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """An empty PostgreSQL database of the soak's own beside the test database
    (the PostgreSQL pass), dropped afterwards."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the soak on PostgreSQL runs in the PostgreSQL pass")
    settings = connection.settings_dict
    name = f"{settings['NAME']}_soak"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    user, host, port = settings["USER"], settings["HOST"], settings["PORT"]
    yield f"postgres://{user}@{host}:{port or 5432}/{name}"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(420)
def test_the_soak_on_postgresql_loses_no_run_either(
    soak_database: str, tmp_path: Path
) -> None:
    """The same soak, its processes on a PostgreSQL database (row locks, its
    transactions) instead of SQLite."""
    _passes(_soak(tmp_path / "soak", "--database-url", soak_database))


def _passes(done: subprocess.CompletedProcess[str]) -> None:
    output = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, output
    assert _figure("errors", done.stdout) == 0
    assert _figure("runs lost", done.stdout) == 0
    assert _figure("worker kills", done.stdout) >= 1, output
    assert _figure("campaigns started", done.stdout) >= 1
    started = _figure("runs started", done.stdout)
    assert started >= 6
    ended = _figure("runs succeeded", done.stdout) + _figure("runs failed", done.stdout)
    assert ended == started
    assert _figure("bundles uploaded", done.stdout) >= 4
    assert _figure("requests served", done.stdout) > 100
    for kind in ("api bundle upload", "api campaign start", "page gate board"):
        assert re.search(rf"^  {kind} +\d+ +\d+ +\d+ +\d+$", done.stdout, re.M), kind


def _run(run_id: str, status: str) -> dict[str, object]:
    return {"id": run_id, "status": status, "attempt": 1}


def test_a_run_missing_from_its_campaigns_next_answer_is_lost() -> None:
    ledger = CampaignLedger()
    ledger.record("c1", {"runs": [_run("r1", "running"), _run("r2", "queued")]})

    ledger.record("c1", {"runs": [_run("r1", "succeeded")]})

    assert ledger.lost() == (set(), {"r2"})
    assert ledger.active() == []  # nothing left to wait for


def test_a_campaign_that_answers_404_loses_its_runs_and_is_not_waited_for() -> None:
    ledger = CampaignLedger()
    ledger.record("c1", {"runs": [_run("r1", "succeeded"), _run("r2", "running")]})

    ledger.record("c1", None)

    assert ledger.gone == {"c1"}
    assert ledger.lost() == (set(), {"r1", "r2"})
    assert ledger.active() == []


def test_a_run_not_final_is_waited_for_and_lost_if_it_never_ends() -> None:
    ledger = CampaignLedger()
    ledger.record("c1", {"runs": [_run("r1", "failed"), _run("r2", "preparing")]})
    ledger.record("c2", {"runs": []})  # no run seen yet: waited for too

    assert ledger.active() == ["c1", "c2"]
    assert ledger.lost() == ({"r2"}, set())

    ledger.record("c1", {"runs": [_run("r1", "failed"), _run("r2", "timed_out")]})
    assert ledger.lost() == (set(), set())
    assert ledger.active() == ["c2"]


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
