"""Adaptive repetitions: the runs an INCONCLUSIVE evaluation needs per scenario,
scheduled on its campaign (by hand, or by the plan's bounded top-up), the hook
that evaluates a gate's campaign once its last run ends (idempotent), and the
whole loop from 1 of 3 runs to PASS."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.campaigns import (
    MAX_ADDED_RUNS,
    campaign_add_runs,
    campaign_cancel,
)
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.receivers import campaign_finished_send_if_done
from benchmarks.services.runs import run_cancel
from gates.exceptions import GatesConflict, GatesError
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.selectors.runs import evaluation_more_runs, gate_scenarios
from gates.services.pipeline import campaign_ended_judge, gate_judge
from gates.services.runs import gate_campaign_start, gate_schedule_more_runs
from gates.tasks import campaign_ended_judge_task
from procurement.models import Rfp
from tests.benchmarks.runner.support import finish, make_pool, runs_sent_to
from tests.gates.support import CRITERION, finish_runs, make_frozen_plan, plan_document

pytestmark = pytest.mark.django_db
GATE = "lab-validation"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What would go to the broker: run executions and gate evaluations."""
    sent: dict[str, list[Any]] = {"runs": [], "gates": []}
    runs_sent_to(monkeypatch, lambda args, **kw: sent["runs"].append(args))
    monkeypatch.setattr(
        campaign_ended_judge_task, "delay", lambda cid: sent["gates"].append(cid)
    )
    return sent


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    return make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gate-lab")


def finish_all(campaign: Campaign, values: dict[str, list[float]]) -> None:
    """Finish the named scenarios' runs with these values, the others with a
    value no criterion reads (every run final, as the hook requires)."""
    finish_runs(campaign, values)
    for run in campaign.runs.exclude(state=Run.State.SUCCEEDED):
        finish(run, metrics=[{"name": "read_iops", "stat": "mean", "value": 1.0}])


def finish_queued(campaign: Campaign, values: list[float]) -> None:
    """Finish the queued cold-c1 runs (the ones added) with these values."""
    queued = campaign.runs.filter(scenario_name="cold-c1", state=Run.State.QUEUED)
    for run, value in zip(queued.order_by("repetition"), values, strict=True):
        finish(run, metrics=[{"name": "ttft_ms", "stat": "p99", "value": value}])


def started(plan: GatePlan, pool: LabPool, labops: Any, reps: int = 1) -> Campaign:
    link = gate_campaign_start(
        plan=plan, gate=GATE, pool=pool, actor=labops, repetitions=reps
    )
    return link.campaign


def inconclusive(
    plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> Evaluation:
    """A gate campaign with 1 of the 3 runs its criterion needs, evaluated."""
    campaign = started(plan, pool, labops)
    finish_all(campaign, {"cold-c1": [176.2]})
    [evaluation] = campaign_ended_judge(campaign=campaign)
    return evaluation


def test_more_runs_per_scenario_is_the_largest_need_there(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_campaign: Any
) -> None:
    four = {**copy.deepcopy(CRITERION), "id": "four", "min_runs": 4}
    warm = {**copy.deepcopy(CRITERION), "id": "warm", "scenario": "warm-c1"}
    warm["min_runs"] = 2
    doc = plan_document(
        rfp.reference, vendor_a_org.slug, criteria=[CRITERION, four, warm]
    )
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, doc)
    campaign = gate_campaign(1)
    finish_runs(campaign, {"cold-c1": [176.2], "warm-c1": [176.2]})

    evaluation = gate_judge(plan=plan, gate=GATE, campaign=campaign, actor=buyer)

    assert evaluation_more_runs(evaluation) == {"cold-c1": 3, "warm-c1": 1}
    assert evaluation_more_runs(evaluation).total == 4


def test_a_decided_gate_needs_no_more_runs(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [176.2, 171.0, 178.9]})

    evaluation = gate_judge(plan=frozen_plan, gate=GATE, campaign=campaign, actor=buyer)

    assert evaluation.verdict == "PASS"
    assert evaluation_more_runs(evaluation) == {}
    with pytest.raises(GatesConflict) as refused:
        gate_schedule_more_runs(evaluation=evaluation, actor=buyer)
    assert refused.value.code == "decided"


