"""The gate board says which lab hosts judged each gate: the hosts that ran the
runs its latest evaluation judged (a canary gate's hosts, the rest of the
pool's), on the page and in the API."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Organisation
from accounts.selectors import clock
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.pools import host_register
from benchmarks.services.runs import run_claim
from gates.models import GatePlan
from gates.selectors.board import gate_board
from gates.services.pipeline import gate_judge
from gates.services.runs import gate_campaign_start
from procurement.models import Rfp
from tests.benchmarks.runner.support import make_pool, worker
from tests.gates.support import LAB, PASS, finish_runs, make_frozen_plan, plan_document

pytestmark = pytest.mark.django_db

A, B, C = "agent@lab-07", "agent@lab-08", "agent@lab-09"


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    for name in (A, B, C):
        host_register(pool=pool, worker=worker(name))
    return pool


@pytest.fixture
def plan(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Any
) -> GatePlan:
    doc = plan_document(rfp.reference, vendor_a_org.slug)
    doc["gates"][1].update(stage="canary", hosts=[B])
    return make_frozen_plan(rfp, vendor_a_org, buyer, doc)


def ran_and_judged(plan: GatePlan, gate: str, pool: LabPool, user: Any) -> Campaign:
    """The gate's campaign, each run claimed by the host it was sent to (else
    the first of its hosts) and finished, then judged."""
    campaign = gate_campaign_start(
        plan=plan, gate=gate, pool=pool, actor=user, repetitions=3
    ).campaign
    for run in campaign.runs.order_by("position"):
        host = pool.hosts.get(worker_name=run.routed_to or A)
        run_claim(run_id=run.pk, attempt=1, host=host)
    finish_runs(campaign, {"cold-c1": PASS})
    Run.objects.filter(campaign=campaign).update(
        finished_at=clock.now() - timedelta(seconds=1)
    )
    gate_judge(plan=plan, gate=gate, campaign=campaign, actor=user)
    return campaign


def hosts_of(rfp: Rfp, user: Any) -> dict[str, tuple[str, ...]]:
    [row] = gate_board(rfp=rfp, user=user)
    return {cell.gate: cell.hosts for cell in row.cells}


def test_each_gate_shows_the_hosts_that_ran_what_it_judged(
    rfp: Rfp, plan: GatePlan, pool: LabPool, buyer: Any, labops: Any
) -> None:
    ran_and_judged(plan, "pilot", pool, labops)
    ran_and_judged(plan, "rollout", pool, labops)

    assert hosts_of(rfp, buyer) == {LAB: (), "pilot": (B,), "rollout": (A, C)}


def test_runs_ended_after_the_evaluation_are_not_its_hosts(
    rfp: Rfp, plan: GatePlan, pool: LabPool, buyer: Any, labops: Any
) -> None:
    campaign = ran_and_judged(plan, "pilot", pool, labops)
    Run.objects.filter(campaign=campaign).update(
        finished_at=clock.now() + timedelta(hours=1)
    )

    assert hosts_of(rfp, buyer)["pilot"] == ()


def test_the_board_page_and_api_name_the_hosts(
    rfp: Rfp, plan: GatePlan, pool: LabPool, buyer: Any, labops: Any,
    client_for: Any,
) -> None:  # fmt: skip
    ran_and_judged(plan, "rollout", pool, labops)
    client = client_for(buyer)

    page = client.get(reverse("gates:board", args=[rfp.public_id]))
    api = client.get(f"/api/v1/rfps/{rfp.public_id}/gate-board/")

    html = page.content.decode()
    assert 'data-testid="judged-by">on <code>agent@lab-07</code>, ' in html
    assert "<code>agent@lab-09</code>" in html
    assert "agent@lab-08" not in html
    [vendor] = api.json()["vendors"]
    latest = {g["gate"]: g["latest_evaluation"] for g in vendor["gates"]}
    assert latest["rollout"]["hosts"] == [A, C]
    assert latest["pilot"] is None


def test_the_campaign_page_names_its_hosts_and_each_queued_runs(
    plan: GatePlan, pool: LabPool, labops: Any, client_for: Any
) -> None:
    link = gate_campaign_start(plan=plan, gate="rollout", pool=pool, actor=labops)
    campaign = link.campaign
    client = client_for(labops)

    page = client.get(reverse("benchmarks:campaign_detail", args=[campaign.public_id]))
    api = client.get(f"/api/v1/campaigns/{campaign.public_id}/")

    html = page.content.decode()
    assert (
        'data-testid="campaign-hosts">Runs only on the hosts '
        "<code>agent@lab-07</code>, <code>agent@lab-09</code> of <code>gpu-a</code>"
    ) in html
    # three runs of cold-c1, round the two hosts
    assert html.count('data-testid="run-routed">for agent@lab-07<') == 2
    assert html.count('data-testid="run-routed">for agent@lab-09<') == 1
    assert api.json()["hosts"] == [A, C]
