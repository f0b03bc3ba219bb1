"""The demo seed's lab side: pool ``local`` of northwind-lab and RFP-DEMO-2,
opened through the services with both example bundles accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent
from accounts.selectors import clock
from artifacts.models import Bundle
from benchmarks.models import LabPool
from benchmarks.selectors.access import bundle_list_startable_by
from portal.demo import DEMO_RFP, LAB_POOL, LAB_RFP, demo_seed
from procurement.models import Rfp

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_seed_opens_the_lab_rfp_with_both_bundles_accepted(var_dir: Path) -> None:
    demo_seed()

    rfp = Rfp.objects.get(reference=LAB_RFP)
    assert rfp.status == Rfp.Status.OPENED
    assert rfp.opening.requested_by.username == "buyer"
    assert rfp.opening.confirmed_by.username == "evaluator"
    bundles = Bundle.objects.filter(rfp=rfp, status=Bundle.Status.ACCEPTED)
    assert sorted(b.organisation.slug for b in bundles) == [
        "acme-flash",
        "bolt-storage",
        "northwind-ai",  # the buyer's baseline
    ]
    assert rfp.bids.filter(status="submitted").count() == 2


def test_seed_moves_the_lab_rfp_only_through_audited_services(var_dir: Path) -> None:
    demo_seed()

    rfp = Rfp.objects.get(reference=LAB_RFP)
    moves = AuditEvent.objects.filter(  # the opening's move is its confirmation row
        action__in=("rfp.transitioned", "rfp.opening_confirmed"),
        target_id=str(rfp.pk),
    ).order_by("id")
    assert [e.data["to"] for e in moves] == ["published", "closed", "opened"]


def test_seed_keeps_the_first_rfp_open_for_submissions(var_dir: Path) -> None:
    demo_seed()

    assert Rfp.objects.get(reference=DEMO_RFP).status == Rfp.Status.PUBLISHED


def test_labops_can_start_campaigns_on_both_lab_bundles(var_dir: Path) -> None:
    demo_seed()

    labops = (
        LabPool.objects.get(name=LAB_POOL)
        .lab_organisation.memberships.get(role="labops")
        .user
    )
    startable = bundle_list_startable_by(labops)
    assert {b.rfp.reference for b in startable} == {LAB_RFP}
    # both vendors' bundles and the buyer's baseline
    assert startable.count() == 3
    assert LabPool.objects.get(name=LAB_POOL).lab_organisation.slug == "northwind-lab"


def test_seed_leaves_a_frozen_clock_where_it_was(var_dir: Path, clock: Any) -> None:
    moment = clock.now()

    demo_seed()

    assert clock.now() == moment
    assert Rfp.objects.get(reference=LAB_RFP).status == Rfp.Status.OPENED


def test_seed_leaves_a_running_clock_running(var_dir: Path) -> None:
    demo_seed()

    assert clock._frozen_at is None