def test_scheduling_appends_the_needed_repetitions_and_dispatches_them(
    frozen_plan: GatePlan,
    pool: LabPool,
    labops: Any,
    gate_bundle: Any,
    sent: dict[str, list[Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)

    with django_capture_on_commit_callbacks(execute=True):
        link = gate_schedule_more_runs(evaluation=evaluation, actor=labops)

    campaign = evaluation.campaign
    added = list(campaign.runs.filter(state=Run.State.QUEUED).order_by("position"))
    assert [(r.scenario_name, r.repetition) for r in added] == [
        ("cold-c1", 2),
        ("cold-c1", 3),
    ]
    assert [r.position for r in added] == [1, 2]  # after cold-c1 #1 (the only one)
    assert sent["runs"] == [[r.pk, 1] for r in added]
    assert (link.after, link.extra_runs, link.automatic) == (evaluation, 2, False)
    assert (link.requested_by, link.evaluation) == (labops, None)
    campaign.refresh_from_db()
    assert campaign.repetitions == 3
    assert AuditEvent.objects.filter(action="campaign.runs_added").count() == 1
    event = AuditEvent.objects.get(action="gate.runs_scheduled")
    assert event.data["scenarios"] == {"cold-c1": 2}


def test_scheduling_is_refused_twice_and_for_an_older_evaluation(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, buyer: Any, gate_bundle: Any
) -> None:
    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)
    gate_schedule_more_runs(evaluation=evaluation, actor=buyer)

    with pytest.raises(GatesConflict) as twice:
        gate_schedule_more_runs(evaluation=evaluation, actor=buyer)
    later = gate_judge(
        plan=frozen_plan, gate=GATE, campaign=evaluation.campaign, actor=buyer
    )
    with pytest.raises(GatesConflict) as older:
        gate_schedule_more_runs(evaluation=evaluation, actor=buyer)

    assert (twice.value.code, older.value.code) == ("scheduled", "not_latest")
    assert later.verdict == "INCONCLUSIVE"
    assert GateCampaign.objects.filter(after=evaluation).count() == 1


def test_scheduling_is_refused_once_the_plan_is_superseded(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)
    GatePlan.objects.filter(pk=frozen_plan.pk).update(status=GatePlan.Status.SUPERSEDED)

    with pytest.raises(GatesConflict) as refused:
        gate_schedule_more_runs(evaluation=evaluation, actor=labops)

    assert refused.value.code == "superseded"
    assert evaluation.campaign.runs.count() == 1


def test_scheduling_is_refused_to_a_vendor_and_on_a_cancelled_campaign(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, vendor_a: Any, gate_bundle: Any
) -> None:
    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)

    with pytest.raises(RunnerError) as vendor:
        gate_schedule_more_runs(evaluation=evaluation, actor=vendor_a)
    Campaign.objects.filter(pk=evaluation.campaign_id).update(
        cancelled_at=evaluation.evaluated_at
    )
    with pytest.raises(RunnerConflict) as cancelled:
        gate_schedule_more_runs(evaluation=evaluation, actor=labops)

    assert (vendor.value.code, cancelled.value.code) == ("not_allowed", "cancelled")
    assert evaluation.campaign.runs.count() == 1
    assert not GateCampaign.objects.filter(after=evaluation).exists()


@pytest.mark.parametrize(
    ("scenarios", "code"),
    [
        ({"hot-c9": 1}, "unknown_scenario"),
        ({"cold-c1": 0}, "runs"),
        ({"cold-c1": MAX_ADDED_RUNS + 1}, "runs"),
        ({"cold-c1": True}, "runs"),
        ({}, "no_runs"),
    ],
)
def test_adding_runs_refuses_bad_requests(
    gate_campaign: Any, labops: Any, scenarios: dict[str, Any], code: str
) -> None:
    campaign = gate_campaign(1)

    with pytest.raises(RunnerError) as refused:
        campaign_add_runs(campaign=campaign, scenarios=scenarios, actor=labops)

    assert refused.value.code == code
    assert campaign.runs.count() == 2


