"""``gate_evaluate``: judge one gate of a frozen plan on one campaign's runs, and
record the evaluation.

The server builds ``reprogate.results/v1`` from the campaign
(``gates.selectors.results``),
runs the Django-free engine (the same code path as ``reprogate gate evaluate``)
and keeps the three documents byte-exact, one ``CriterionResult`` per
criterion, and an escrow deposit whose leaf names the three digests; one audit
row, ``gate.evaluated``, which carries the deposit's facts. Nothing else: what
follows an evaluation (a re-test obligation raised or answered, the signed
report) is the verdict path's (``gates.services.pipeline``)."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction

from accounts.selectors import clock
from accounts.services.actor import Actor, person
from artifacts.lib.canonical import canonical_json
from artifacts.models import Deposit, DepositBlob
from artifacts.services.escrow import deposit_create
from artifacts.services.escrow_records import DepositItem
from artifacts.storage.blobs import blob_put
from benchmarks.models import Campaign
from gates.exceptions import GatesConflict, GatesError, engine_problems
from gates.lib.engine.documents import evaluation_bytes
from gates.lib.engine.evaluate import evaluate_plan
from gates.lib.engine.validate import InvalidDocument
from gates.models import CriterionResult, Evaluation, GatePlan, RetestObligation
from gates.selectors.results import baseline_for, results_document

DRIFT_ORDER = {"none": 0, "minor": 1, "major": 2}


def gate_evaluate_problems(
    *, plan: GatePlan, gate: str, campaign: Campaign
) -> list[str]:
    """Why this campaign cannot be judged against this gate (empty when it can)."""
    problems = []
    if plan.status != GatePlan.Status.FROZEN:
        problems.append(
            f"Plan v{plan.version} is {plan.get_status_display().lower()}: only "
            "the current frozen plan is evaluated (freeze the draft first)."
        )
    if gate not in plan.gate_names:
        problems.append(f"The plan has no gate named {gate!r}.")
    if campaign.rfp_id != plan.rfp_id:
        problems.append("The campaign re-ran a bundle of another RFP.")
    elif campaign.bundle.organisation_id != plan.vendor_organisation_id:
        problems.append("The campaign re-ran another vendor's bundle.")
    return problems


def gate_facts(plan: GatePlan, gate: str, campaign: Campaign) -> dict[str, Any]:
    """What the audit row of a gate's campaign names first: the RFP, the vendor,
    the gate, the plan's version and the campaign."""
    return {
        "rfp": plan.rfp.reference,
        "vendor": plan.vendor_organisation.slug,
        "gate": gate,
        "plan_version": plan.version,
        "campaign": str(campaign.public_id),
    }


@transaction.atomic
def gate_evaluate(
    *,
    plan: GatePlan,
    gate: str,
    campaign: Campaign,
    actor: Actor,
    obligation: RetestObligation | None = None,
) -> Evaluation:
    """Evaluate ``gate`` of the frozen ``plan`` on ``campaign``'s runs as they are
    now (unfinished runs are ``pending`` and not counted) and record it.
    ``obligation``: the re-test obligation this campaign answers (found from the
    campaign when not given); answering it is ``gate_judge``'s next step."""
    plan = GatePlan.objects.select_for_update().get(pk=plan.pk)
    problems = gate_evaluate_problems(plan=plan, gate=gate, campaign=campaign)
    if problems:
        conflict = plan.status != GatePlan.Status.FROZEN
        error = GatesConflict if conflict else GatesError
        raise error(" ".join(problems), code="not_evaluable")
    if obligation is None:
        obligation = _obligation_of(campaign, plan, gate)
    plan_doc = plan.plan
    results = results_document(
        campaign=campaign, baseline=baseline_for(plan_doc, campaign)
    )
    try:
        documents = evaluate_plan(plan_doc, results)
    except InvalidDocument as invalid:  # a frozen plan was validated: the results
        raise GatesError(
            "The campaign's results cannot be evaluated.",
            code="invalid_results",
            problems=engine_problems(invalid.problems),
        ) from invalid
    doc = next(d for d in documents if d["gate"] == gate)
    plan_bytes, results_bytes = canonical_json(plan_doc), canonical_json(results)
    doc_bytes = evaluation_bytes(doc)
    judged = _judged_runs(plan_doc, gate, results)
    evaluation = Evaluation.objects.create(
        plan=plan,
        rfp_id=plan.rfp_id,
        vendor_organisation_id=plan.vendor_organisation_id,
        gate=gate,
        campaign=campaign,
        verdict=doc["verdict"],
        score_pct=doc.get("score_pct"),
        plan_document=plan_bytes.decode("utf-8"),
        results_document=results_bytes.decode("utf-8"),
        evaluation_document=doc_bytes.decode("utf-8"),
        plan_sha256=_sha(plan_bytes),
        results_sha256=_sha(results_bytes),
        evaluation_sha256=_sha(doc_bytes),
        max_drift=max(
            (r["drift"] for r in judged), key=DRIFT_ORDER.__getitem__, default="none"
        ),
        stop_loss_triggered=any(s["triggered"] for s in doc["stop_loss"]),
        more_runs_needed=max(
            (
                c["more_runs_needed"]
                for c in doc["criteria"]
                if c["verdict"] == "INCONCLUSIVE"
            ),
            default=0,
        ),
        obligation=obligation,
        evaluated_by=person(actor),
        evaluated_at=clock.now(),
    )
    CriterionResult.objects.bulk_create(
        _criterion_rows(evaluation, plan_doc, gate, doc)
    )
    evaluation.deposit = _deposit(
        evaluation, actor, (plan_bytes, results_bytes, doc_bytes)
    )
    evaluation.save(update_fields=["deposit"])
    return evaluation


