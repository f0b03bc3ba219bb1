"""The verdict path (``gates.services.pipeline``): the receiver of a campaign's
end only queues the task; one campaign end evaluates each gate it serves, then
raises or answers the re-test obligation, then requests the signed report, each
step's audit row in that order (``docs/architecture.md``, "Audit rows per
action")."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool
from gates.models import Evaluation, GatePlan, Report, RetestObligation
from gates.services.pipeline import campaign_ended_judge
from gates.services.runs import gate_campaign_start
from gates.tasks import campaign_ended_judge_task, campaign_finished_received
from tests.benchmarks.runner.support import make_pool
from tests.gates.support import FAIL, LAB, finish_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(
    frozen_plan: GatePlan, gate_bundle: Bundle, buyer_org: Organisation, labops: Any
) -> Campaign:
    """A campaign of the vendor's bundle started for the plan's lab-validation
    gate, its runs queued."""
    pool: LabPool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    link = gate_campaign_start(
        plan=frozen_plan, gate=LAB, pool=pool, actor=labops, repetitions=3
    )
    return link.campaign


def _actions_after(row_id: int) -> list[str]:
    rows = AuditEvent.objects.filter(id__gt=row_id).order_by("id")
    return list(rows.values_list("action", flat=True))


def test_the_receiver_only_queues_the_task(
    campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued: list[int] = []
    monkeypatch.setattr(campaign_ended_judge_task, "delay", queued.append)
    finish_runs(campaign, {"cold-c1": FAIL})
    before = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]

    campaign_finished_received(sender=Campaign, campaign_id=campaign.pk)

    assert queued == [campaign.pk]
    assert not Evaluation.objects.exists()
    assert _actions_after(before) == []


def test_a_campaign_end_writes_each_steps_row_in_the_pipelines_order(
    campaign: Campaign,
) -> None:
    finish_runs(campaign, {"cold-c1": FAIL})
    before = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]

    [evaluation] = campaign_ended_judge(campaign=campaign)

    assert evaluation.verdict == "FAIL"
    assert RetestObligation.objects.get().evaluation == evaluation
    assert Report.objects.get().evaluation == evaluation
    assert _actions_after(before) == [
        "gate.evaluated",  # with its escrow deposit's facts: no row of its own
        "retest.raised",
        "report.requested",
    ]
    evaluated = AuditEvent.objects.get(action="gate.evaluated")
    assert evaluated.data["deposit"] == str(evaluation.deposit.public_id)
    assert evaluated.data["log_index"] == evaluation.deposit.log_index