def test_adding_runs_stops_at_a_hundred_repetitions(
    gate_campaign: Any, labops: Any
) -> None:
    campaign = gate_campaign(1)
    campaign_add_runs(campaign=campaign, scenarios={"cold-c1": 50}, actor=labops)
    campaign_add_runs(campaign=campaign, scenarios={"cold-c1": 49}, actor=labops)

    with pytest.raises(RunnerError) as refused:
        campaign_add_runs(campaign=campaign, scenarios={"cold-c1": 1}, actor=labops)

    assert refused.value.code == "repetitions"
    assert campaign.runs.filter(scenario_name="cold-c1").count() == 100


def test_adding_runs_interleaves_scenarios_by_repetition(
    gate_campaign: Any, labops: Any
) -> None:
    campaign = gate_campaign(1)

    runs = campaign_add_runs(
        campaign=campaign, scenarios={"warm-c1": 1, "cold-c1": 2}, actor=labops
    )

    assert [(r.scenario_name, r.repetition, r.position) for r in runs] == [
        ("cold-c1", 2, 2),
        ("warm-c1", 2, 3),
        ("cold-c1", 3, 4),
    ]


def test_the_hook_evaluates_a_finished_gate_campaign_once(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    campaign = started(frozen_plan, pool, labops, reps=3)
    finish_runs(campaign, {"cold-c1": [176.2, 171.0]})

    assert campaign_ended_judge(campaign=campaign) == []  # one run still queued
    finish_queued(campaign, [178.9])
    [evaluation] = campaign_ended_judge(campaign=campaign)
    again = campaign_ended_judge(campaign=campaign)

    assert again == []
    assert campaign_ended_judge_task(campaign.pk) == 0
    assert evaluation.verdict == "PASS"
    assert evaluation.evaluated_by is None
    assert GateCampaign.objects.get(campaign=campaign).evaluation == evaluation
    assert Evaluation.objects.count() == 1


def test_the_last_run_ending_enqueues_the_gate_evaluation_after_commit(
    frozen_plan: GatePlan,
    pool: LabPool,
    labops: Any,
    gate_bundle: Any,
    sent: dict[str, list[Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    campaign = started(frozen_plan, pool, labops, reps=2)
    first, last = campaign.runs.order_by("position")  # cold-c1 #1 and #2

    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(run=first, actor=labops)
    assert sent["gates"] == []  # one run still queued
    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(run=last, actor=labops)

    assert sent["gates"] == [campaign.pk]
    GateCampaign.objects.filter(campaign=campaign).update(
        evaluation=gate_judge(
            plan=frozen_plan, gate=GATE, campaign=campaign, actor=labops
        )
    )
    assert campaign_finished_send_if_done(campaign.pk)
    assert sent["gates"] == [campaign.pk]  # nothing left to evaluate: not sent


def test_a_campaign_run_for_no_gate_sends_nothing(
    gate_campaign: Any,
    labops: Any,
    sent: dict[str, list[Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    campaign = gate_campaign(1)

    with django_capture_on_commit_callbacks(execute=True):
        campaign_cancel(campaign=campaign, actor=labops)

    assert sent["gates"] == []
    assert campaign.runs.filter(state=Run.State.CANCELLED).count() == 2


def test_a_cancelled_gate_campaign_is_not_evaluated(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    campaign = started(frozen_plan, pool, labops, reps=3)
    finish_runs(campaign, {"cold-c1": [176.2]})

    campaign_cancel(campaign=campaign, actor=labops)

    assert campaign_ended_judge(campaign=campaign) == []
    assert not Evaluation.objects.exists()


def test_top_up_schedules_what_is_needed_within_max_extra_runs(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    GatePlan.objects.filter(pk=frozen_plan.pk).update(max_extra_runs=2)

    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)

    link = GateCampaign.objects.get(after=evaluation)
    assert (link.automatic, link.extra_runs, link.requested_by) == (True, 2, None)
    assert evaluation.campaign.runs.filter(state=Run.State.QUEUED).count() == 2
    event = AuditEvent.objects.get(action="gate.runs_scheduled")
    assert (event.actor, event.data["automatic"]) == (None, True)


def test_top_up_never_goes_past_max_extra_runs(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    GatePlan.objects.filter(pk=frozen_plan.pk).update(max_extra_runs=2)
    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)
    campaign = evaluation.campaign

    finish_queued(campaign, [100.0, 260.0])  # with 176.2: the spread is too high
    [second] = campaign_ended_judge(campaign=campaign)

    assert second.verdict == "INCONCLUSIVE"
    assert evaluation_more_runs(second)["cold-c1"] >= 1
    assert not GateCampaign.objects.filter(after=second).exists()  # 2 + n > 2
    assert campaign.runs.count() == 3


def test_top_up_off_or_too_small_schedules_nothing(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    GatePlan.objects.filter(pk=frozen_plan.pk).update(max_extra_runs=1)

    evaluation = inconclusive(frozen_plan, pool, labops, gate_bundle)  # needs 2

    assert evaluation.verdict == "INCONCLUSIVE"
    assert not GateCampaign.objects.filter(after=evaluation).exists()
    assert evaluation.campaign.runs.count() == 1


def test_inconclusive_with_one_of_three_runs_passes_after_two_more(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    first = inconclusive(frozen_plan, pool, labops, gate_bundle)
    assert (first.verdict, evaluation_more_runs(first)) == (
        "INCONCLUSIVE",
        {"cold-c1": 2},
    )

    link = gate_schedule_more_runs(evaluation=first, actor=labops)
    assert campaign_ended_judge(campaign=first.campaign) == []  # runs to come
    finish_queued(first.campaign, [171.0, 178.9])
    [second] = campaign_ended_judge(campaign=first.campaign)

    assert second.verdict == "PASS"
    assert second.criterion_results.get().runs == 3
    link.refresh_from_db()
    assert link.evaluation == second
    assert second.plan == frozen_plan


def test_the_hook_uses_the_current_plan_version(
    rfp: Rfp,
    frozen_plan: GatePlan,
    vendor_a_org: Organisation,
    pool: LabPool,
    labops: Any,
    buyer: Any,
    gate_bundle: Any,
) -> None:
    campaign = started(frozen_plan, pool, labops, reps=3)
    GatePlan.objects.filter(pk=frozen_plan.pk).update(status=GatePlan.Status.SUPERSEDED)
    v2 = make_frozen_plan(rfp, vendor_a_org, buyer, version=2)
    finish_all(campaign, {"cold-c1": [176.2, 171.0, 178.9]})

    [evaluation] = campaign_ended_judge(campaign=campaign)

    assert evaluation.plan == v2


def test_a_gate_campaign_needs_a_frozen_plan_and_a_known_gate(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    with pytest.raises(GatesError, match="no gate named 'canary'"):
        gate_campaign_start(plan=frozen_plan, gate="canary", pool=pool, actor=labops)

    link = gate_campaign_start(plan=frozen_plan, gate=GATE, pool=pool, actor=labops)

    assert link.campaign.repetitions == 3  # the gate's largest min_runs
    assert link.campaign.bundle == gate_bundle
    assert AuditEvent.objects.filter(action="gate.campaign_started").count() == 1


def test_a_gate_campaign_runs_the_scenarios_the_gate_judges(
    rfp: Rfp, vendor_a_org: Organisation, gate_bundle: Any
) -> None:
    def plan(**parts: Any) -> GatePlan:  # unsaved: only its document is read
        doc = plan_document(rfp.reference, vendor_a_org.slug, **parts)
        return GatePlan(document=json.dumps(doc))

    ceiling = {"id": "warm-ceiling", "metric": "ttft_ms", "stat": "p99",
               "scenario": "warm-c1", "above": 2000}  # fmt: skip
    anywhere = {**ceiling, "id": "any-ceiling", "scenario": "*"}
    hot = {**copy.deepcopy(CRITERION), "scenario": "hot-c9"}

    assert gate_scenarios(plan(), GATE, gate_bundle) == ["cold-c1"]
    with_warm = plan(stop_loss=[ceiling])
    assert gate_scenarios(with_warm, GATE, gate_bundle) == ["cold-c1", "warm-c1"]
    assert gate_scenarios(plan(stop_loss=[anywhere]), GATE, gate_bundle) == ["cold-c1"]
    # no judged scenario in the harness: every scenario runs ("not measured")
    assert gate_scenarios(plan(criteria=[hot]), GATE, gate_bundle) is None
