"""PostgreSQL restart mid-campaign, on a server of the test's own
(tests/faults/private_postgres.py), in the PostgreSQL pass only. A runner worker
and the web server (gunicorn) use it; it is stopped as a crash stops it while a
run is half done, and started again.

Meanwhile /healthz answers 503 with the database check failing (a clear error,
not a hang or a traceback); once the server is back, /healthz answers 200 again
and every run ends, succeeded (its outputs and deposit once) or failed with a
reason, none left active; the fixity check finds escrow intact."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connections

from artifacts.services.fixity.run import fixity_check
from benchmarks.models import Run
from benchmarks.tasks import reap_runs_task
from tests.benchmarks.runner.support import SCENARIOS, start
from tests.faults.cluster import (
    HARNESS,
    Process,
    counted_once,
    runner_agent,
    time_until_healthy,
    wait_ready,
    web,
)
from tests.faults.private_postgres import PrivatePostgres
from tests.faults.support import healthz, report, wait_for
from tests.integration import test_runner_workers as runner_it
from tests.integration.test_runner_workers import SUFFIX

var_dir = runner_it.var_dir
people = runner_it.people
world = runner_it.world

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
NAME = "reprogate_faults"


@pytest.fixture(scope="module")
def private_postgres(django_db_blocker: Any) -> Iterator[PrivatePostgres]:
    with django_db_blocker.unblock():
        vendor = connections["default"].vendor
    if vendor != "postgresql":
        pytest.skip("PostgreSQL restart: only in the PostgreSQL pass (DATABASE_URL)")
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        with psycopg.connect(server.url("postgres"), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{NAME}"')
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_database(
    django_db_blocker: Any, private_postgres: PrivatePostgres
) -> Iterator[str]:
    """The default connection pointed at the private server's database, migrated
    (as tests/integration/test_runner_workers.py's ``shared_database`` does for
    a database on the shared server); put back afterwards."""
    connection = connections["default"]
    saved, saved_raw = dict(connection.settings_dict), connection.connection
    with django_db_blocker.unblock():
        connection.connection = None
        connection.settings_dict.update(
            NAME=NAME, HOST="127.0.0.1", PORT=str(private_postgres.port),
            USER="postgres", PASSWORD="",
        )  # fmt: skip
        ContentType.objects.clear_cache()
        try:
            call_command("migrate", verbosity=0, interactive=False)
            yield private_postgres.url(NAME)
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)
            connection.connection = saved_raw
            ContentType.objects.clear_cache()


@pytest.fixture(scope="module")
def env(shared_database: str, var_dir: Path, redis_url: str) -> dict[str, str]:
    return runner_it._worker_env(shared_database, var_dir, redis_url)


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        process.stop()


def _final_with_reaper(campaign: Any) -> bool:
    """All runs final; else one reaper pass, as beat's tick would (a run whose
    worker lost it while the database was down is re-queued or failed)."""
    connections["default"].close_if_unusable_or_obsolete()
    if runner_it._all_final(campaign):
        return True
    reap_runs_task()
    return False


def test_a_postgresql_restart_mid_campaign_is_reported_and_then_served_again(
    world: dict[str, Any],
    env: dict[str, str],
    var_dir: Path,
    private_postgres: PrivatePostgres,
    processes: list[Process],
) -> None:
    server, port = web(env, var_dir)
    processes.append(server)
    server.start()
    time_until_healthy(port, 60, server)
    url = f"http://127.0.0.1:{port}"
    lab = runner_agent(env, var_dir, f"pg-{SUFFIX}", world["pool_a"], url)
    processes.append(lab)
    wait_ready(lab.start())
    scenario = [{**SCENARIOS[0], "name": "pg-restart", "duration_s": 3}]
    reference = f"RFP-FP-{SUFFIX[:6].upper()}"
    bundle = runner_it._bundle(world, var_dir, reference, HARNESS, scenario)
    campaign = start(bundle, world["pool_a"], world["labops"], repetitions=2)
    wait_for(
        lambda: campaign.runs.filter(state=Run.State.RUNNING).exists(),
        60,
        lambda: runner_it._runs(campaign) + lab.text()[-3000:],
    )

    private_postgres.crash()
    down = time.monotonic()
    answer = wait_for(lambda: healthz(port, timeout=5), 10, server.text)
    status, body = answer
    report("PostgreSQL down: /healthz answered", time.monotonic() - down)
    assert status == 503, body
    assert body["status"] == "fail"
    assert body["checks"]["database"]["ok"] is False
    assert body["checks"]["broker"]["ok"] is True
    time.sleep(1.0)  # down for a moment
    back = time.monotonic()
    private_postgres.start()  # crash recovery, then it takes connections
    time_until_healthy(port, 30, server)
    report("PostgreSQL started again: /healthz 200", time.monotonic() - back)
    connections["default"].close()  # the test's own connection was cut too

    wait_for(
        lambda: _final_with_reaper(campaign),
        60,
        lambda: runner_it._runs(campaign) + lab.text()[-4000:],
        step=0.5,
    )
    report("PostgreSQL back: every run ended", time.monotonic() - back)

    assert lab.alive(), lab.text()[-3000:]
    runs = list(campaign.runs.all())
    assert {r.state for r in runs} <= {Run.State.SUCCEEDED, Run.State.FAILED}
    assert all(r.reason for r in runs if r.state == Run.State.FAILED)
    succeeded = campaign.runs.filter(state=Run.State.SUCCEEDED)
    for run in succeeded:
        assert run.output_deposit_id is not None
    counted_once(campaign, only=succeeded)
    findings = fixity_check()
    assert findings.clean, findings.findings
