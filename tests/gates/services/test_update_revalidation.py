"""Update bundles after the award re-open the gates that passed on the old
environment: one re-validation obligation per gate, canary first; an update
that changes nothing re-opens nothing; updates are refused before the award,
from another vendor, and naming another vendor's bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.exceptions import ApplicationError
from accounts.models import AuditEvent, Notification, Organisation
from artifacts.models import Bundle, Deposit
from gates.exceptions import GatesConflict
from gates.models import GatePlan, RetestObligation
from gates.selectors.board import gate_board
from gates.services.obligations import (
    obligation_campaign_start,
    obligation_transition,
)
from procurement.models import Rfp
from tests.benchmarks.runner.support import make_pool
from tests.gates.support import (
    CRITERION,
    evaluate_fixture,  # noqa: F401
    make_frozen_plan,
    plan_document,
)
from tests.gates.update_support import (
    DRIVER,
    newer_driver,
    passed_and_awarded,
    update_bundle,
)

pytestmark = pytest.mark.django_db
REVALIDATION = RetestObligation.Kind.UPDATE_REVALIDATION


@pytest.fixture
def awarded(
    evaluate: Any, frozen_plan: GatePlan, rfp: Rfp, vendor_a_org: Organisation,
    buyer: Any, gate_bundle: Bundle,
) -> Bundle:  # fmt: skip
    """Vendor A's lab validation passed on ``gate_bundle`` and it won."""
    passed_and_awarded(evaluate, frozen_plan, rfp, vendor_a_org, buyer)
    return gate_bundle


def test_changed_gpu_driver_reopens_the_passed_gate(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, buyer: Any,
) -> None:  # fmt: skip
    update = update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=awarded.sha256,
        changes=[DRIVER], environment=newer_driver(),
    )  # fmt: skip

    assert update.status == Bundle.Status.ACCEPTED, update.problems
    assert update.supersedes == awarded
    obligation = RetestObligation.objects.get(kind=REVALIDATION)
    assert (obligation.gate, obligation.status) == ("lab-validation", "scheduled")
    assert obligation.bundle == update
    assert obligation.criteria == [CRITERION["id"]]
    assert "gpu_driver 550.54.15 → 560.35.03" in obligation.reason
    cells = {c.gate: c for c in gate_board(rfp=rfp, user=buyer)[0].cells}
    assert cells["lab-validation"].revalidation_due
    assert not cells["pilot"].revalidation_due  # never passed: nothing to re-open


def test_update_is_escrowed_and_audited_once_per_obligation(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, buyer: Any, labops: Any,
) -> None:  # fmt: skip
    update = update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=awarded.sha256,
        changes=[DRIVER],
    )  # fmt: skip

    assert Deposit.objects.filter(kind="bundle", bundle=update).count() == 1
    raised = AuditEvent.objects.filter(action="revalidation.raised")
    assert raised.count() == 1
    assert raised.get().data["update"] == update.sha256
    told = set(
        Notification.objects.filter(subject__contains="re-validation").values_list(
            "recipient__username", flat=True
        )
    )
    assert {"buyer", "labops"} <= told
    assert "vendor-a" not in told


def test_update_that_changes_nothing_raises_no_obligation(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any,
) -> None:  # fmt: skip
    update = update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=awarded.sha256, changes=[]
    )

    assert update.status == Bundle.Status.ACCEPTED, update.problems
    assert not RetestObligation.objects.filter(kind=REVALIDATION).exists()


def test_canary_gate_is_revalidated_first(
    tmp_path: Path, evaluate: Any, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, buyer: Any, labops: Any, gate_bundle: Bundle,
) -> None:  # fmt: skip
    document = plan_document(rfp.reference, vendor_a_org.slug)
    canary = {**document["gates"][1], "name": "canary", "stage": "canary"}
    document["gates"].insert(1, {**canary, "hosts": ["lab-host-1"]})
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, document)
    passed_and_awarded(evaluate, plan, rfp, vendor_a_org, buyer)

    update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=gate_bundle.sha256,
        changes=[DRIVER],
    )  # fmt: skip

    found = RetestObligation.objects.filter(kind=REVALIDATION).order_by("id")
    assert [o.gate for o in found] == ["canary", "lab-validation"]
    assert all(o.canary_hosts == ["lab-host-1"] for o in found)
    lab = buyer.memberships.get().organisation.engages.get(kind="lab")
    with pytest.raises(GatesConflict, match="canary hosts first") as refused:
        obligation_campaign_start(
            obligation=found[1], pool=make_pool(lab, name="p"), actor=labops
        )
    assert refused.value.code == "canary_first"


