"""Canary hosts (DESIGN §4b): a gate naming ``hosts`` runs only on those hosts of
the pool, refused when one is not a host of it; a later gate of the plan naming
none runs on the rest of that pool; a gate after canary hosts of another pool
runs on the whole pool. Re-test campaigns follow the same rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from benchmarks.models import LabHost, LabPool
from benchmarks.services.pools import host_register, host_stop
from gates.exceptions import GatesError
from gates.models import GatePlan, RetestObligation
from gates.services.obligations import (
    obligation_campaign_start,
    obligation_request_retest,
)
from gates.services.runs import gate_campaign_start
from procurement.models import Rfp
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    accepted_bundle,
    make_pool,
    worker,
)
from tests.gates.support import (
    FAIL,
    LAB,
    evaluate_fixture,  # noqa: F401 (fixture)
    make_frozen_plan,
    plan_document,
)

pytestmark = pytest.mark.django_db

A, B, C = "agent@lab-07", "agent@lab-08", "agent@lab-09"


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    for name in (A, B, C):
        host_register(pool=pool, worker=worker(name))
    return pool


def canary_plan(
    rfp: Rfp, vendor: Organisation, buyer: Any, hosts: list[str]
) -> GatePlan:
    """lab-validation, then pilot as a canary gate on ``hosts``, then rollout."""
    doc = plan_document(rfp.reference, vendor.slug)
    doc["gates"][1].update(stage="canary", hosts=hosts)
    return make_frozen_plan(rfp, vendor, buyer, doc)


def start(plan: GatePlan, gate: str, pool: LabPool, labops: Any) -> list[str]:
    link = gate_campaign_start(plan=plan, gate=gate, pool=pool, actor=labops)
    return link.campaign.hosts


@pytest.fixture
def plan(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Any
) -> GatePlan:
    return canary_plan(rfp, vendor_a_org, buyer, [B])


def test_a_canary_gate_runs_only_on_its_hosts(
    plan: GatePlan, pool: LabPool, labops: Any
) -> None:
    assert start(plan, "pilot", pool, labops) == [B]
    for action in ("campaign.started", "gate.campaign_started"):
        started = AuditEvent.objects.filter(action=action).last()
        assert started is not None
        assert started.data["hosts"] == [B]


def test_a_later_gate_runs_on_the_rest_of_the_pool(
    plan: GatePlan, pool: LabPool, labops: Any
) -> None:
    assert start(plan, "rollout", pool, labops) == [A, C]


def test_a_gate_before_the_canary_runs_on_the_whole_pool(
    plan: GatePlan, pool: LabPool, labops: Any
) -> None:
    assert start(plan, LAB, pool, labops) == []


def test_the_rest_leaves_out_retired_hosts(
    plan: GatePlan, pool: LabPool, labops: Any
) -> None:
    host_stop(worker_name=C, pool_names=[pool.name], retire=True)

    assert start(plan, "rollout", pool, labops) == [A]


def test_after_canary_hosts_of_another_pool_a_gate_runs_on_its_whole_pool(
    plan: GatePlan, buyer_org: Organisation, labops: Any
) -> None:
    other = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gpu-b")
    host_register(pool=other, worker=worker("agent@lab-50"))

    assert start(plan, "rollout", other, labops) == []


def test_a_canary_host_not_of_the_pool_is_refused_at_start(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Any,
    pool: LabPool, labops: Any,
) -> None:  # fmt: skip
    plan = canary_plan(rfp, vendor_a_org, buyer, [B, "agent@lab-99"])

    with pytest.raises(GatesError) as refused:
        start(plan, "pilot", pool, labops)

    assert refused.value.code == "unknown_host"
    assert "gates[1].hosts[1] 'agent@lab-99'" in str(refused.value)
    assert [p.path for p in refused.value.problems] == ["pool"]
    assert not LabHost.objects.filter(runs__isnull=False).exists()
    assert not AuditEvent.objects.filter(action="campaign.started").exists()


def test_no_host_left_for_the_later_gate_is_refused(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Any,
    pool: LabPool, labops: Any,
) -> None:  # fmt: skip
    plan = canary_plan(rfp, vendor_a_org, buyer, [A, B, C])

    with pytest.raises(GatesError) as refused:
        start(plan, "rollout", pool, labops)

    assert refused.value.code == "no_hosts"


def test_a_canary_gates_retest_runs_on_its_hosts_too(
    rfp: Rfp, vendor_a_org: Organisation, vendor_a: Any, buyer: Any, pool: LabPool,
    labops: Any, evaluate: Any, tmp_path: Path,
) -> None:  # fmt: skip
    doc = plan_document(rfp.reference, vendor_a_org.slug)
    doc["gates"][0].update(stage="canary", hosts=[C])
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, doc)
    evaluate(plan, FAIL)  # a blocking FAIL: the vendor owes a re-test
    revised = accepted_bundle(
        tmp_path / "rev", rfp, vendor_a_org, vendor_a,
        harness=GOOD_HARNESS + b"\n# revised\n",
    )  # fmt: skip
    obligation = obligation_request_retest(
        obligation=RetestObligation.objects.get(), bundle=revised, actor=vendor_a
    )

    campaign = obligation_campaign_start(obligation=obligation, pool=pool, actor=labops)

    assert campaign.hosts == [C]
    assert set(campaign.runs.values_list("routed_to", flat=True)) == {C}
