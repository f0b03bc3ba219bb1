"""Undeposited updates: a version the lab captured on the awarded vendor's run
that no deposit declares, seen longer ago than the contract's update-deposit
term, is a finding the buyer sees and may cite as a breach."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Organisation
from artifacts.models import Bundle
from artifacts.selectors.breaches import breach_get, breaches_citable
from benchmarks.models import Run
from gates.models import GatePlan
from gates.selectors.undeposited import component_of, undeposited_updates
from procurement.models import Rfp
from tests.gates.support import evaluate_fixture  # noqa: F401
from tests.gates.update_support import DRIVER, passed_and_awarded, update_bundle

pytestmark = pytest.mark.django_db
SEEN = "550.90.07"


@pytest.fixture
def seen_run(
    evaluate: Any, frozen_plan: GatePlan, rfp: Rfp, vendor_a_org: Organisation,
    buyer: Any, gate_campaign: Any, clock: Any,
) -> Run:  # fmt: skip
    """After the award, a run of vendor A's bundle captured GPU driver SEEN
    where the bundle declares 550.54.15."""
    passed_and_awarded(evaluate, frozen_plan, rfp, vendor_a_org, buyer)
    clock.advance(minutes=5)
    run = gate_campaign(3).runs.order_by("position").first()
    drift = {
        "field": "hosts.gpu.gpu.driver",
        "declared": "550.54.15",
        "captured": SEEN,
        "severity": "minor",
        "message": f"GPU driver: declared 550.54.15, this host has {SEEN}",
        "rule": "accelerator.driver.minor",
    }
    Run.objects.filter(pk=run.pk).update(started_at=clock.now(), drift=[drift])
    run.refresh_from_db()
    return run


def test_no_finding_within_the_deposit_term(
    seen_run: Run, rfp: Rfp, clock: Any
) -> None:
    clock.advance(days=rfp.update_deposit_days - 1)

    assert undeposited_updates(rfp) == []


def test_finding_once_the_deposit_term_passed(
    seen_run: Run, rfp: Rfp, vendor_a_org: Organisation, clock: Any
) -> None:
    clock.advance(days=rfp.update_deposit_days, seconds=1)

    [finding] = undeposited_updates(rfp)

    assert (finding.component, finding.version, finding.run) == (
        "gpu_driver",
        SEEN,
        seen_run,
    )
    assert finding.label.startswith(
        f"undeposited update: gpu_driver {SEEN} seen on run"
    )
    cited = breach_get(rfp, vendor_a_org.pk, finding.id)
    assert cited is not None
    assert cited.kind == "undeposited_update"
    assert SEEN in cited.statement


def test_a_deposited_update_declaring_it_clears_the_finding(
    tmp_path: Path, seen_run: Run, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, gate_bundle: Bundle, clock: Any,
) -> None:  # fmt: skip
    change = {**DRIVER, "to": SEEN}
    update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=gate_bundle.sha256,
        changes=[change],
    )  # fmt: skip
    clock.advance(days=rfp.update_deposit_days + 5)

    assert undeposited_updates(rfp) == []
    kinds = {b.kind for b in breaches_citable(rfp, vendor_a_org.pk)}
    assert "undeposited_update" not in kinds  # (its unanswered re-validation is)


def test_other_vendor_has_no_such_breach(
    seen_run: Run, rfp: Rfp, vendor_b_org: Organisation, clock: Any
) -> None:
    clock.advance(days=rfp.update_deposit_days + 1)

    assert breaches_citable(rfp, vendor_b_org.pk) == []


def test_buyer_board_lists_it_and_other_vendor_does_not_see_it(
    seen_run: Run, rfp: Rfp, buyer: Any, vendor_b: Any, client_for: Any, clock: Any
) -> None:
    clock.advance(days=rfp.update_deposit_days + 1)
    url = reverse("gates:board", args=[rfp.public_id])

    mine = client_for(buyer).get(url).content.decode()
    theirs = client_for(vendor_b).get(url)

    assert f"undeposited update: gpu_driver {SEEN}" in mine
    assert SEEN not in theirs.content.decode()


@pytest.mark.parametrize(
    ("rule", "component"),
    [
        ("accelerator.driver.major", "gpu_driver"),
        ("nvme.firmware.patch", "nvme_firmware"),
        ("nic.firmware", "nic_firmware"),
        ("kernel", "kernel"),
        ("kernel.cmdline", None),
        ("cpu.model", None),
    ],
)
def test_drift_rules_name_their_update_component(rule: str, component: str) -> None:
    assert component_of(rule) == component
