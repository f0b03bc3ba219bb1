"""The demo's lab validation as ``scripts/run`` gets it: ``seed_demo
--lab-in-background`` (a process of its own, the embedded default on a var dir of
the test's) only starts RFP-DEMO-2's gate campaigns; then the supervisor's web
server, default-queue worker and lab agent (``config.supervise.embedded_programs``:
``python -m reprogate_agent`` against the web server on loopback, with the host
token ``embedded_agent_token`` wrote) take their runs from the SQLite broker of that
var dir, run them in the sandbox, and the gate is evaluated when each campaign's
last run ends (``campaign_finished`` -> ``gates.campaign_finished``): the gate
board then shows Acme Flash PASS and Bolt Storage FAIL, which owes a re-test.
The buyer's baseline campaign runs as well; the lab-resilience gate is left out
(``--without-lab-resilience``: its drivers have tests of their own with real
faults, tests/agent), which keeps this to lab validation's runs on a loaded host.
Needs bubblewrap (a failure on CI without it); a few minutes on 2 cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connections
from django.test import Client

from benchmarks.lib.sandbox.capabilities import host_support
from benchmarks.models import Campaign, LabHost, Run
from benchmarks.services.runs import FINAL
from config import supervise
from gates.models import Evaluation, GateCampaign, RetestObligation
from portal.demo import LAB_RFP
from procurement.models import Rfp
from tests.browser.lab import postgres_url
from tests.faults.support import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

PROJECT_DIR = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
EVALUATED_TIMEOUT_S = 600.0


@pytest.fixture
def shared_database(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """A database URL the seed and the worker processes open, the one this test
    reads: on SQLite a migrated file in place of the in-memory test database (put
    back afterwards), on PostgreSQL the test database itself."""
    connection = connections["default"]
    if connection.vendor == "postgresql":
        yield postgres_url(connection.settings_dict)
        return
    saved, saved_raw = dict(connection.settings_dict), connection.connection
    name = str(tmp_path / "demo.sqlite3")
    connection.connection = None  # the next query opens the file
    connection.settings_dict["NAME"] = name
    ContentType.objects.clear_cache()  # its ids are the other database's
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield f"sqlite:///{name}"
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        connection.connection = saved_raw
        ContentType.objects.clear_cache()  # back to the test database's ids


def _embedded_env(database_url: str, var_dir: Path) -> dict[str, str]:
    """scripts/run's environment on ``var_dir``: the SQLite broker there, blobs and
    keys there, DEBUG off."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RUNNER_", "CELERY_", "DJANGO_", "REPROGATE_"))
    }
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        DJANGO_SECURE_SSL_REDIRECT="False",
        DJANGO_DEBUG="False",
        REPROGATE_EMBEDDED="True",
        REPROGATE_VAR_DIR=str(var_dir),
        RUNNER_PROGRESS_WRITE_SECONDS="0.5",
    )
    return env


@pytest.fixture
def var_dir(tmp_path: Path) -> Path:
    if not host_support().bwrap_works:
        reason = "the demo's lab runs need bubblewrap (apt-get install bubblewrap)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    path = tmp_path / "var"
    path.mkdir()
    return path


def _start_lab(env: dict[str, str], var_dir: Path) -> supervise.Supervisor:
    """The supervisor's web server, default worker and lab agent (not beat), with
    the agent's host token issued as a start issues it."""
    call_command(
        "embedded_agent_token", f"--token-file={var_dir / supervise.AGENT_TOKEN_FILE}"
    )
    programs = supervise.embedded_programs("127.0.0.1", free_port(), var_dir, env)
    lab = supervise.Supervisor(
        [p for p in programs if p.name != "beat"],
        status_path=var_dir / "supervisor.json",
        env=env,
        say=lambda line: None,
    )
    for program in lab.programs:
        lab._start(program)
    agent = next(p for p in lab.programs if p.name == "lab-agent")
    assert agent.log is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while " ready." not in agent.log.read_text(errors="replace"):
        if agent.state != "running" or time.monotonic() > deadline:
            lab.stop()
            pytest.fail(f"the agent did not start:\n{supervise.last_line(agent.log)}")
        time.sleep(0.5)
    return lab


