"""``gate_evaluate``: the three documents stored byte-exact (the CLI's engine
reproduces the evaluation from the stored plan and results), one criterion row
each, one escrow deposit whose leaf names the digests, one audit row; nothing
else (no obligation, no report: the verdict path's next steps); refusals for a
draft plan, an unknown gate, another vendor's campaign."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from artifacts.models import Deposit
from benchmarks.models import Campaign
from gates.exceptions import GatesConflict, GatesError
from gates.lib.engine import evaluate_plan
from gates.lib.engine.documents import evaluation_bytes
from gates.models import Evaluation, GatePlan, Report, RetestObligation
from gates.services.evaluations import gate_evaluate
from procurement.models import Rfp
from tests.gates.support import FAIL, finish_runs, make_frozen_plan, set_drift

pytestmark = pytest.mark.django_db


def test_pass_stores_the_documents_byte_exact_and_deposits_them(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign: Campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [176.2, 171.0, 178.9]})

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    assert evaluation.verdict == "PASS"
    assert evaluation.plan_document == frozen_plan.document
    replay = evaluate_plan(
        json.loads(evaluation.plan_document), json.loads(evaluation.results_document)
    )
    assert evaluation_bytes(replay[0]).decode() == evaluation.evaluation_document
    [row] = evaluation.criterion_results.all()
    assert (row.criterion, row.verdict, row.runs) == ("ttft-p99-cold-c1", "PASS", 3)
    assert row.limit == pytest.approx(198.0)
    deposit = evaluation.deposit
    assert deposit.kind == Deposit.Kind.EVALUATION
    leaf = json.loads(bytes(deposit.leaf))
    assert leaf["evaluation_sha256"] == evaluation.evaluation_sha256
    assert leaf["plan_sha256"] == evaluation.plan_sha256
    assert leaf["results_sha256"] == evaluation.results_sha256
    assert [i.path for i in deposit.items.all()] == [
        "plan.json",
        "results.json",
        "evaluation.json",
    ]
    assert AuditEvent.objects.filter(action="gate.evaluated").count() == 1


def test_a_failing_evaluation_is_recorded_and_nothing_else(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": FAIL})
    before = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    assert evaluation.verdict == "FAIL"
    assert not RetestObligation.objects.exists()
    assert not Report.objects.exists()
    [row] = AuditEvent.objects.filter(id__gt=before)
    assert (row.action, row.target_id) == ("gate.evaluated", str(evaluation.pk))
    assert row.data["deposit"] == str(evaluation.deposit.public_id)


def test_too_few_runs_is_inconclusive_with_runs_needed(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [176.2]})  # two still queued

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    assert evaluation.verdict == "INCONCLUSIVE"
    assert evaluation.more_runs_needed == 2


def test_major_drift_halts_and_is_recorded(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [176.2, 171.0, 178.9]})
    set_drift(campaign.runs.get(scenario_name="cold-c1", repetition=2), "major")

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    assert (evaluation.verdict, evaluation.max_drift) == ("HALTED", "major")
    assert evaluation.stop_loss_triggered


def test_a_draft_plan_is_not_evaluated(
    rfp: Rfp, vendor_a_org: Organisation, gate_campaign: Any, buyer: Any
) -> None:
    plan = make_frozen_plan(rfp, vendor_a_org, buyer)
    GatePlan.objects.filter(pk=plan.pk).update(
        status=GatePlan.Status.DRAFT, frozen_at=None, frozen_by=None
    )
    plan.refresh_from_db()

    with pytest.raises(GatesConflict, match="freeze the draft"):
        gate_evaluate(
            plan=plan, gate="lab-validation", campaign=gate_campaign(1), actor=buyer
        )
    assert not Evaluation.objects.exists()


def test_unknown_gate_and_another_vendors_plan_are_refused(
    rfp: Rfp, frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(1)
    with pytest.raises(GatesError, match="no gate named 'canary'"):
        gate_evaluate(plan=frozen_plan, gate="canary", campaign=campaign, actor=buyer)
    other = Organisation.objects.create(
        slug="vendor-z", name="Z", kind=Organisation.Kind.VENDOR
    )
    plan_z = make_frozen_plan(rfp, other, buyer)
    with pytest.raises(GatesError, match="another vendor's bundle"):
        gate_evaluate(
            plan=plan_z, gate="lab-validation", campaign=campaign, actor=buyer
        )
    assert not Evaluation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_evaluating_outside_a_transaction_is_one_transaction_of_its_own(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    """The API calls the service with no transaction open (no ATOMIC_REQUESTS)."""
    from django.db import transaction

    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [176.2, 171.0, 178.9]})
    assert not transaction.get_connection().in_atomic_block

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    assert Evaluation.objects.get().pk == evaluation.pk
    assert AuditEvent.objects.filter(action="gate.evaluated").count() == 1
