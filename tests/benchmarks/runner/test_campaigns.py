"""Starting and cancelling campaigns: who may, on what, and what is queued."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from artifacts.models import Bundle
from benchmarks.models import LabPool, Run
from benchmarks.services.campaigns import campaign_cancel, campaign_start
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.runs import run_transition
from procurement.models import Rfp
from tests.accounts.factories import OrganisationFactory
from tests.benchmarks.runner.support import SCENARIOS, make_pool, runs_of, start

pytestmark = pytest.mark.django_db


def test_campaign_start_queues_each_scenario_per_repetition(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    campaign = start(bundle, pool, labops, repetitions=3)

    runs = runs_of(campaign)
    assert [(r.repetition, r.scenario_name) for r in runs] == [
        (rep, s["name"]) for rep in (1, 2, 3) for s in SCENARIOS
    ]
    assert {r.state for r in runs} == {Run.State.QUEUED}
    assert runs[0].scenario == SCENARIOS[0]
    assert campaign.rfp == bundle.rfp
    assert AuditEvent.objects.get(action="campaign.started").data["runs"] == 6


def test_campaign_start_runs_only_the_scenarios_asked_for(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    wanted = SCENARIOS[-1]["name"]

    campaign = campaign_start(
        bundle=bundle, pool=pool, repetitions=2, actor=labops, scenarios=[wanted]
    )

    runs = runs_of(campaign)
    assert [(r.repetition, r.scenario_name) for r in runs] == [(1, wanted), (2, wanted)]
    assert campaign.scenarios == [SCENARIOS[-1]]
    assert AuditEvent.objects.get(action="campaign.started").data["scenarios"] == 1


def test_campaign_start_refuses_a_scenario_the_harness_lacks(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    with pytest.raises(RunnerError) as refused:
        campaign_start(
            bundle=bundle, pool=pool, repetitions=1, actor=labops, scenarios=["hot-c9"]
        )

    assert refused.value.code == "unknown_scenario"
    assert refused.value.problems[0].path == "scenarios"
    assert not Run.objects.exists()


def test_campaign_start_sends_every_run_to_the_pool_queue_after_commit(
    bundle: Bundle,
    pool: LabPool,
    labops: Any,
    sent_tasks: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        campaign = start(bundle, pool, labops, repetitions=2)

    runs = runs_of(campaign)
    assert [t["args"] for t in sent_tasks] == [[r.pk, 1] for r in runs]
    assert {t["queue"] for t in sent_tasks} == {"pool.gpu-a"}
    assert all(
        t["soft_time_limit"] > r.wall_limit_s
        for t, r in zip(sent_tasks, runs, strict=True)
    )


def test_campaign_waits_until_the_bids_are_opened(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    Rfp.objects.filter(pk=bundle.rfp_id).update(status=Rfp.Status.CLOSED)
    bundle.rfp.refresh_from_db()

    with pytest.raises(RunnerConflict) as refused:
        start(bundle, pool, labops)

    assert refused.value.code == "sealed"
    assert not Run.objects.exists()


def test_campaign_needs_a_lab_the_buyer_engages(bundle: Bundle, labops: Any) -> None:
    other_lab = OrganisationFactory.create(slug="other-lab", kind=Organisation.Kind.LAB)
    foreign_pool = make_pool(other_lab, "foreign")

    with pytest.raises(RunnerError) as refused:
        start(bundle, foreign_pool, labops)

    assert refused.value.code == "not_lab_operator"


def test_campaign_refuses_a_lab_that_is_no_longer_engaged(
    bundle: Bundle, pool: LabPool, labops: Any, buyer_org: Organisation
) -> None:
    buyer_org.engages.remove(pool.lab_organisation)

    with pytest.raises(RunnerError) as refused:
        start(bundle, pool, labops)

    assert refused.value.code == "lab_not_engaged"


@pytest.mark.parametrize("persona", ["buyer", "vendor_a", "auditor", "outsider"])
def test_only_lab_operators_start_campaigns(
    bundle: Bundle, pool: LabPool, persona: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)

    with pytest.raises(RunnerError):
        start(bundle, pool, user)


@pytest.mark.parametrize("repetitions", [0, -1, 101])
def test_campaign_repetitions_are_bounded(
    bundle: Bundle, pool: LabPool, labops: Any, repetitions: int
) -> None:
    with pytest.raises(RunnerError) as refused:
        campaign_start(bundle=bundle, pool=pool, repetitions=repetitions, actor=labops)

    assert refused.value.code == "repetitions"


def test_campaign_size_is_capped(
    bundle: Bundle, pool: LabPool, labops: Any, settings: Any
) -> None:
    settings.RUNNER_MAX_RUNS_PER_CAMPAIGN = 5

    with pytest.raises(RunnerError) as refused:
        start(bundle, pool, labops, repetitions=3)

    assert refused.value.code == "too_many_runs"


def test_campaign_cancel_cancels_queued_runs_and_asks_active_ones_to_stop(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    campaign = start(bundle, pool, labops)
    first, second = runs_of(campaign)
    run_transition(run=first, to=Run.State.PREPARING)

    campaign_cancel(campaign=campaign, actor=labops)

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == Run.State.PREPARING
    assert first.cancel_requested_at is not None
    assert first.cancel_requested_by == labops
    assert second.state == Run.State.CANCELLED
    assert "labops" in second.reason
    assert AuditEvent.objects.filter(action="campaign.cancelled").count() == 1


def test_campaign_cancel_twice_is_a_conflict(
    bundle: Bundle, pool: LabPool, labops: Any
) -> None:
    campaign = start(bundle, pool, labops)
    campaign_cancel(campaign=campaign, actor=labops)

    with pytest.raises(RunnerConflict):
        campaign_cancel(campaign=campaign, actor=labops)