def _obligation_of(
    campaign: Campaign, plan: GatePlan, gate: str
) -> RetestObligation | None:
    return (
        RetestObligation.objects.filter(campaign=campaign, plan__rfp_id=plan.rfp_id)
        .filter(gate=gate)
        .order_by("-id")
        .first()
    )


def _judged_runs(
    plan_doc: dict[str, Any], gate: str, results: dict[str, Any]
) -> list[dict[str, Any]]:
    """The vendor's succeeded runs in the gate's scenarios (their drift is what
    the gate's criteria were judged on; baseline runs are not the vendor's)."""
    spec = next(g for g in plan_doc["gates"] if g["name"] == gate)
    scenarios = {c["scenario"] for c in spec["criteria"]}
    return [
        r
        for r in results["runs"]
        if r["status"] == "succeeded"
        and r["scenario"] in scenarios
        and r.get("role", "vendor") == "vendor"
    ]


def _criterion_rows(
    evaluation: Evaluation, plan_doc: dict[str, Any], gate: str, doc: dict[str, Any]
) -> list[CriterionResult]:
    spec = next(g for g in plan_doc["gates"] if g["name"] == gate)
    by_id = {c["id"]: c for c in spec["criteria"]}
    rows = []
    for position, done in enumerate(doc["criteria"]):
        c = by_id[done["id"]]
        ci = done.get("ci") or [None, None]
        rows.append(
            CriterionResult(
                evaluation=evaluation,
                position=position,
                criterion=done["id"],
                metric=c["metric"],
                stat=c["stat"],
                scenario=c["scenario"],
                direction=c["direction"],
                blocking=c["blocking"],
                verdict=done["verdict"],
                reason=done["reason"],
                claim=c.get("claim"),
                limit=done.get("limit"),
                estimate=done.get("estimate"),
                ci_low=ci[0],
                ci_high=ci[1],
                cv_pct=done.get("cv_pct"),
                runs=len(done.get("runs", [])),
                more_runs_needed=done.get("more_runs_needed", 0),
            )
        )
    return rows


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _blob(data: bytes) -> Any:
    return blob_put(data, _sha(data), len(data))


def _deposit(
    evaluation: Evaluation, actor: Actor, documents: tuple[bytes, bytes, bytes]
) -> Deposit:
    """The evaluation in escrow: its three documents (plan, results, evaluation)
    as blobs, its leaf naming the three digests (and what was judged), deposited
    by the buyer. The deposit is part of the evaluation: its audit row is the
    evaluation's one row, ``gate.evaluated`` (with the deposit's facts)."""
    role = DepositBlob.Role.DOCUMENT
    plan, campaign = evaluation.plan, evaluation.campaign
    plan_bytes, results_bytes, doc_bytes = documents
    return deposit_create(
        kind=Deposit.Kind.EVALUATION,
        organisation=plan.rfp.buyer_organisation,
        rfp=plan.rfp,
        items=[
            DepositItem(_blob(plan_bytes), role, "plan.json"),
            DepositItem(_blob(results_bytes), role, "results.json"),
            DepositItem(_blob(doc_bytes), role, "evaluation.json"),
        ],
        actor=actor,
        bundle=campaign.bundle,
        extra={
            "bundle": str(campaign.bundle.public_id),
            "evaluation": str(evaluation.public_id),
            "campaign": str(campaign.public_id),
            "gate": evaluation.gate,
            "vendor": evaluation.vendor_organisation.slug,
            "plan_version": plan.version,
            "verdict": evaluation.verdict,
            "plan_sha256": evaluation.plan_sha256,
            "results_sha256": evaluation.results_sha256,
            "evaluation_sha256": evaluation.evaluation_sha256,
        },
        action="gate.evaluated",
        target=evaluation,
        data={
            **gate_facts(plan, evaluation.gate, campaign),
            "verdict": evaluation.verdict,
            "evaluation_sha256": evaluation.evaluation_sha256,
        },
    )
