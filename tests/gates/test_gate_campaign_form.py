"""Running a gate from the pages: the gate page's "Run this gate" (lab operators
of the engaged lab only) opens the lab's campaign form with the gate, its bundle
and its runs per scenario chosen; the form starts a campaign for the gate (judged
when its runs end) or, without a gate, one that says it will not be judged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool
from benchmarks.selectors.gate_campaigns import gate_campaign_source
from benchmarks.services.pools import host_register
from gates.exceptions import GatesError
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.selectors.runs import gate_choice_value
from gates.services.pipeline import gate_judge
from gates.services.runs import gate_campaign_start
from gates.tasks import campaign_ended_judge_task
from procurement.models import Rfp
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    accepted_bundle,
    make_pool,
    worker,
)
from tests.gates.support import finish_runs

pytestmark = pytest.mark.django_db
GATE = "lab-validation"
NOT_JUDGED = "This campaign is not linked to a gate: its runs will not be judged"


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    return make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gate-lab")


def gate_url(plan: GatePlan, gate: str = GATE) -> str:
    args = (plan.rfp.public_id, plan.vendor_organisation.slug, gate)
    return reverse("gates:gate", args=args)


def start(client: Any, bundle: Bundle, pool: LabPool, gate: str, reps: int) -> Any:
    data = {"bundle": bundle.pk, "gate": gate, "pool": pool.pk, "repetitions": reps}
    return client.post(reverse("benchmarks:campaign_start"), data)


def test_the_gate_page_offers_a_lab_operator_to_run_the_gate(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    html = client_for(labops).get(gate_url(frozen_plan)).content.decode()

    value = gate_choice_value(frozen_plan, GATE).replace(":", "%3A")
    assert 'data-testid="run-gate-link"' in html
    assert f"/lab/campaigns/new/?gate={value}" in html


@pytest.mark.parametrize("who", ["buyer", "auditor", "vendor_a"])
def test_the_gate_page_offers_no_run_to_others(
    request: pytest.FixtureRequest,
    client_for: Any,
    frozen_plan: GatePlan,
    gate_bundle: Any,
    who: str,
) -> None:
    response = client_for(request.getfixturevalue(who)).get(gate_url(frozen_plan))

    assert response.status_code == 200
    assert "run-gate-link" not in response.content.decode()


def test_the_form_opens_with_the_gate_its_bundle_and_runs_chosen(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    value = gate_choice_value(frozen_plan, GATE)

    response = client_for(labops).get(
        reverse("benchmarks:campaign_start"), {"gate": value}
    )

    form = response.context["form"]
    assert form.initial == {"gate": value, "bundle": gate_bundle.pk, "repetitions": 3}
    assert f"No gate. {NOT_JUDGED}." in response.content.decode()


def test_a_campaign_for_a_gate_is_judged_when_its_runs_end(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    client = client_for(labops)

    response = start(client, gate_bundle, pool, gate_choice_value(frozen_plan, GATE), 3)

    link = GateCampaign.objects.get()
    assert response.status_code == 302
    assert (link.plan, link.gate, link.requested_by) == (frozen_plan, GATE, labops)
    runs = sorted(link.campaign.runs.values_list("scenario_name", flat=True))
    assert runs == ["cold-c1"] * 3  # the scenario the gate judges
    page = client.get(response["Location"]).content.decode()
    assert f"{GATE} of plan v1</a> when its runs end." in page
    finish_runs(link.campaign, {"cold-c1": [176.2, 171.0, 178.9]})
    assert campaign_ended_judge_task(link.campaign.pk) == 1
    assert Evaluation.objects.get(campaign=link.campaign).verdict == "PASS"


def test_a_campaign_without_a_gate_says_it_will_not_be_judged(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    client = client_for(labops)

    response = start(client, gate_bundle, pool, "", 1)

    campaign = Campaign.objects.get()
    assert not GateCampaign.objects.exists()
    assert campaign.runs.count() == 2  # every scenario
    assert f"{NOT_JUDGED}." in client.get(response["Location"]).content.decode()


def test_a_gate_runs_its_own_bundle_only(
    tmp_path: Path,
    client_for: Any,
    labops: Any,
    vendor_a: Any,
    frozen_plan: GatePlan,
    pool: Any,
    gate_bundle: Bundle,
) -> None:
    Rfp.objects.filter(pk=frozen_plan.rfp_id).update(status=Rfp.Status.PUBLISHED)
    newer = accepted_bundle(
        tmp_path / "newer", frozen_plan.rfp, gate_bundle.organisation, vendor_a,
        harness=GOOD_HARNESS + b"# revised\n",
    )  # fmt: skip
    value = gate_choice_value(frozen_plan, GATE)

    response = start(client_for(labops), gate_bundle, pool, value, 3)

    assert response.status_code == 400
    assert "The chosen gate runs another bundle" in response.content.decode()
    assert start(client_for(labops), newer, pool, value, 3).status_code == 302


def test_the_service_refuses_another_bundle_than_the_gates(
    tmp_path: Path,
    labops: Any,
    vendor_a: Any,
    frozen_plan: GatePlan,
    pool: LabPool,
    gate_bundle: Bundle,
) -> None:
    Rfp.objects.filter(pk=frozen_plan.rfp_id).update(status=Rfp.Status.PUBLISHED)
    harness = GOOD_HARNESS + b"# revised\n"
    accepted_bundle(
        tmp_path / "newer", frozen_plan.rfp, gate_bundle.organisation, vendor_a,
        harness=harness,
    )  # fmt: skip

    with pytest.raises(GatesError) as refused:
        gate_campaign_start(
            plan=frozen_plan, gate=GATE, pool=pool, actor=labops, bundle=gate_bundle
        )

    assert refused.value.code == "other_bundle"
    assert not Campaign.objects.exists()


@pytest.mark.parametrize("gate", ["canary", "not-a-plan:lab-validation"])
def test_a_gate_the_form_does_not_offer_is_refused(
    client_for: Any,
    labops: Any,
    frozen_plan: GatePlan,
    pool: Any,
    gate_bundle: Any,
    gate: str,
) -> None:
    response = start(client_for(labops), gate_bundle, pool, gate, 3)

    assert response.status_code == 400
    assert not Campaign.objects.exists()


@pytest.fixture
def without_gates() -> Iterator[None]:
    with gate_campaign_source.swapped(None):
        yield


def test_without_gates_the_form_offers_none_and_campaigns_are_not_judged(
    client_for: Any,
    labops: Any,
    frozen_plan: GatePlan,
    pool: Any,
    gate_bundle: Any,
    without_gates: None,
) -> None:
    client = client_for(labops)

    form = client.get(reverse("benchmarks:campaign_start")).context["form"]
    response = start(client, gate_bundle, pool, gate_choice_value(frozen_plan, GATE), 1)

    assert list(form.fields["gate"].choices) == [("", f"No gate. {NOT_JUDGED}.")]
    assert response.status_code == 400
    assert not Campaign.objects.exists()


def test_the_form_lists_pools_with_an_online_host_first(
    client_for: Any, labops: Any, buyer_org: Organisation, pool: LabPool
) -> None:
    lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
    host_register(pool=make_pool(lab, "z-online"), worker=worker())

    form = client_for(labops).get(reverse("benchmarks:campaign_start")).context["form"]

    labels = [label for _, label in form.fields["pool"].choices]
    assert labels == ["z-online · 1 host online", "gate-lab · no host online"]


def test_a_campaign_a_buyer_evaluated_names_the_gate_that_judged_it(
    client_for: Any, labops: Any, buyer: Any, frozen_plan: GatePlan, gate_campaign: Any
) -> None:
    campaign = gate_campaign(3)  # started with no gate
    finish_runs(campaign, {"cold-c1": [176.2, 171.0, 178.9]})
    url = reverse("benchmarks:campaign_detail", args=(campaign.public_id,))
    before = client_for(labops).get(url).content.decode()
    gate_judge(plan=frozen_plan, gate=GATE, campaign=campaign, actor=buyer)

    after = client_for(labops).get(url).content.decode()

    assert f"{NOT_JUDGED}." in before
    assert NOT_JUDGED not in after
    assert f"{GATE} of plan v1</a>" in after
