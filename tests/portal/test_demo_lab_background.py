"""The demo seed's lab validation in the background (``seed_demo
--lab-in-background``, what ``scripts/run`` seeds): the seed only starts a gate
campaign per vendor for lab validation on pool ``local`` as ``labops`` (the claimed
scenarios, 3 repetitions each, linked to the vendor's frozen plan v2) and sends its
runs to the pool's queue; it executes no run and evaluates nothing, says in one line
where to watch, starts nothing twice, and nothing without bubblewrap. A real worker
running them to the demo's verdicts: tests/integration/test_demo_lab_worker.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

import portal.demo as demo
from accounts.models import AuditEvent
from artifacts.models import Bundle
from benchmarks.lib.queues import pool_queue
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.campaigns import campaign_start
from gates.models import Evaluation, GateCampaign, GatePlan
from portal.demo import (
    BASELINE_CAMPAIGN_NOTE,
    LAB_CAMPAIGN_NOTE,
    LAB_POOL,
    LAB_RFP,
    demo_seed,
)
from tests.benchmarks.runner.support import runs_sent_to

pytestmark = pytest.mark.django_db
VENDORS = ["acme-flash", "bolt-storage"]
NO_FAULTS = "Gate lab-resilience needs nbdkit on this host (test)"


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path, clock: Any) -> Path:
    """Files under the test's folder; a frozen clock, moved past RFP-DEMO-2's
    deadline instead of waiting for it."""
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bubblewrap works (as on a lab host), the fault back-end does not (the
    resilience gate's test says otherwise); executing a run here is a failure."""
    monkeypatch.setattr(demo, "sandbox_problem", lambda: None)
    monkeypatch.setattr(demo, "resilience_problem", lambda: NO_FAULTS)

    def refuse(*args: Any) -> None:
        raise AssertionError("the seed executed a run")

    monkeypatch.setattr(demo.LoopbackAgent, "execute", refuse)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[int], str]]:
    """The run messages sent to the broker: (args, queue)."""
    messages: list[tuple[list[int], str]] = []

    def send(*, args: list[int], queue: str, **options: Any) -> None:
        messages.append((args, queue))

    runs_sent_to(monkeypatch, send)
    return messages


def _claimed(campaign: Campaign) -> set[str]:
    return {c["scenario"] for c in campaign.bundle.manifest["claims"]}