def test_rest_of_the_gates_run_once_the_canary_passed(
    tmp_path: Path, evaluate: Any, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, buyer: Any, labops: Any, gate_bundle: Bundle,
) -> None:  # fmt: skip
    document = plan_document(rfp.reference, vendor_a_org.slug)
    canary = {**document["gates"][1], "name": "canary", "stage": "canary"}
    document["gates"].insert(1, {**canary, "hosts": ["lab-host-1"]})
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, document)
    passed_and_awarded(evaluate, plan, rfp, vendor_a_org, buyer)
    update = update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=gate_bundle.sha256,
        changes=[DRIVER],
    )  # fmt: skip
    first, rest = RetestObligation.objects.filter(kind=REVALIDATION).order_by("id")
    obligation_transition(obligation=first, to="passed", actor=None)
    lab = buyer.memberships.get().organisation.engages.get(kind="lab")

    campaign = obligation_campaign_start(
        obligation=rest, pool=make_pool(lab, name="p"), actor=labops
    )

    assert campaign.bundle == update
    rest.refresh_from_db()
    assert rest.campaign == campaign


def test_update_before_award_is_refused(
    tmp_path: Path, rfp: Rfp, vendor_a_org: Organisation, vendor_a: Any
) -> None:
    first = update_bundle(tmp_path / "a", rfp, vendor_a_org, vendor_a, supersedes=None)

    update = update_bundle(
        tmp_path / "b", rfp, vendor_a_org, vendor_a, supersedes=first.sha256,
        changes=[DRIVER],
    )  # fmt: skip

    assert update.status == Bundle.Status.REJECTED
    assert [(p["code"], p["path"]) for p in update.problems] == [
        ("update_before_award", "supersedes")
    ]


def test_update_naming_another_vendors_bundle_is_refused(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any, vendor_b_org: Organisation, vendor_b: Any,
) -> None:  # fmt: skip
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.PUBLISHED)
    rfp.refresh_from_db()
    theirs = update_bundle(
        tmp_path / "b", rfp, vendor_b_org, vendor_b, supersedes=None, key="vendor_b"
    )
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.AWARDED)
    rfp.refresh_from_db()

    update = update_bundle(
        tmp_path / "a", rfp, vendor_a_org, vendor_a, supersedes=theirs.sha256,
        changes=[DRIVER],
    )  # fmt: skip

    assert theirs.status == Bundle.Status.ACCEPTED
    assert [(p["code"], p["path"]) for p in update.problems] == [
        ("supersedes_unknown", "supersedes")
    ]
    assert not RetestObligation.objects.filter(kind=REVALIDATION).exists()


def test_other_vendor_cannot_deposit_after_award(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_b_org: Organisation,
    vendor_b: Any,
) -> None:  # fmt: skip
    with pytest.raises(ApplicationError) as refused:
        update_bundle(
            tmp_path, rfp, vendor_b_org, vendor_b, supersedes=awarded.sha256,
            key="vendor_b",
        )  # fmt: skip

    assert "awarded" in str(refused.value)
    assert not Bundle.objects.filter(organisation=vendor_b_org).exists()


def test_awarded_vendor_bundle_must_name_what_it_updates(
    tmp_path: Path, awarded: Bundle, rfp: Rfp, vendor_a_org: Organisation,
    vendor_a: Any,
) -> None:  # fmt: skip
    plain = update_bundle(tmp_path, rfp, vendor_a_org, vendor_a, supersedes=None)

    assert [(p["code"], p["path"]) for p in plain.problems] == [
        ("supersedes_required", "supersedes")
    ]