def _board(rfp: Rfp) -> dict[str, str | None]:
    """Per vendor name, lab validation's latest verdict on the buyer's gate board
    (the API the board page reads)."""
    client = Client()
    client.force_login(get_user_model().objects.get(username="buyer"))
    response = client.get(f"/api/v1/rfps/{rfp.public_id}/gate-board/")
    assert response.status_code == 200, response.content
    verdicts: dict[str, str | None] = {}
    for vendor in response.json()["vendors"]:
        [gate] = [g for g in vendor["gates"] if g["gate"] == "lab-validation"]
        latest = gate["latest_evaluation"]
        verdicts[vendor["vendor_name"]] = latest["verdict"] if latest else None
    return verdicts


def test_the_lab_agent_runs_the_seeded_campaigns_and_the_board_shows_the_verdicts(
    shared_database: str, var_dir: Path
) -> None:
    env = _embedded_env(shared_database, var_dir)
    seed = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "seed_demo",
            "--lab-in-background",
            "--without-lab-resilience",
        ],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert seed.returncode == 0, seed.stdout + seed.stderr
    assert "/lab/campaigns/" in seed.stdout
    links = list(GateCampaign.objects.filter(gate="lab-validation"))
    assert len(links) == 2
    assert GateCampaign.objects.count() == 2
    assert Campaign.objects.filter(role="baseline").count() == 1
    assert not Run.objects.exclude(state=Run.State.QUEUED).exists()  # none ran yet
    rfp = Rfp.objects.get(reference=LAB_RFP)
    assert _board(rfp) == {"Acme Flash": None, "Bolt Storage": None}

    lab = _start_lab(env, var_dir)
    try:
        deadline = time.monotonic() + EVALUATED_TIMEOUT_S
        log = var_dir / supervise.LOGS_DIR / "lab-agent.log"
        while (
            GateCampaign.objects.filter(evaluation__isnull=True).exists()
            or Run.objects.filter(campaign__role="baseline")
            .exclude(state__in=FINAL)
            .exists()
        ):
            text = log.read_text(errors="replace")
            runs = list(Run.objects.values_list("scenario_name", "state", "reason"))
            assert all(p.state == "running" for p in lab.programs), text[-4000:]
            assert time.monotonic() < deadline, f"{runs}\n{text[-4000:]}"
            time.sleep(2)
    finally:
        lab.stop()

    assert _board(rfp) == {"Acme Flash": "PASS", "Bolt Storage": "FAIL"}
    baseline = Campaign.objects.get(role="baseline")
    assert set(baseline.runs.values_list("state", flat=True)) == {Run.State.SUCCEEDED}
    for link in GateCampaign.objects.filter(gate="lab-validation").select_related(
        "evaluation", "campaign"
    ):
        campaign: Campaign = link.campaign
        assert link.evaluation.campaign == campaign
        assert link.evaluation.plan == link.plan  # v2, still the frozen plan
        assert link.evaluation.gate == "lab-validation"
        claimed = {c["scenario"] for c in campaign.bundle.manifest["claims"]}
        assert {r.scenario_name for r in campaign.runs.all()} == claimed
        assert set(campaign.runs.values_list("state", flat=True)) == {
            Run.State.SUCCEEDED
        }
        assert campaign.runs.count() == 3 * len(claimed)
    # The runs were the embedded agent's, with its host token, not the seed's.
    [host] = LabHost.objects.select_related("token")
    assert host.worker_name.split("@")[0] == supervise.AGENT_NAME
    assert host.token is not None
    assert host.token.name == supervise.AGENT_NAME
    obligation = RetestObligation.objects.get(evaluation__gate="lab-validation")
    assert obligation.vendor_organisation.slug == "bolt-storage"
    assert obligation.status == RetestObligation.Status.OPEN
    assert Evaluation.objects.count() == 2
