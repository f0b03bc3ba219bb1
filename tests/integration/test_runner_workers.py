"""A real Redis broker and real runner worker processes
on two pool queues. A campaign is executed by the worker of its own pool; a
worker killed with SIGKILL mid-run leaves a run that the reaper re-queues and a
replacement worker of the same pool completes: never stuck, counted once.

The workers and this test share a database of the module's own (a SQLite file,
or a fresh PostgreSQL database when the suite runs on PostgreSQL) and a blob
store on local files; the test process sends tasks through the same Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
import redis
from celery import Celery
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connections

from accounts.models import Membership, Role
from artifacts.models import Deposit
from benchmarks.lib.queues import EXECUTE_RUN, pool_queue
from benchmarks.models import Campaign, Run, RunMetric, RunOutput
from benchmarks.services.pools import pool_create
from benchmarks.tasks import reap_runs_task
from config.celery import app as celery_app
from tests.accounts.factories import OrganisationFactory, UserFactory
from tests.artifacts.ingest_support import open_rfp, register_corpus_keys
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    SCENARIOS,
    accepted_bundle,
    runs_sent_to,
    start,
)
from tests.integration.conftest import REDIS_URL

pytestmark = pytest.mark.integration

PROJECT_DIR = Path(__file__).resolve().parents[2]
CELERY_BIN = Path(sys.executable).with_name("celery")
READY_TIMEOUT = 60.0
LOST_AFTER = 4.0
SUFFIX = uuid.uuid4().hex[:8]
POOL_A, POOL_B = f"it-a-{SUFFIX}", f"it-b-{SUFFIX}"
POOL_C = f"it-c-{SUFFIX}"  # the kill test's own pool

# ~10 s of work with progress: long enough to be killed in the middle.
SLOW_HARNESS = b"""#!/bin/sh
set -eu
i=0
while [ $i -lt 40 ]; do
  i=$((i + 1))
  echo "::progress:: 0.$((i * 2 + 10))"
  sleep 0.25
done
out="$REPROGATE_OUTPUT_DIR/metrics.json"
printf '{"metrics": [{"name": "ttft_ms", "stat": "p99", ' > "$out"
printf '"value": 12.5, "unit": "ms"}]}\n' >> "$out"
"""


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _database_url(settings_dict: dict[str, Any], name: str) -> str:
    user = quote(settings_dict["USER"] or "", safe="")
    password = settings_dict["PASSWORD"]
    secret = f":{quote(password, safe='')}" if password else ""
    host = settings_dict["HOST"] or "localhost"
    return f"postgres://{user}{secret}@{host}:{settings_dict['PORT'] or 5432}/{name}"


def _postgres_admin(settings_dict: dict[str, Any], sql: str) -> None:
    with psycopg.connect(
        host=settings_dict["HOST"] or "localhost",
        port=settings_dict["PORT"] or 5432,
        user=settings_dict["USER"] or None,
        password=settings_dict["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    ) as admin:
        admin.execute(sql)


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runner-it")
    (path / "work").mkdir()
    return path


@pytest.fixture(scope="module")
def shared_database(
    django_db_blocker: Any, var_dir: Path, redis_url: str
) -> Iterator[str]:
    """The default connection pointed at a database of this module's own, migrated;
    its URL for the workers. Afterwards the connection it had is put back (an
    in-memory test database lives only as long as that connection) and a
    PostgreSQL database of its own is dropped."""
    connection = connections["default"]
    saved, saved_raw = dict(connection.settings_dict), connection.connection
    postgres = connection.vendor == "postgresql"
    name = f"reprogate_runner_it_{SUFFIX}"
    with django_db_blocker.unblock():
        connection.connection = None  # the next query connects with the new name
        if postgres:
            _postgres_admin(saved, f'CREATE DATABASE "{name}"')
            url = _database_url(saved, name)
        else:
            name = str(var_dir / "runner.sqlite3")
            url = f"sqlite:///{name}"
        connection.settings_dict["NAME"] = name
        ContentType.objects.clear_cache()  # its ids are the other database's
        try:
            call_command("migrate", verbosity=0, interactive=False)
            yield url
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)
            connection.connection = saved_raw
            # Cached content types of this database would break the audit rows
            # (foreign keys) of the tests that come after.
            ContentType.objects.clear_cache()
            if postgres:
                _postgres_admin(saved, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _worker_env(url: str, var_dir: Path, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
    env.update(
        DATABASE_URL=url,
        CELERY_BROKER_URL=redis_url,
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        DJANGO_SECURE_SSL_REDIRECT="False",
        DJANGO_DEBUG="False",
        REPROGATE_VAR_DIR=str(var_dir),
        REPROGATE_LOG_KEY_PATH=str(var_dir / "keys" / "log.pem"),
        RUNNER_HEARTBEAT_SECONDS="0.5",
        RUNNER_LOST_AFTER_SECONDS=str(LOST_AFTER),
        RUNNER_PROGRESS_WRITE_SECONDS="0.2",
        RUNNER_WORK_DIR=str(var_dir / "work"),
    )
    return env


@dataclass
class _Web:
    """The module's web server (gunicorn) serving the runner API to the agents."""

    url: str = ""
    process: Any = None


