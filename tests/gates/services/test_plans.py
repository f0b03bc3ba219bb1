"""Gate plan services: the default draft from the vendor's accepted bundle, edits
of the draft only, freezing (superseding the version before), new versions,
files imported and exported byte-exact, every refusal with its problems and
nothing stored, one audit row per action."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Organisation
from artifacts.lib.canonical import canonical_json
from artifacts.models import Bundle
from gates.exceptions import GatesConflict, GatesError
from gates.models import PLAN_TRANSITIONS, GatePlan
from gates.selectors.plans import plan_current, plan_draft, plan_export
from gates.services.plans import (
    MAX_IMPORT_BYTES,
    plan_create_default,
    plan_freeze,
    plan_import,
    plan_new_version,
    plan_transition,
    plan_update,
)
from procurement.models import Rfp
from tests.gates.support import make_frozen_plan, plan_document
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db
S = GatePlan.Status


def actions(plan: GatePlan) -> list[str]:
    return list(
        AuditEvent.objects.filter(
            target_type=ContentType.objects.get_for_model(GatePlan),
            target_id=str(plan.pk),
        )
        .order_by("occurred_at", "pk")
        .values_list("action", flat=True)
    )


def paths(error: pytest.ExceptionInfo[Any]) -> dict[str, str]:
    return {p.path: p.message for p in error.value.problems}


@pytest.fixture
def draft(rfp: Rfp, vendor_a_org: Organisation, buyer: Any) -> GatePlan:
    data = canonical_json(plan_document(rfp.reference, vendor_a_org.slug))
    return plan_import(rfp=rfp, vendor=vendor_a_org, data=data, actor=buyer)


def test_plan_create_default_drafts_the_bundles_claims(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Bundle
) -> None:
    plan = plan_create_default(rfp=rfp, vendor=vendor_a_org, actor=buyer)

    assert (plan.status, plan.version, plan.bundle) == (S.DRAFT, 1, gate_bundle)
    criterion = plan.plan["gates"][0]["criteria"][0]
    assert (criterion["metric"], criterion["claim"]) == ("ttft_ms", 40.0)
    assert criterion["band"] == {"pct": int(rfp.retest_tolerance_pct)}
    assert plan.sha256 == hashlib.sha256(plan.document.encode()).hexdigest()
    assert actions(plan) == ["gate_plan.created"]


def test_plan_create_default_refuses_a_vendor_without_accepted_bundle(
    rfp: Rfp, vendor_b_org: Organisation, buyer: Any, gate_bundle: Bundle
) -> None:
    with pytest.raises(GatesError) as refused:
        plan_create_default(rfp=rfp, vendor=vendor_b_org, actor=buyer)

    assert refused.value.code == "no_accepted_bundle"
    assert not GatePlan.objects.exists()


def test_plan_create_default_refuses_a_second_draft(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Bundle
) -> None:
    plan_create_default(rfp=rfp, vendor=vendor_a_org, actor=buyer)

    with pytest.raises(GatesConflict) as refused:
        plan_create_default(rfp=rfp, vendor=vendor_a_org, actor=buyer)

    assert refused.value.code == "draft_exists"
    assert GatePlan.objects.count() == 1


def test_plan_create_default_passes_on_the_claims_problems(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Bundle
) -> None:
    manifest = dict(gate_bundle.manifest)
    manifest["claims"] = [{"metric": "mystery", "stat": "p99", "scenario": "cold-c1",
                           "value": 3.0}]  # fmt: skip
    Bundle.objects.filter(pk=gate_bundle.pk).update(manifest=manifest)

    with pytest.raises(GatesError) as refused:
        plan_create_default(rfp=rfp, vendor=vendor_a_org, actor=buyer)

    assert "claims[0].metric" in paths(refused)
    assert not GatePlan.objects.exists()


def test_plan_create_default_refuses_while_bids_are_sealed(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_bundle: Bundle
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    with pytest.raises(GatesConflict) as refused:
        plan_create_default(rfp=rfp, vendor=vendor_a_org, actor=buyer)

    assert refused.value.code == "sealed"


def test_plan_update_stores_canonical_json_and_settings(
    draft: GatePlan, buyer: Any
) -> None:
    document = draft.plan
    document["gates"][0]["criteria"][0]["band"] = {"pct": 5}

    plan = plan_update(
        plan=draft,
        document=document,
        actor=buyer,
        lab_environment_accepted=True,
        lab_environment_note="The lab's hosts are the production fleet.",
        max_extra_runs=4,
    )

    plan.refresh_from_db()
    assert plan.document == canonical_json(document).decode()
    assert plan.plan["gates"][0]["criteria"][0]["band"] == {"pct": 5}
    assert (plan.lab_environment_accepted, plan.max_extra_runs) == (True, 4)
    assert actions(plan) == ["gate_plan.imported", "gate_plan.updated"]


def test_plan_update_lists_every_problem_with_its_path(
    draft: GatePlan, buyer: Any
) -> None:
    document = draft.plan
    document["vendor"] = "bolt-storage"
    document["gates"][0]["criteria"][0]["band"] = {"pct": 400}
    document["gates"][1]["score"]["warn_pct"] = 99

    with pytest.raises(GatesError) as refused:
        plan_update(plan=draft, document=document, actor=buyer, max_extra_runs=99)

    assert set(paths(refused)) == {
        "vendor",
        "gates[0].criteria[0].band.pct",
        "gates[1].score.warn_pct",
        "max_extra_runs",
    }
    draft.refresh_from_db()
    assert draft.plan["vendor"] == "acme-flash"
    assert actions(draft) == ["gate_plan.imported"]


def test_plan_update_accepting_the_lab_environment_needs_a_note(
    draft: GatePlan, buyer: Any
) -> None:
    with pytest.raises(GatesError) as refused:
        plan_update(
            plan=draft,
            document=draft.plan,
            actor=buyer,
            lab_environment_accepted=True,
            lab_environment_note="  ",
        )

    assert set(paths(refused)) == {"lab_environment_note"}


def test_plan_update_refuses_a_frozen_plan(frozen_plan: GatePlan, buyer: Any) -> None:
    with pytest.raises(GatesConflict) as refused:
        plan_update(plan=frozen_plan, document=frozen_plan.plan, actor=buyer)

    assert "start a new version" in refused.value.message


def test_plan_freeze_supersedes_the_current_plan(
    frozen_plan: GatePlan, buyer: Any
) -> None:
    draft = plan_new_version(plan=frozen_plan, actor=buyer)

    frozen = plan_freeze(plan=draft, actor=buyer)

    frozen_plan.refresh_from_db()
    assert (frozen.status, frozen.version, frozen.frozen_by) == (S.FROZEN, 2, buyer)
    assert frozen.supersedes == frozen_plan
    assert frozen_plan.status == S.SUPERSEDED
    assert plan_current(frozen.rfp, frozen.vendor_organisation) == frozen
    assert actions(frozen) == ["gate_plan.created", "gate_plan.frozen"]
    assert actions(frozen_plan) == ["gate_plan.superseded"]


def test_plan_freeze_refuses_a_document_that_no_longer_validates(
    draft: GatePlan, buyer: Any
) -> None:
    document = draft.plan
    document["gates"][0]["criteria"][0]["min_runs"] = 0
    GatePlan.objects.filter(pk=draft.pk).update(document=json.dumps(document))

    with pytest.raises(GatesError) as refused:
        plan_freeze(plan=draft, actor=buyer)

    assert set(paths(refused)) == {"gates[0].criteria[0].min_runs"}
    draft.refresh_from_db()
    assert draft.status == S.DRAFT


def test_plan_freeze_refuses_a_frozen_plan(frozen_plan: GatePlan, buyer: Any) -> None:
    with pytest.raises(InvalidTransition):
        plan_freeze(plan=frozen_plan, actor=buyer)


def test_plan_new_version_refuses_while_a_draft_exists(
    frozen_plan: GatePlan, buyer: Any
) -> None:
    plan_new_version(plan=frozen_plan, actor=buyer)

    with pytest.raises(GatesConflict) as refused:
        plan_new_version(plan=frozen_plan, actor=buyer)

    assert refused.value.code == "draft_exists"


def test_plan_new_version_copies_document_and_settings(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any
) -> None:
    frozen = make_frozen_plan(rfp, vendor_a_org, buyer, lab_environment_accepted=True)

    draft = plan_new_version(plan=frozen, actor=buyer)

    assert (draft.status, draft.version, draft.document) == (
        S.DRAFT,
        2,
        frozen.document,
    )
    assert draft.lab_environment_accepted is True


def test_a_plan_is_frozen_once_and_superseded_once() -> None:
    assert {
        S.DRAFT: {S.FROZEN},
        S.FROZEN: {S.SUPERSEDED},
        S.SUPERSEDED: set(),
    } == PLAN_TRANSITIONS


@pytest.mark.parametrize("to", S.values)
@pytest.mark.parametrize("start", S.values)
def test_plan_transition_follows_the_table(
    frozen_plan: GatePlan,
    buyer: Any,
    start: str,
    to: str,
    transition_moves: list[Move],
) -> None:
    GatePlan.objects.filter(pk=frozen_plan.pk).update(status=start)
    allowed = to in PLAN_TRANSITIONS[start]
    rows = AuditEvent.objects.count()

    if allowed:
        assert plan_transition(plan=frozen_plan, to=to, actor=buyer).status == to
    else:
        with pytest.raises(InvalidTransition):
            plan_transition(plan=frozen_plan, to=to, actor=buyer)
    assert AuditEvent.objects.count() == rows + allowed  # one call, one row
    assert transition_moves == ([Move("gates.gateplan", start, to)] if allowed else [])


def test_plan_import_makes_a_draft_and_exports_the_same_bytes(
    draft: GatePlan,
) -> None:
    exported = plan_export(draft)

    assert hashlib.sha256(exported).hexdigest() == draft.sha256
    assert json.loads(exported)["vendor"] == "acme-flash"
    assert (draft.status, draft.bundle) == (S.DRAFT, None)
    assert actions(draft) == ["gate_plan.imported"]


def test_plan_import_replaces_the_drafts_content(
    draft: GatePlan, rfp: Rfp, vendor_a_org: Organisation, buyer: Any
) -> None:
    document = draft.plan
    document["gates"] = document["gates"][:1]

    plan = plan_import(
        rfp=rfp, vendor=vendor_a_org, data=canonical_json(document), actor=buyer
    )

    assert plan.pk == draft.pk
    assert plan.gate_names == ["lab-validation"]
    assert actions(plan) == ["gate_plan.imported", "gate_plan.imported"]


@pytest.mark.parametrize(
    ("data", "code", "path"),
    [
        (b"\xff\xfe{}", "invalid_json", "(file)"),
        (b'{"schema": NaN}', "invalid_json", "(file)"),
        (b'{"schema": "reprogate.gate-plan/v1",', "invalid_json", "(file)"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_json", "(file)"),
        (b"[1, 2]", "invalid_plan", "(document)"),
        (b'{"schema": "reprogate.results/v1"}', "invalid_plan", "schema"),
        (b" " * (MAX_IMPORT_BYTES + 1), "too_large", None),
    ],
)
def test_plan_import_refuses_hostile_files_storing_nothing(
    rfp: Rfp,
    vendor_a_org: Organisation,
    buyer: Any,
    data: bytes,
    code: str,
    path: str | None,
) -> None:
    with pytest.raises(GatesError) as refused:
        plan_import(rfp=rfp, vendor=vendor_a_org, data=data, actor=buyer)

    assert refused.value.code == code
    assert path is None or path in paths(refused)
    assert not GatePlan.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="gate_plan.").exists()


def test_plan_import_refuses_another_rfps_or_vendors_plan(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any
) -> None:
    data = canonical_json(plan_document("RFP-OTHER", "bolt-storage"))

    with pytest.raises(GatesError) as refused:
        plan_import(rfp=rfp, vendor=vendor_a_org, data=data, actor=buyer)

    assert set(paths(refused)) == {"rfp", "vendor"}
    assert plan_draft(rfp, vendor_a_org) is None


def test_plan_import_refuses_a_vendor_not_invited(
    rfp: Rfp, outsider: Any, buyer: Any
) -> None:
    stranger = outsider.memberships.get().organisation

    with pytest.raises(GatesError) as refused:
        plan_import(rfp=rfp, vendor=stranger, data=b"{}", actor=buyer)

    assert refused.value.code == "not_invited"
