"""``POST /api/v1/gate-plans/<id>/gates/<gate>/campaigns/``: a lab operator of the
engaged lab runs one gate of the current frozen plan on a pool of its lab; when
the campaign's runs end the gate is evaluated and the board shows it. Others who
see the plan are refused (403), others 404; bad input and stale plans say why."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organisation
from benchmarks.models import Campaign, LabPool
from benchmarks.services.pools import host_register
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.tasks import campaign_ended_judge_task
from procurement.models import Rfp
from tests.benchmarks.runner.support import make_pool, worker
from tests.gates.api.support import GATE, PASSING, api
from tests.gates.support import finish_runs, make_frozen_plan, plan_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    return make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gate-lab")


def run_gate(plan: GatePlan, user: Any, gate: str = GATE, **body: Any) -> Any:
    url = f"/api/v1/gate-plans/{plan.public_id}/gates/{gate}/campaigns/"
    return api(user).post(url, {"pool": "gate-lab", **body}, format="json")


def test_a_lab_operator_runs_a_gate_and_the_board_shows_its_verdict(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any, rfp: Any
) -> None:
    response = run_gate(frozen_plan, labops)

    body = response.json()
    assert response.status_code == 201
    campaign = Campaign.objects.get(public_id=body["campaign"])
    assert (body["gate"], body["pool"], body["runs"]) == (GATE, "gate-lab", 3)
    assert body["url"] == f"/lab/campaigns/{campaign.public_id}/"
    assert GateCampaign.objects.get(campaign=campaign).requested_by == labops
    finish_runs(campaign, {"cold-c1": PASSING})
    assert campaign_ended_judge_task(campaign.pk) == 1
    board = api(labops).get(f"/api/v1/rfps/{rfp.public_id}/gate-board/").json()
    [acme] = board["vendors"]
    latest = acme["gates"][0]["latest_evaluation"]
    evaluation = Evaluation.objects.get(campaign=campaign)
    assert (latest["id"], latest["verdict"]) == (str(evaluation.public_id), "PASS")


def test_repetitions_set_the_runs_per_judged_scenario(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    response = run_gate(frozen_plan, labops, repetitions=5)

    assert response.status_code == 201
    assert (response.json()["repetitions"], response.json()["runs"]) == (5, 5)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hosts": ["a1@lab-07"]}, "hosts"),
        ({"repetitions": 0}, "repetitions"),
        ({"pool": "no-such-pool"}, "pool"),
        ({"pool": ""}, "pool"),
    ],
)
def test_bad_input_is_refused_with_the_field_that_is_wrong(
    frozen_plan: GatePlan,
    pool: LabPool,
    labops: Any,
    gate_bundle: Any,
    body: dict[str, Any],
    field: str,
) -> None:
    response = run_gate(frozen_plan, labops, **body)

    assert response.status_code == 400
    assert field in response.content.decode()
    assert not Campaign.objects.exists()


def test_hosts_are_refused_with_a_sentence_saying_the_plan_names_them(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    response = run_gate(frozen_plan, labops, hosts=["a1@lab-07"])

    assert response.status_code == 400
    assert "the gate plan names a gate's canary hosts" in response.json()["message"]


def test_a_canary_gate_runs_on_its_hosts_and_a_host_the_pool_lacks_is_refused(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, pool: LabPool, labops: Any,
    gate_bundle: Any,
) -> None:  # fmt: skip
    host_register(pool=pool, worker=worker("agent@lab-07"))
    doc = plan_document(rfp.reference, vendor_a_org.slug)
    doc["gates"][0].update(stage="canary", hosts=["agent@lab-07"])
    doc["gates"][1].update(stage="canary", hosts=["agent@lab-99"])
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, doc)

    started = run_gate(plan, labops)
    refused = run_gate(plan, labops, gate="pilot")

    assert started.status_code == 201, started.json()
    assert started.json()["hosts"] == ["agent@lab-07"]
    assert refused.status_code == 400
    assert refused.json()["code"] == "unknown_host"
    assert "gates[1].hosts[0] 'agent@lab-99'" in refused.json()["message"]
    assert Campaign.objects.count() == 1


def test_another_lab_may_not_use_its_pool_for_this_rfp(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    other_lab = Organisation.objects.create(
        name="Other lab", slug="other-lab", kind=Organisation.Kind.LAB
    )
    make_pool(other_lab, "other-pool")

    response = run_gate(frozen_plan, labops, pool="other-pool")

    assert response.status_code == 400
    assert not Campaign.objects.exists()


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("buyer", 403),
        ("auditor", 403),
        ("vendor_a", 403),
        ("vendor_b", 404),
        ("outsider", 404),
    ],
)
def test_only_the_engaged_lab_runs_gates(
    request: pytest.FixtureRequest,
    frozen_plan: GatePlan,
    pool: LabPool,
    gate_bundle: Any,
    who: str,
    status: int,
) -> None:
    response = run_gate(frozen_plan, request.getfixturevalue(who))

    assert response.status_code == status
    assert not Campaign.objects.exists()


def test_anonymous_callers_are_not_signed_in(
    frozen_plan: GatePlan, pool: LabPool, gate_bundle: Any
) -> None:
    assert run_gate(frozen_plan, None).status_code in (401, 403)


def test_an_unknown_gate_is_not_found(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    assert run_gate(frozen_plan, labops, gate="canary").status_code == 404


def test_a_superseded_plan_is_a_conflict(
    rfp: Any,
    vendor_a_org: Organisation,
    buyer: Any,
    pool: LabPool,
    labops: Any,
    gate_bundle: Any,
) -> None:
    old = make_frozen_plan(rfp, vendor_a_org, buyer)
    GatePlan.objects.filter(pk=old.pk).update(status=GatePlan.Status.SUPERSEDED)
    make_frozen_plan(rfp, vendor_a_org, buyer, version=2)

    response = run_gate(old, labops)

    assert response.status_code == 409
    assert response.json()["code"] == "not_frozen"
    assert not Campaign.objects.exists()


def test_sealed_bids_are_a_conflict(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    Rfp.objects.filter(pk=frozen_plan.rfp_id).update(status=Rfp.Status.CLOSED)

    response = run_gate(frozen_plan, labops)

    assert response.status_code == 409
    assert response.json()["code"] == "sealed"
    assert not Campaign.objects.exists()


WARMUP = {
    "name": "lab-warmup", "kind": "warmup", "cache": "cold", "concurrency": 1,
    "batch_size": 1, "duration_s": 5,
}  # fmt: skip


def test_a_lab_plan_adds_the_lab_s_scenarios_beside_the_gate_s(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    response = run_gate(
        frozen_plan, labops, repetitions=1, lab_plan={"scenarios": [WARMUP]}
    )

    assert response.status_code == 201, response.json()
    campaign = Campaign.objects.get(public_id=response.json()["campaign"])
    assert [r.scenario_name for r in campaign.runs.order_by("position")] == [
        "cold-c1",
        "lab-warmup",
    ]
    assert campaign.scenarios[-1]["added_by"] == "lab"


def test_a_bad_lab_plan_names_its_place_and_starts_nothing(
    frozen_plan: GatePlan, pool: LabPool, labops: Any, gate_bundle: Any
) -> None:
    plan = {"scenarios": [{**WARMUP, "cache": "warm"}]}

    response = run_gate(frozen_plan, labops, lab_plan=plan)

    assert response.status_code == 400
    paths = [p.get("path") for p in response.json()["problems"]]
    assert "lab_plan.scenarios[0].cache" in paths
    assert not Campaign.objects.exists()
