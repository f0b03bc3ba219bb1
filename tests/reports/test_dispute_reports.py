"""Signed reports list the gate's disputes and their outcomes: the benchmark
report of a contested FAIL names the vendor's reason, the buyer's answer and the
buyer-funded re-test; the acceptance certificate of a later promotion names the
rejected dispute of the earlier verdict (read back with ``pdftotext``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gates.models import GatePlan
from gates.selectors.report_content import (
    certificate_context,
    evaluation_report_context,
)
from gates.services.decisions import decision_record, decision_second
from gates.services.disputes import dispute_open, dispute_reject, dispute_uphold
from gates.services.report_pdf import render_pdf
from tests.gates.support import FAIL, LAB, PASS
from tests.reports.test_render import FINGERPRINT, flat, pdftotext

pytestmark = pytest.mark.django_db

REASON = "The lab ran cold-c1 with a warm page cache."


def test_the_report_of_a_contested_fail_lists_the_dispute_and_its_retest(
    frozen_plan: GatePlan, evaluate: Any, vendor_a: Any, buyer: Any, tmp_path: Path
) -> None:
    failed = evaluate(frozen_plan, FAIL)
    dispute = dispute_open(evaluation=failed, reason=REASON, actor=vendor_a)
    upheld = dispute_uphold(dispute=dispute, actor=buyer, reason="Agreed: re-run.")
    assert upheld.retest is not None

    context = evaluation_report_context(
        failed, signer_fingerprint=FINGERPRINT, charts=False
    )
    text = flat(
        pdftotext(render_pdf("gates/reports/evaluation.html", context), tmp_path)
    )

    assert ("disputes", "Disputes") in context["toc"]
    assert "Dispute of the FAIL" in text
    assert REASON in text
    assert "Upheld by buyer" in text
    assert "Agreed: re-run." in text
    assert str(upheld.retest.public_id) in text
    assert str(dispute.public_id) in text


def test_the_certificate_lists_the_rejected_dispute_of_an_earlier_verdict(
    frozen_plan: GatePlan,
    evaluate: Any,
    vendor_a: Any,
    buyer: Any,
    evaluator: Any,
    tmp_path: Path,
) -> None:
    failed = evaluate(frozen_plan, FAIL)
    dispute = dispute_open(evaluation=failed, reason=REASON, actor=vendor_a)
    dispute_reject(dispute=dispute, actor=buyer, reason="The capture shows it cold.")
    evaluate(frozen_plan, PASS)
    pending = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Meets.", actor=buyer
    )
    decision = decision_second(decision=pending, actor=evaluator)

    context = certificate_context(decision, signer_fingerprint=FINGERPRINT)
    text = flat(
        pdftotext(render_pdf("gates/reports/certificate.html", context), tmp_path)
    )

    assert "Disputes" in text
    assert "Rejected by buyer" in text
    assert "The capture shows it cold." in text
    assert "(another evaluation)" in text


def test_a_report_without_disputes_has_no_disputes_section(
    frozen_plan: GatePlan, evaluate: Any
) -> None:
    context = evaluation_report_context(
        evaluate(frozen_plan, PASS), signer_fingerprint=FINGERPRINT, charts=False
    )

    assert context["disputes"] == []
    assert ("disputes", "Disputes") not in context["toc"]