@pytest.fixture(scope="module")
def start_worker(
    shared_database: str, var_dir: Path, redis_url: str, django_db_blocker: Any
) -> Iterator[Callable[..., Worker]]:
    """``start_worker(name, pool, *also)``: a lab host of pool ``pool``, its agent
    (``python -m reprogate_agent``, the one run path) with a host token of its own
    against the module's web server (started with the first agent); with
    ``also``, a server worker consuming those queues too (``celery``: the gate
    evaluations a campaign's end sends)."""
    from benchmarks.models import LabPool
    from benchmarks.services.host_tokens import host_token_issue
    from tests.faults.cluster import agent_process, time_until_healthy, web

    started: list[Worker] = []
    env = _worker_env(shared_database, var_dir, redis_url)
    server = _Web()

    def serve() -> str:
        if server.process is None:
            process, port = web(env, var_dir)
            server.process = process.start()
            time_until_healthy(port, READY_TIMEOUT, process)
            server.url = f"http://127.0.0.1:{port}"
        return server.url

    def watch(name: str, process: subprocess.Popen[bytes], log: Path) -> Worker:
        worker = Worker(name, process, log)
        started.append(worker)
        _wait_for(
            lambda: " ready." in worker.text(),
            READY_TIMEOUT,
            lambda: f"{name} not ready:\n{worker.text()}",
            worker,
        )
        return worker

    def launch(name: str, pool: str, *also: str) -> Worker:
        url = serve()
        if also:
            log = var_dir / f"{name}-server.log"
            command = [str(CELERY_BIN), "-A", "config", "worker", "--pool", "solo"]
            command += ["-Q", ",".join(also), "-n", f"{name}-server@%h"]
            command += ["--without-gossip", "--without-mingle", "-l", "INFO"]
            with log.open("wb") as out:
                helper = subprocess.Popen(
                    command, cwd=PROJECT_DIR, env=env, stdout=out,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            watch(f"{name}-server", helper, log)
        with django_db_blocker.unblock():
            issued = host_token_issue(
                pool=LabPool.objects.get(name=pool), name=name, actor=None
            )
        agent = agent_process(var_dir, url, redis_url, issued.raw, name)
        agent.start()
        assert agent.process is not None
        return watch(name, agent.process, agent.log)

    yield launch
    for worker in started:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGTERM)
            try:
                worker.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait(timeout=10)
    if server.process is not None:
        server.process.stop()
    broker = redis.Redis.from_url(REDIS_URL)
    for pool in (POOL_A, POOL_B, POOL_C):
        queue = pool_queue(pool)
        broker.delete(queue, f"_kombu.binding.{queue}")
    broker.close()


