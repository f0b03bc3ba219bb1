"""Fixity of gate evaluations: a real evaluation (``gate_judge``) leaves
``escrow_verify`` intact; an edit of its row afterwards (a document's text, a
digest, the verdict, its deposit link, the row deleted) is found as one
finding naming the evaluation, in the buyer's trail, naming fields and never
values; the reads are batched; and the check is a source gates registers, so
artifacts runs without it."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.lib.registry import RegistryError
from accounts.models import AuditEvent, Organisation
from artifacts.models import FixityFinding, FixityRun
from artifacts.services.fixity.report import Finding
from artifacts.services.fixity.run import fixity_check
from artifacts.services.fixity.sources import fixity_sources
from gates.models import Evaluation, GatePlan
from gates.selectors.fixity import evaluation_findings
from procurement.models import Rfp
from tests.gates.support import (  # noqa: F401 (fixtures)
    PASS,
    evaluate_fixture,
    gate_bundle,
    gate_campaign,
    make_frozen_plan,
)

pytestmark = pytest.mark.django_db
SOURCE = "gates.evaluations"


@pytest.fixture
def plan(rfp: Rfp, vendor_a_org: Organisation, buyer: Any) -> GatePlan:
    return make_frozen_plan(rfp, vendor_a_org, buyer)


@pytest.fixture
def evaluation(evaluate: Any, plan: GatePlan) -> Evaluation:
    return evaluate(plan, PASS)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _row(evaluation: Evaluation) -> Any:
    return Evaluation.objects.filter(pk=evaluation.pk)


def _altered(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.kind == FixityFinding.Kind.ROW_ALTERED]


def test_a_real_evaluation_leaves_escrow_verify_intact(
    evaluation: Evaluation,
) -> None:
    out = io.StringIO()

    call_command("escrow_verify", stdout=out)  # raises on any finding

    assert FixityRun.objects.get().intact, out.getvalue()
    assert "Escrow is intact" in out.getvalue()
    assert list(evaluation_findings()) == []


def _document_text(e: Evaluation) -> dict[str, Any]:
    return {"evaluation_document": e.evaluation_document + "\n"}


def _plan_text(e: Evaluation) -> dict[str, Any]:
    return {"plan_document": e.plan_document.replace("cold-c1", "warm-c1")}


def _results_text(e: Evaluation) -> dict[str, Any]:
    return {"results_document": e.results_document.replace("cold-c1", "warm-c1")}


def _sha_only(e: Evaluation) -> dict[str, Any]:
    return {"results_sha256": "0" * 64}


def _text_and_sha(e: Evaluation) -> dict[str, Any]:
    """A careful edit: the document and its digest changed together."""
    text = e.evaluation_document.replace('"PASS"', '"FAIL"')
    return {"evaluation_document": text, "evaluation_sha256": _sha(text)}


def _verdict(e: Evaluation) -> dict[str, Any]:
    return {"verdict": "FAIL"}


def _no_deposit(e: Evaluation) -> dict[str, Any]:
    return {"deposit": None}


EDITS: dict[str, tuple[Callable[[Evaluation], dict[str, Any]], str]] = {
    "document text": (
        _document_text,
        "its evaluation_document does not hash to its evaluation_sha256",
    ),
    "plan text": (_plan_text, "its plan_document does not hash to its plan_sha256"),
    "results text": (
        _results_text,
        "its results_document does not hash to its results_sha256",
    ),
    "digest": (_sha_only, "its results_sha256 differ from its deposit"),
    "document and digest": (
        _text_and_sha,
        "its evaluation_sha256 differ from its deposit",
    ),
    "verdict": (_verdict, "its verdict is not its evaluation document's"),
    "deposit link": (_no_deposit, "it has no escrow deposit"),
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_an_edit_of_the_row_is_one_finding_naming_the_evaluation(
    evaluation: Evaluation, edit: str
) -> None:
    change, expected = EDITS[edit]
    changed = change(evaluation)
    assert any(getattr(evaluation, k) != v for k, v in changed.items())
    _row(evaluation).update(**changed)

    findings = _altered(fixity_check().findings.items)

    [finding] = findings
    assert finding.subject == f"evaluation {evaluation.public_id}"
    assert expected in finding.detail
    assert finding.rfp_reference == evaluation.rfp.reference
    if edit != "deposit link":
        assert finding.deposit == str(evaluation.deposit.public_id)
        assert finding.log_index == evaluation.deposit.log_index


def test_a_careful_verdict_edit_still_differs_from_the_deposit(
    evaluation: Evaluation,
) -> None:
    """Verdict, document and digest all changed together: only escrow knows."""
    change = _text_and_sha(evaluation)
    _row(evaluation).update(verdict="FAIL", **change)

    [finding] = _altered(list(evaluation_findings()))

    assert "its evaluation_sha256 differ from its deposit" in finding.detail
    assert "its verdict differs from its deposit" in finding.detail
    assert "does not hash" not in finding.detail


def test_an_unlinked_deposit_is_reported_missing_its_row(
    evaluation: Evaluation,
) -> None:
    deposit = evaluation.deposit
    _row(evaluation).update(deposit=None)

    missing = [
        f for f in evaluation_findings() if f.kind == FixityFinding.Kind.ROW_MISSING
    ]

    assert [f.subject for f in missing] == [f"evaluation deposit #{deposit.log_index}"]
    assert missing[0].deposit == str(deposit.public_id)


def test_a_deleted_evaluation_is_reported_by_its_deposit(
    evaluation: Evaluation,
) -> None:
    deposit = evaluation.deposit
    evaluation.criterion_results.all().delete()
    evaluation.reports.all().delete()  # its signed report, requested with it
    _row(evaluation).delete()

    [finding] = evaluation_findings()

    assert finding.kind == FixityFinding.Kind.ROW_MISSING
    assert finding.log_index == deposit.log_index
    assert finding.rfp_reference == evaluation.rfp.reference


def test_the_recorded_finding_is_in_the_buyers_trail_and_names_no_value(
    evaluation: Evaluation, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    _row(evaluation).update(verdict="FAIL")

    with pytest.raises(CommandError):
        call_command("escrow_verify", stdout=io.StringIO())

    finding = FixityFinding.objects.get(kind=FixityFinding.Kind.ROW_ALTERED)
    assert finding.subject == f"evaluation {evaluation.public_id}"
    assert finding.buyer_organisation == buyer_org
    assert finding.rfp_reference == evaluation.rfp.reference
    for value in ("FAIL", "PASS", vendor_a_org.slug, vendor_a_org.name):
        assert value not in finding.detail
    audit = AuditEvent.objects.get(action="escrow.fixity_finding")
    assert audit.organisation == buyer_org


def _queries() -> int:
    with CaptureQueriesContext(connection) as captured:
        assert list(evaluation_findings()) == []
    return len(captured)


def test_the_reads_do_not_grow_with_the_evaluations(
    evaluate: Any, plan: GatePlan
) -> None:
    evaluate(plan, PASS)
    one = _queries()
    for _ in range(3):
        evaluate(plan, PASS)

    assert Evaluation.objects.count() == 4
    assert _queries() == one


def test_without_the_source_artifacts_checks_no_evaluation(
    evaluation: Evaluation,
) -> None:
    _row(evaluation).update(verdict="FAIL")
    # registered by GatesConfig.ready()
    assert fixity_sources.get(SOURCE) is evaluation_findings
    with fixity_sources.swapped(None, key=SOURCE):
        assert _altered(fixity_check().findings.items) == []

    assert len(_altered(fixity_check().findings.items)) == 1


def test_a_registered_source_replaces_the_one_of_its_name_when_asked(
    db: None,
) -> None:
    extra = Finding(FixityFinding.Kind.ROW_ALTERED, "thing 1", "differs")
    assert "tests.extra" not in fixity_sources
    with fixity_sources.swapped(lambda: [extra], key="tests.extra"):
        assert extra in fixity_check().findings.items
        with pytest.raises(RegistryError, match="already registered"):
            fixity_sources.register(list, key="tests.extra")
        fixity_sources.register(list, key="tests.extra", replace=True)
        assert extra not in fixity_check().findings.items
    assert "tests.extra" not in fixity_sources
