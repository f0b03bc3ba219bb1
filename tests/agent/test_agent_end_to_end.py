"""The lab host's agent against the real server: pytest-django's live server
(the test database, blobs on local files) and ``python -m reprogate_agent`` as
a process whose environment holds only
the agent's variables (server URL, host token, broker URL, work dir, name)
and PATH/HOME/LANG — no database, no storage, no Django secret. A campaign on
the token's pool runs to the end through the runner API; once the token is
revoked, the agent refuses the next message back to the queue and exits."""

from __future__ import annotations

import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery

from accounts.models import Membership, Role
from benchmarks.lib.queues import pool_queue
from benchmarks.models import HostToken, LabHost, Run, RunMetric
from benchmarks.services.host_tokens import host_token_issue, host_token_revoke
from benchmarks.services.pools import pool_create
from tests.accounts.factories import OrganisationFactory, UserFactory
from tests.artifacts.ingest_support import open_rfp, register_corpus_keys
from tests.benchmarks.runner.support import (
    SCENARIOS,
    accepted_bundle,
    runs_sent_to,
    start,
)
from tests.integration.conftest import redis_url

pytestmark = pytest.mark.integration

PROJECT_DIR = Path(__file__).resolve().parents[2]
SUFFIX = uuid.uuid4().hex[:8]
POOL = f"agent-{SUFFIX}"
# The integration suite's Redis (skipped without it, but on CI).
FIXTURES = (redis_url,)
ACTIVE = ("queued", "preparing", "running", "parsing")