def _wait_for(
    condition: Callable[[], bool],
    timeout: float,
    explain: Callable[[], str],
    worker: Worker | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if worker is not None and worker.process.poll() is not None:
            pytest.fail(f"{worker.name} exited: {explain()}")
        if time.monotonic() > deadline:
            pytest.fail(explain())
        time.sleep(0.2)


@pytest.fixture(scope="module")
def people(shared_database: str, django_db_blocker: Any) -> dict[str, Any]:
    """The buyer, its lab with the two pools, and the vendor with its keys."""
    with django_db_blocker.unblock():
        buyer = OrganisationFactory.create(slug=f"it-{SUFFIX}-buyer", kind="buyer")
        lab = OrganisationFactory.create(slug=f"it-{SUFFIX}-lab", kind="lab")
        vendor = OrganisationFactory.create(slug="acme-flash", kind="vendor")
        buyer.engages.add(lab)
        labops, uploader = (
            UserFactory.create(username="it-labops"),
            UserFactory.create(),
        )
        Membership.objects.create(user=labops, organisation=lab, role=Role.LABOPS)
        Membership.objects.create(user=uploader, organisation=vendor, role=Role.VENDOR)
        register_corpus_keys([vendor], uploader)
        return {
            "buyer": buyer,
            "vendor": vendor,
            "labops": labops,
            "uploader": uploader,
            "pool_a": pool_create(lab_organisation=lab, name=POOL_A, actor=None),
            "pool_b": pool_create(lab_organisation=lab, name=POOL_B, actor=None),
            "pool_c": pool_create(lab_organisation=lab, name=POOL_C, actor=None),
        }


@pytest.fixture
def world(
    people: dict[str, Any],
    django_db_blocker: Any,
    settings: Any,
    var_dir: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, Any]]:
    """Blobs on the shared files, tasks sent through Redis, database access."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(var_dir / "media")},
        },
    }
    settings.REPROGATE_LOG_KEY_PATH = str(var_dir / "keys" / "log.pem")
    settings.RUNNER_LOST_AFTER_SECONDS = LOST_AFTER
    client = Celery("runner-it", broker=redis_url, set_as_current=False)

    def send(args: list[Any], queue: str, **options: Any) -> None:
        client.send_task("benchmarks.execute_run", args=args, queue=queue, **options)

    runs_sent_to(monkeypatch, send)
    with django_db_blocker.unblock():
        yield people
    client.close()


def _bundle(
    world: dict[str, Any],
    var_dir: Path,
    reference: str,
    harness: bytes,
    scenarios: list[dict[str, Any]],
) -> Any:
    rfp = open_rfp(world["vendor"], reference=reference, buyer=world["buyer"])
    return accepted_bundle(
        var_dir / reference,
        rfp,
        world["vendor"],
        world["uploader"],
        harness=harness,
        scenarios=scenarios,
    )


def _all_final(campaign: Campaign) -> bool:
    active = ("queued", "preparing", "running", "parsing")
    return not campaign.runs.filter(state__in=active).exists()


def _runs(campaign: Campaign) -> str:
    return "\n".join(
        f"{r.scenario_name}#{r.repetition} {r.state} {r.reason}"
        for r in campaign.runs.order_by("position")
    )


def test_each_campaign_runs_on_the_workers_of_its_own_pool(
    world: dict[str, Any], start_worker: Callable[[str, str], Worker], var_dir: Path
) -> None:
    a1, b1 = start_worker(f"a1-{SUFFIX}", POOL_A), start_worker(f"b1-{SUFFIX}", POOL_B)
    bundle = _bundle(
        world, var_dir, f"RFP-IT-{SUFFIX[:6].upper()}", GOOD_HARNESS, SCENARIOS
    )
    on_a = start(bundle, world["pool_a"], world["labops"], repetitions=2)
    on_b = start(bundle, world["pool_b"], world["labops"], repetitions=1)

    for campaign in (on_a, on_b):
        _wait_for(partial(_all_final, campaign), 120, partial(_runs, campaign))

    for campaign, worker in ((on_a, a1), (on_b, b1)):
        runs = list(campaign.runs.select_related("host__pool"))
        assert {r.state for r in runs} == {Run.State.SUCCEEDED}, _runs(campaign)
        assert {r.host.worker_name for r in runs} == {
            f"{worker.name}@{r.host.hostname}" for r in runs
        }
        assert {r.host.pool for r in runs} == {campaign.pool}
        for run in runs:
            harness = RunMetric.objects.filter(run=run).exclude(method="telemetry")
            assert harness.count() == 2
            assert run.output_deposit is not None


def test_a_killed_worker_s_run_is_retried_once_and_counted_once(
    world: dict[str, Any], start_worker: Callable[[str, str], Worker], var_dir: Path
) -> None:
    victim = start_worker(f"c1-{SUFFIX}", POOL_C)
    scenario = [{**SCENARIOS[1], "name": "warm-slow", "duration_s": 10}]
    bundle = _bundle(
        world, var_dir, f"RFP-IK-{SUFFIX[:6].upper()}", SLOW_HARNESS, scenario
    )
    campaign = start(bundle, world["pool_c"], world["labops"])
    run = campaign.runs.get()
    _wait_for(
        lambda: Run.objects.filter(
            pk=run.pk,
            state="running",
            progress__gt=0.1,
            worker_name__startswith=victim.name,
        ).exists(),
        60,
        lambda: _runs(campaign) + victim.text()[-3000:],
    )

    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait(timeout=10)
    time.sleep(LOST_AFTER + 1)
    reaped = reap_runs_task()

    assert reaped["requeued"] == [run.pk]
    assert Run.objects.get(pk=run.pk).attempt == 2
    rescuer = start_worker(f"c2-{SUFFIX}", POOL_C)
    _wait_for(
        lambda: _all_final(campaign),
        120,
        lambda: _runs(campaign) + rescuer.text()[-3000:],
    )

    run.refresh_from_db()
    assert (run.state, run.attempt) == (Run.State.SUCCEEDED, 2), run.reason
    assert run.worker_name.startswith(rescuer.name)
    metrics = RunMetric.objects.filter(run=run)
    harness = metrics.exclude(method="telemetry")  # the runner's own beside it
    assert list(harness.values_list("attempt", "value")) == [(2, 12.5)]
    assert set(metrics.values_list("attempt", flat=True)) == {2}
    assert list(
        RunOutput.objects.filter(run=run).values_list("attempt", flat=True)
    ) == [2]
    assert Deposit.objects.filter(pk=run.output_deposit_id).count() == 1

    # The killed attempt's message, delivered again, changes nothing.
    before = metrics.count()
    celery_app.send_task(EXECUTE_RUN, args=[run.pk, 1], queue=world["pool_c"].queue)
    _wait_for(
        lambda: f"run {run.pk} attempt 1: skipped" in rescuer.text(), 30, rescuer.text
    )
    assert (harness.count(), metrics.count()) == (1, before)
    assert Run.objects.get(pk=run.pk).state == Run.State.SUCCEEDED
