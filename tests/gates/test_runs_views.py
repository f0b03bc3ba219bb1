"""The POST-only page of runs for a gate: "Schedule N more runs" (who may,
what a refusal says); the ``_more_runs.html`` include's sentence, button and
top-up state."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from accounts.models import Organisation
from benchmarks.models import LabPool, Run
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.selectors.runs import evaluation_more_runs
from gates.services.pipeline import campaign_ended_judge
from gates.services.runs import gate_campaign_start, gate_schedule_more_runs
from tests.benchmarks.runner.support import finish, make_pool

pytestmark = pytest.mark.django_db
GATE = "lab-validation"


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    return make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gate-lab")


@pytest.fixture
def evaluation(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> Evaluation:
    """INCONCLUSIVE: 1 of the 3 cold-c1 runs the criterion needs."""
    campaign = gate_campaign_start(
        plan=frozen_plan, gate=GATE, pool=pool, actor=labops, repetitions=1
    ).campaign
    [cold] = campaign.runs.all()  # the gate judges cold-c1 only
    finish(cold, metrics=[{"name": "ttft_ms", "stat": "p99", "value": 176.2}])
    [done] = campaign_ended_judge(campaign=campaign)
    return done


def more_runs_url(evaluation: Evaluation) -> str:
    return reverse("gates:schedule_runs", args=(evaluation.public_id,))


def test_a_lab_operator_schedules_the_runs_and_returns_to_the_gate(
    client_for: Any, labops: Any, evaluation: Evaluation
) -> None:
    response = client_for(labops).post(more_runs_url(evaluation), follow=True)

    assert response.redirect_chain[0][0] == reverse(
        "gates:gate", args=(evaluation.rfp.public_id, "acme-flash", GATE)
    )
    assert "Scheduled 2 more runs" in response.content.decode()
    assert evaluation.campaign.runs.filter(state=Run.State.QUEUED).count() == 2


def test_a_buyer_may_schedule_them_too(
    client_for: Any, buyer: Any, evaluation: Evaluation
) -> None:
    response = client_for(buyer).post(more_runs_url(evaluation))

    assert response.status_code == 302
    assert GateCampaign.objects.get(after=evaluation).requested_by == buyer


@pytest.mark.parametrize(("who", "status"), [("vendor_a", 403), ("outsider", 404)])
def test_others_may_not_schedule_runs(
    request: pytest.FixtureRequest,
    client_for: Any,
    evaluation: Evaluation,
    who: str,
    status: int,
) -> None:
    user = request.getfixturevalue(who)

    response = client_for(user).post(more_runs_url(evaluation))

    assert response.status_code == status
    assert evaluation.campaign.runs.count() == 1


def test_scheduling_is_post_only_and_says_why_it_is_refused(
    client_for: Any, labops: Any, evaluation: Evaluation
) -> None:
    client = client_for(labops)
    assert client.get(more_runs_url(evaluation)).status_code == 405
    client.post(more_runs_url(evaluation))

    response = client.post(more_runs_url(evaluation), follow=True)

    assert "scheduled already" in response.content.decode()
    assert evaluation.campaign.runs.count() == 3


def render(evaluation: Evaluation, **extra: Any) -> str:
    context = {
        "evaluation": evaluation,
        "more_runs": evaluation_more_runs(evaluation),
        **extra,
    }
    return " ".join(render_to_string("gates/_more_runs.html", context).split())


def test_the_include_says_which_runs_would_decide_it(evaluation: Evaluation) -> None:
    html = render(evaluation)

    assert "INCONCLUSIVE</span>: 2 more runs of" in html
    assert "<code>cold-c1</code></a> would decide it." in html
    assert "Schedule 2 more runs</button>" in html
    assert more_runs_url(evaluation) in html
    assert "Automatic top-up is off" in html
    assert "Schedule" not in render(evaluation, can_schedule=False)


def test_the_include_shows_scheduled_runs_and_the_top_up_limit(
    evaluation: Evaluation, labops: Any
) -> None:
    gate_schedule_more_runs(evaluation=evaluation, actor=labops)
    GatePlan.objects.filter(pk=evaluation.plan_id).update(max_extra_runs=4)
    evaluation = Evaluation.objects.get(pk=evaluation.pk)

    html = render(evaluation)

    assert "2 runs scheduled by labops" in html
    assert "<button" not in html
    assert "up to 4 extra runs per scenario" in html


def test_the_include_is_empty_when_nothing_is_needed(evaluation: Evaluation) -> None:
    assert render(evaluation, more_runs={}) == ""