def test_the_seed_starts_a_gate_campaign_per_vendor_and_runs_nothing(
    var_dir: Path,
    sandbox: None,
    sent: list[tuple[list[int], str]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    lines: list[str] = []

    with django_capture_on_commit_callbacks(execute=True):
        report = demo_seed(lab_in_background=True, progress=lines.append)

    campaigns = list(Campaign.objects.filter(role="vendor").order_by("id"))
    assert [c.bundle.organisation.slug for c in campaigns] == VENDORS
    for campaign in campaigns:
        assert campaign.rfp.reference == LAB_RFP
        assert campaign.pool.name == LAB_POOL
        assert campaign.started_by.username == "labops"
        assert campaign.repetitions == 3
        assert campaign.note == LAB_CAMPAIGN_NOTE
        runs = list(campaign.runs.all())
        assert {r.scenario_name for r in runs} == _claimed(campaign)
        assert len(runs) == 3 * len(_claimed(campaign))
        assert {r.state for r in runs} == {Run.State.QUEUED}  # none executed
        link = GateCampaign.objects.get(campaign=campaign)
        assert (link.gate, link.evaluation, link.requested_by.username) == (
            "lab-validation",
            None,
            "labops",
        )
        assert (link.plan.version, link.plan.status) == (2, GatePlan.Status.FROZEN)
        assert link.plan.vendor_organisation == campaign.bundle.organisation
    assert not Evaluation.objects.exists()
    [baseline] = Campaign.objects.filter(role="baseline")
    assert baseline.bundle.organisation.slug == "northwind-ai"
    assert baseline.note == BASELINE_CAMPAIGN_NOTE
    assert sorted({r.scenario_name for r in baseline.runs.all()}) == [
        "cold-c32-b8",
        "warm-c32-b8",
    ]
    assert baseline.runs.filter(state=Run.State.QUEUED).count() == 6
    campaigns.append(baseline)
    queued = Run.objects.filter(campaign__in=campaigns)
    assert sorted(args for args, _ in sent) == sorted([r.pk, 1] for r in queued)
    assert {queue for _, queue in sent} == {pool_queue(LAB_POOL)}
    started = AuditEvent.objects.filter(action="gate.campaign_started")
    assert sorted(e.data["vendor"] for e in started) == VENDORS
    assert {e.actor.username for e in started} == {"labops"}
    assert f"{LAB_RFP} campaign acme-flash (queued)" in report.created
    said, line = lines
    assert said == NO_FAULTS
    assert "in the background" in line
    assert f"{queued.count()} runs on pool {LAB_POOL}" in line
    assert "/lab/campaigns/" in line


def test_a_second_seed_starts_no_second_campaign(
    var_dir: Path, sandbox: None, sent: list[tuple[list[int], str]]
) -> None:
    demo_seed(lab_in_background=True)
    campaigns = list(Campaign.objects.values_list("pk", flat=True))
    lines: list[str] = []

    report = demo_seed(lab_in_background=True, progress=lines.append)

    assert list(Campaign.objects.values_list("pk", flat=True)) == campaigns
    assert GateCampaign.objects.count() == 2
    assert lines == []
    assert not [c for c in report.created if "campaign" in c]


def test_a_vendor_the_lab_ran_already_gets_no_background_campaign(
    var_dir: Path, sandbox: None, sent: list[tuple[list[int], str]]
) -> None:
    demo_seed()
    bolt = Bundle.objects.get(
        rfp__reference=LAB_RFP, organisation__slug="bolt-storage", status="accepted"
    )
    own = campaign_start(  # one labops started by hand
        bundle=bolt,
        pool=LabPool.objects.get(name=LAB_POOL),
        repetitions=1,
        actor=get_user_model().objects.get(username="labops"),
    )

    demo_seed(lab_in_background=True)

    assert list(Campaign.objects.filter(bundle=bolt)) == [own]
    [link] = GateCampaign.objects.all()
    assert link.campaign.bundle.organisation.slug == "acme-flash"


def test_without_bubblewrap_the_seed_says_so_and_starts_nothing(
    var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "bubblewrap (bwrap) is not installed on this host (test)"
    monkeypatch.setattr(demo, "sandbox_problem", lambda: message)
    lines: list[str] = []

    report = demo_seed(lab_in_background=True, progress=lines.append)

    assert lines == [message]
    assert report.created[-1] == f"no {LAB_RFP} lab runs (bubblewrap missing)"
    assert GatePlan.objects.filter(status=GatePlan.Status.FROZEN).count() == 2
    assert not Campaign.objects.exists()
    assert not GateCampaign.objects.exists()


def test_the_two_lab_options_do_not_go_together(var_dir: Path) -> None:
    with pytest.raises(ValueError, match="lab_in_background"):
        demo_seed(lab_validation=True, lab_in_background=True)
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("seed_demo", "--lab-validation", "--lab-in-background")

    assert not Campaign.objects.exists()


def test_the_command_starts_them_and_prints_where_to_watch(
    var_dir: Path, sandbox: None, sent: list[tuple[list[int], str]]
) -> None:
    out = io.StringIO()

    call_command("seed_demo", "--lab-in-background", "--force", stdout=out)

    assert GateCampaign.objects.filter(evaluation__isnull=True).count() == 2
    assert "/lab/campaigns/" in out.getvalue()


def test_where_faults_can_be_injected_the_resilience_gate_runs_too(
    var_dir: Path,
    sandbox: None,
    sent: list[tuple[list[int], str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(demo, "resilience_problem", lambda: None)
    lines: list[str] = []

    report = demo_seed(lab_in_background=True, progress=lines.append)

    links = GateCampaign.objects.filter(gate="lab-resilience").order_by("id")
    assert [link.plan.vendor_organisation.slug for link in links] == VENDORS
    for link in links:
        runs = list(link.campaign.runs.order_by("position"))
        assert sorted({r.scenario_name for r in runs}) == [
            "failover-c8-b8",
            "interference-c8-b8",
            "warmup-c8-b8",
        ]
        assert {r.repetition for r in runs} == {1, 2}
        interference = next(r for r in runs if r.scenario.get("kind") == "interference")
        assert link.campaign.neighbours == {
            "noisy-500": {"rw": "randread", "bs": "4k", "iodepth": 8, "rate_iops": 500}
        }
        assert interference.scenario["neighbour"] == "noisy-500"
    assert f"{LAB_RFP} lab-resilience campaign bolt-storage (queued)" in report.created
    [line] = lines
    assert f"{Run.objects.count()} runs on pool {LAB_POOL}" in line


def test_without_lab_resilience_no_resilience_campaign_starts(
    var_dir: Path,
    sandbox: None,
    sent: list[tuple[list[int], str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(demo, "resilience_problem", lambda: None)
    out = io.StringIO()

    call_command(
        "seed_demo",
        "--lab-in-background",
        "--without-lab-resilience",
        "--force",
        stdout=out,
    )

    assert not GateCampaign.objects.filter(gate="lab-resilience").exists()
    assert GateCampaign.objects.filter(gate="lab-validation").count() == 2
    assert "Gate lab-resilience" not in out.getvalue()
