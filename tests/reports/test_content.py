"""What a report says, read from a real evaluation: numbers as the evaluation
document has them, the bundle and its vendor key, the runs with their outputs'
digests and output deposits, drift, the decisions with their sign-offs, every
deposit cited with its log index and the checkpoint covering them, progress
reported between phases, and a number of queries that does not grow with the
criteria or the runs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation
from artifacts.models import Deposit, DepositBlob
from artifacts.services.escrow import deposit_create
from artifacts.services.escrow_records import DepositItem
from artifacts.services.transparency import checkpoint_publish
from benchmarks.models import Run
from gates.models import Evaluation, GatePlan
from gates.selectors.report_content import (
    certificate_context,
    evaluation_report_context,
    log_head,
    num,
)
from gates.services.decisions import decision_record, decision_second
from procurement.models import Rfp
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.benchmarks.runner.support import finish
from tests.gates.engine.support import criterion
from tests.gates.support import (  # noqa: F401
    FAIL,
    LAB,
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
    make_frozen_plan,
    plan_document,
    set_drift,
)

pytestmark = pytest.mark.django_db

SIGNER = "cd" * 32
ENVIRONMENT = {
    "hostname": "lab-07",
    "os": {"pretty_name": "Debian 12"},
    "kernel": {"release": "6.1.0-28"},
    "cpu": {"model": "EPYC 9454"},
    "gpus": [{"model": "H100"}, {"name": "H100"}, "junk"],
}


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (171.0, "171.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e-07, "1e-07"),
        (1.2e21, "1.2e+21"),
        (180, "180"),
        (0, "0"),
        (None, "—"),
        (True, "true"),
    ],
)
def test_numbers_are_printed_as_the_json_document_has_them(
    value: Any, printed: str
) -> None:
    assert num(value) == printed


def _plan(rfp: Rfp, vendor: Organisation, buyer: Any, n: int) -> GatePlan:
    criteria = [
        criterion(id=f"ttft-{i}", scenario="cold-c1", band={"pct": 10 + i})
        for i in range(n)
    ]
    doc = plan_document(rfp.reference, vendor.slug, criteria=criteria)
    return make_frozen_plan(rfp, vendor, buyer, doc, version=n)


def _queries(evaluation: Evaluation) -> int:
    with CaptureQueriesContext(connection) as queries:
        evaluation_report_context(evaluation, signer_fingerprint=SIGNER, charts=False)
    return len(queries.captured_queries)


def test_the_queries_do_not_grow_with_criteria_or_runs(
    rfp: Rfp,
    vendor_a_org: Organisation,
    buyer: Any,
    evaluate: Any,
    gate_campaign: Any,  # noqa: F811
) -> None:
    first = _plan(rfp, vendor_a_org, buyer, 1)
    small = evaluate(first, PASS)
    GatePlan.objects.filter(pk=first.pk).update(status=GatePlan.Status.SUPERSEDED)
    big_plan = _plan(rfp, vendor_a_org, buyer, 4)
    big = evaluate(big_plan, [*PASS, *PASS], campaign=gate_campaign(6))
    assert len(json.loads(big.evaluation_document)["criteria"]) == 4
    assert Run.objects.filter(campaign=big.campaign).count() == 12

    assert _queries(big) == _queries(small)
    assert _queries(small) <= 11  # with the gate's disputes


def test_the_report_names_the_bundle_runs_outputs_and_every_deposit(
    rfp: Rfp,
    vendor_a_org: Organisation,
    buyer: Any,
    evaluate: Any,
    gate_campaign: Any,  # noqa: F811
) -> None:
    campaign = gate_campaign(3)
    run = campaign.runs.get(scenario_name="cold-c1", repetition=2)
    output = b'{"metrics": []}'
    finish(run, outputs={"metrics.json": output})
    blob = run.outputs.get().blob
    deposit = deposit_create(
        kind=Deposit.Kind.RUN_OUTPUT,
        organisation=campaign.pool.lab_organisation,
        rfp=campaign.rfp,
        items=[DepositItem(blob, DepositBlob.Role.OUTPUT, "metrics.json")],
        actor=None,
        bundle=campaign.bundle,
        extra={"run": str(run.public_id)},
    )
    Run.objects.filter(pk=run.pk).update(output_deposit=deposit)
    first = campaign.runs.get(scenario_name="cold-c1", repetition=1)
    set_drift(first, "minor")
    Run.objects.filter(pk=first.pk).update(environment=ENVIRONMENT)
    plan = make_frozen_plan(rfp, vendor_a_org, buyer)
    evaluation = evaluate(plan, PASS, campaign=campaign)

    context = evaluation_report_context(
        evaluation, signer_fingerprint=SIGNER, charts=False
    )

    bundle = campaign.bundle
    assert context["bundle"]["archive_sha256"] == bundle.archive_blob.sha256
    assert context["bundle"]["manifest_sha256"] == bundle.manifest_sha256
    assert context["bundle"]["key_fingerprint"] == bundle.signing_key.fingerprint
    lines = {r.id: r for r in context["runs"]}
    line = lines[str(run.public_id)]
    assert line.output_log_index == deposit.log_index
    assert [(o.path, o.sha256) for o in line.outputs] == [
        ("metrics.json", hashlib.sha256(output).hexdigest())
    ]
    assert line.counted
    assert [r.drift for r in context["drifted_runs"]] == ["minor"]
    host = lines[str(first.public_id)]
    assert (host.host, host.os, host.kernel) == ("lab-07", "Debian 12", "6.1.0-28")
    assert (host.cpu, host.gpus) == ("EPYC 9454", "H100, H100")
    assert context["drifted_runs"][0].drift_entries[0]["captured"] == "6.1"
    cited = {d.what: d.log_index for d in context["deposits"]}
    bundle_deposit = Deposit.objects.get(kind=Deposit.Kind.BUNDLE, bundle=bundle)
    assert cited == {
        "The bundle": bundle_deposit.log_index,
        "Run outputs": deposit.log_index,
        "This evaluation": evaluation.deposit.log_index,
    }
    assert context["log"].covers
    assert context["log"].size > max(cited.values())
    assert context["signer_fingerprint"] == SIGNER
    assert context["evaluation"]["evaluation_sha256"] == evaluation.evaluation_sha256


def test_the_log_head_is_the_signed_checkpoint_once_one_covers_the_deposits(
    frozen_plan: GatePlan,  # noqa: F811
    evaluate: Any,
) -> None:
    evaluation = evaluate(frozen_plan, PASS)
    index = evaluation.deposit.log_index

    unsigned = log_head([index])
    checkpoint = checkpoint_publish()
    signed = log_head([index])

    assert (unsigned.signed, unsigned.covers) == (False, True)
    assert unsigned.root_hash == bytes(checkpoint.root_hash).hex()
    assert (signed.signed, signed.covers, signed.size) == (True, True, checkpoint.size)
    assert signed.origin == checkpoint.origin
    assert signed.note == checkpoint.note
    beyond = log_head([checkpoint.size])  # an index no tree has yet
    assert (beyond.signed, beyond.covers) == (False, False)


def test_every_criterion_line_is_the_documents(
    frozen_plan: GatePlan,  # noqa: F811
    evaluate: Any,
) -> None:
    evaluation = evaluate(frozen_plan, FAIL)

    context = evaluation_report_context(
        evaluation, signer_fingerprint=SIGNER, charts=False
    )

    (line,) = context["criteria"]
    (done,) = json.loads(evaluation.evaluation_document)["criteria"]
    assert (line.id, line.verdict, line.reason) == (
        done["id"], done["verdict"], done["reason"],
    )  # fmt: skip
    assert (line.estimate, line.limit) == (num(done["estimate"]), num(done["limit"]))
    assert (line.ci_low, line.ci_high) == tuple(num(v) for v in done["ci"])
    assert (line.claim, line.band, line.unit) == ("180.0", "10 %", "ms")
    assert line.figure is not None
    assert line.figure["data"][0]["y"] == FAIL  # the criterion page's figure
    assert line.svg is None
    assert [s.id for s in context["stop_loss"]] == ["env-drift", "failed-run"]
    assert context["show_toc"]


def test_progress_is_reported_between_phases_and_decisions_are_listed(
    frozen_plan: GatePlan,  # noqa: F811
    evaluate: Any,
    buyer: Any,
) -> None:
    earlier = evaluate(frozen_plan, FAIL)
    hold = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Misses p99.", actor=buyer
    )
    evaluation = evaluate(frozen_plan, PASS)
    steps: list[tuple[int, str]] = []

    context = evaluation_report_context(
        evaluation,
        signer_fingerprint=SIGNER,
        progress=lambda pct, step: steps.append((pct, step)),
        charts=False,
    )

    pcts = [pct for pct, _ in steps]
    assert len(steps) >= 4
    assert pcts == sorted(pcts)
    assert all(0 <= pct <= 100 for pct in pcts)
    assert "Drawing the charts" not in [step for _, step in steps]
    (line,) = context["decisions"]
    assert hold.evaluation_id == earlier.pk
    assert (line.kind, line.rationale, line.decided_by) == (
        "Hold", "Misses p99.", "buyer",
    )  # fmt: skip
    assert line.log_index == str(hold.log_index)
    assert not line.on_this_evaluation


def test_the_certificate_context_has_both_sign_offs_and_the_decision_entry(
    frozen_plan: GatePlan,  # noqa: F811
    evaluate: Any,
    buyer: Any,
    evaluator: Any,
) -> None:
    evaluation = evaluate(frozen_plan, PASS)
    pending = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Meets.", actor=buyer
    )
    decision = decision_second(decision=pending, actor=evaluator, note="Agreed.")
    steps: list[int] = []

    context = certificate_context(
        decision, signer_fingerprint=SIGNER, progress=lambda pct, _: steps.append(pct)
    )

    line = context["decision"]
    assert (line.kind, line.decided_by, line.second_by) == (
        "Promote", "buyer", "evaluator",
    )  # fmt: skip
    assert line.second_note == "Agreed."
    assert line.log_index == str(decision.log_index)
    assert line.on_this_evaluation
    assert context["evaluation"]["public_id"] == str(evaluation.public_id)
    assert [c.id for c in context["criteria"]] == ["ttft-p99-cold-c1"]
    assert context["log"].covers
    assert steps == sorted(steps)
    assert steps