@dataclass
class Process:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _wait_for(
    condition: Callable[[], bool], timeout: float, explain: Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(explain())
        time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def heartbeat_seconds() -> float:
    """Beats far apart: the revoked token is met by the claim, not by a beat."""
    return 120.0


@pytest.fixture
def world(
    heartbeat_seconds: float,
    transactional_db: None,
    live_server: Any,
    settings: Any,
    tmp_path: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, Any]]:
    """The buyer, the lab with its pool and a host token, the vendor; blobs on
    local files the live server reads; tasks sent through Redis."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    settings.RUNNER_HEARTBEAT_SECONDS = heartbeat_seconds
    settings.RUNNER_PROGRESS_WRITE_SECONDS = 0.2
    client = Celery("agent-it", broker=redis_url, set_as_current=False)

    def send(args: list[Any], queue: str, **options: Any) -> None:
        client.send_task("benchmarks.execute_run", args=args, queue=queue, **options)

    runs_sent_to(monkeypatch, send)
    buyer = OrganisationFactory.create(slug=f"ag-{SUFFIX}-buyer", kind="buyer")
    lab = OrganisationFactory.create(slug=f"ag-{SUFFIX}-lab", kind="lab")
    vendor = OrganisationFactory.create(slug="acme-flash", kind="vendor")
    buyer.engages.add(lab)
    labops, uploader = UserFactory.create(), UserFactory.create()
    Membership.objects.create(user=labops, organisation=lab, role=Role.LABOPS)
    Membership.objects.create(user=uploader, organisation=vendor, role=Role.VENDOR)
    register_corpus_keys([vendor], uploader)
    pool = pool_create(lab_organisation=lab, name=POOL, actor=None)
    issued = host_token_issue(pool=pool, name="lab-07", actor=labops)
    yield {
        "server": live_server.url,
        "buyer": buyer,
        "vendor": vendor,
        "labops": labops,
        "uploader": uploader,
        "pool": pool,
        "token": issued.token,
        "raw": issued.raw,
    }
    client.close()
    broker = redis.Redis.from_url(redis_url)
    queue = pool_queue(POOL)
    broker.delete(queue, f"_kombu.binding.{queue}")
    broker.close()


@pytest.fixture
def agent(world: dict[str, Any], tmp_path: Path, redis_url: str) -> Iterator[Process]:
    """The agent, its environment built from scratch; stopped afterwards."""
    home = tmp_path / "agent-home"
    home.mkdir()
    (home / "token").write_text(world["raw"] + "\n")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_DIR),  # the checkout, not an installed package
        "REPROGATE_SERVER_URL": world["server"],
        "REPROGATE_HOST_TOKEN_FILE": str(home / "token"),
        "REPROGATE_BROKER_URL": redis_url,
        "REPROGATE_AGENT_WORK_DIR": str(home / "work"),
        "REPROGATE_AGENT_NAME": f"lab-07-{SUFFIX}",
    }
    log = tmp_path / "agent.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "reprogate_agent"],
            cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    agent = Process("agent", process, log)
    try:
        _wait_for(
            lambda: " ready." in agent.text() or process.poll() is not None,
            60,
            lambda: f"the agent is not ready:\n{agent.text()}",
        )
        assert process.poll() is None, agent.text()
        yield agent
    finally:
        _stop(process)


def _campaign(world: dict[str, Any], var_dir: Path, reference: str) -> Any:
    rfp = open_rfp(world["vendor"], reference=reference, buyer=world["buyer"])
    bundle = accepted_bundle(
        var_dir / reference,
        rfp,
        world["vendor"],
        world["uploader"],
        scenarios=[SCENARIOS[1]],
    )
    return start(bundle, world["pool"], world["labops"])


def _explain(run: Run, agent: Process) -> Callable[[], str]:
    def explain() -> str:
        run.refresh_from_db()
        return f"{run.state} {run.reason}\n{agent.text()[-4000:]}"

    return explain


def test_a_campaign_runs_on_the_agent_until_its_token_is_revoked(
    world: dict[str, Any], agent: Process, tmp_path: Path, redis_url: str
) -> None:
    campaign = _campaign(world, tmp_path, f"RFP-AG-{SUFFIX[:6].upper()}")
    run = campaign.runs.get()

    _wait_for(
        lambda: f"run {run.pk} attempt 1: " in agent.text(), 90, _explain(run, agent)
    )

    run.refresh_from_db()
    assert run.state == Run.State.SUCCEEDED, _explain(run, agent)()
    assert f"run {run.pk} attempt 1: succeeded" in agent.text()
    assert run.host is not None
    assert run.host.token_id == world["token"].pk
    assert run.host.pool_id == world["pool"].pk
    assert run.worker_name.startswith(f"lab-07-{SUFFIX}@")
    assert run.progress == 1.0
    assert run.environment  # captured on the host, sent with ``running``
    assert RunMetric.objects.filter(run=run).exclude(method="telemetry").count() == 2
    # the runner's telemetry: its own artefact, deposited, its metrics derived
    assert run.artefacts.get().name == "telemetry.bin"
    assert RunMetric.objects.filter(run=run, name="io_pressure_full_pct").exists()
    assert run.output_deposit is not None
    roles = set(run.output_deposit.items.values_list("role", flat=True))
    assert roles == {"output", "artefact", "document"}  # document: the statement
    assert list((tmp_path / "agent-home" / "work").iterdir()) == []
    key_file = tmp_path / "agent-home/.local/state/reprogate-agent/host_key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600  # made at join, kept
    assert run.host.signing_key_fingerprint == run.signing_key_fingerprint != ""
    assert run.statement_blob is not None
    assert LabHost.objects.filter(token=world["token"]).count() == 1

    # The token revoked: the next message goes back to the queue, the agent exits.
    host_token_revoke(
        token=HostToken.objects.get(pk=world["token"].pk), actor=world["labops"]
    )
    second = _campaign(world, tmp_path, f"RFP-AR-{SUFFIX[:6].upper()}").runs.get()

    agent.process.wait(timeout=60)

    text = agent.text()
    assert agent.process.returncode == 1, text[-4000:]
    assert "the server refused the host token" in text
    assert f"run {second.pk} attempt 1 goes back to the queue" in text
    second.refresh_from_db()
    assert second.state == Run.State.QUEUED
    broker = redis.Redis.from_url(redis_url)
    try:
        assert broker.llen(pool_queue(POOL)) == 1  # there for another host
    finally:
        broker.close()


@pytest.mark.parametrize("heartbeat_seconds", [0.3])
def test_an_idle_agent_stops_at_the_beat_after_its_token_is_revoked(
    world: dict[str, Any], agent: Process
) -> None:
    host = LabHost.objects.get(token=world["token"])
    _wait_for(
        lambda: (
            LabHost.objects.get(pk=host.pk).last_heartbeat_at != host.last_heartbeat_at
        ),
        10,
        agent.text,
    )  # beating

    host_token_revoke(
        token=HostToken.objects.get(pk=world["token"].pk), actor=world["labops"]
    )
    agent.process.wait(timeout=30)

    assert agent.process.returncode == 1, agent.text()[-4000:]
    assert "the server refused the host token" in agent.text()


def test_sigterm_stops_the_agent_cleanly_and_says_bye(
    world: dict[str, Any], agent: Process
) -> None:
    host = LabHost.objects.get(token=world["token"])
    assert host.stopped_at is None

    agent.process.send_signal(signal.SIGTERM)
    agent.process.wait(timeout=30)

    assert agent.process.returncode == 0, agent.text()[-4000:]
    host.refresh_from_db()
    assert host.stopped_at is not None
