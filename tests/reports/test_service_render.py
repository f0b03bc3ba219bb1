"""The report task end to end with the real renderer and signers: a benchmark
report and a certificate come out PAdES-signed (``pdfsig`` agrees, with a local
TSA's timestamp when one is configured), stated (the in-toto statement verifies
with the served key and names the PDF, the evaluation and the plan), deposited in
escrow with the leaf the evidence package reads, with one audit row per state
change; a redelivered message renders nothing; a TSA that does not answer fails
the report with its reason and a retry succeeds; keys are never made again once
a report exists; the fixity check finds a changed digest and a deleted row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent
from artifacts.models import Deposit, FixityFinding
from artifacts.storage.blobs import blob_open
from gates.lib.signing.pki import signer_load_or_create
from gates.lib.signing.statement import statement_open
from gates.models import Decision, Evaluation, GatePlan, Report
from gates.selectors.fixity import report_findings
from gates.selectors.reports import report_statement_public_key_pem
from gates.services.report_pdf import count_pages
from gates.services.reports import KEYS_MISSING, report_generate, report_request
from tests.gates.support import PASS
from tests.reports.pdfsig import has_timestamp, nss_db, pdfsig
from tests.reports.tsa import LocalTsa
from tests.reports.tsa import tsa as tsa

pytestmark = pytest.mark.django_db
S = Report.Status


def _read(blob: Any) -> bytes:
    with blob_open(blob) as handle:
        data: bytes = handle.read()
    return data


def _actions(report: Report) -> list[str]:
    rows = AuditEvent.objects.filter(
        target_id=str(report.pk), action__startswith="report."
    )
    return list(rows.order_by("id").values_list("action", flat=True))


def _generated(report: Report) -> Report:
    done = report_generate(report_id=report.pk)
    assert done is not None
    return done


def test_a_report_is_rendered_signed_stated_and_deposited(
    passed: Evaluation, chromium: None, report_keys: Path, tmp_path: Path
) -> None:
    report = Report.objects.get(evaluation=passed)

    done = _generated(report)

    assert done.status == S.READY, done.error
    assert (done.progress_pct, done.progress_step, done.attempts) == (100, "Ready", 1)
    pdf, envelope = _read(done.pdf_blob), _read(done.statement_blob)
    assert pdf.startswith(b"%PDF-")
    assert done.pages == count_pages(pdf) >= 1
    assert done.timestamped is False
    signer = signer_load_or_create(report_keys, create=False)
    assert done.signer_fingerprint == signer.fingerprint
    # pdfsig: valid, trusted once the installation's CA is, the whole file signed
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    assert signer.ca_pem is not None
    checked = pdfsig(path, nss_db(tmp_path, [signer.ca_pem]))
    assert checked["valid"], checked["output"]
    assert checked["trusted"], checked["output"]
    assert checked["total_document_signed"], checked["output"]
    # the statement
    key = report_statement_public_key_pem()
    assert key is not None
    statement = statement_open(envelope, key)
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects == {
        "report.pdf": done.pdf_sha256,
        "evaluation.json": passed.evaluation_sha256,
    }
    predicate = statement["predicate"]
    assert predicate["result"] == "PASSED"
    assert predicate["passedTests"] == ["ttft-p99-cold-c1"]
    configuration = {
        c["name"]: c["digest"]["sha256"] for c in predicate["configuration"]
    }
    assert configuration["plan.json"] == passed.plan_sha256
    assert configuration["bundle"] == passed.campaign.bundle.sha256
    # the deposit
    deposit = done.deposit
    assert deposit is not None
    assert deposit.kind == Deposit.Kind.REPORT
    assert deposit.organisation_id == passed.rfp.buyer_organisation_id
    leaf = json.loads(bytes(deposit.leaf))
    assert leaf["report"] == str(done.public_id)
    assert leaf["report_kind"] == "evaluation"
    assert leaf["evaluation"] == str(passed.public_id)
    assert leaf["bundle"] == str(passed.campaign.bundle.public_id)
    assert (leaf["pdf_sha256"], leaf["statement_sha256"]) == (
        done.pdf_sha256,
        done.statement_sha256,
    )
    assert leaf["evaluation_sha256"] == passed.evaluation_sha256
    assert {b["path"]: b["sha256"] for b in leaf["blobs"]} == {
        "report.pdf": done.pdf_sha256,
        "statement.json": done.statement_sha256,
    }
    # one audit row per state change; the deposit's is the ready one
    assert _actions(done) == ["report.requested", "report.rendering", "report.ready"]
    ready = AuditEvent.objects.get(action="report.ready")
    assert ready.data["deposit"] == str(deposit.public_id)
    assert (ready.data["from"], ready.data["to"]) == ("rendering", "ready")
    assert not AuditEvent.objects.filter(action="deposit.created", data__kind="report")

    # redelivered: nothing rendered, deposited or audited again
    again = _generated(report)

    assert again.status == S.READY
    assert again.deposit_id == deposit.pk
    assert Deposit.objects.filter(kind=Deposit.Kind.REPORT).count() == 1
    assert _actions(done) == ["report.requested", "report.rendering", "report.ready"]
    assert report_request(evaluation=passed, actor=None).pk == report.pk
    assert list(report_findings()) == []


def test_fixity_finds_a_changed_digest_and_a_deleted_report(
    passed: Evaluation, chromium: None
) -> None:
    done = _generated(Report.objects.get(evaluation=passed))
    rows = Report.objects.filter(pk=done.pk)

    rows.update(pdf_sha256="0" * 64)
    [altered] = report_findings()

    assert altered.kind == FixityFinding.Kind.ROW_ALTERED
    assert "pdf_sha256" in altered.detail
    assert "0" * 64 not in altered.detail  # names fields, never values
    assert altered.log_index == done.deposit.log_index

    rows.delete()
    [missing] = report_findings()

    assert missing.kind == FixityFinding.Kind.ROW_MISSING
    assert missing.log_index == done.deposit.log_index


def test_keys_are_not_made_again_once_a_report_exists(
    passed: Evaluation,
    evaluate: Any,
    frozen_plan: GatePlan,
    chromium: None,
    report_keys: Path,
) -> None:
    assert _generated(Report.objects.get(evaluation=passed)).status == S.READY
    shutil.rmtree(report_keys)  # the key directory is lost
    second = Report.objects.get(evaluation=evaluate(frozen_plan, PASS))

    failed = _generated(second)

    assert failed.status == S.FAILED
    assert failed.error == KEYS_MISSING
    assert not report_keys.exists()  # no new key contradicting the old reports
    assert report_statement_public_key_pem() is None


def test_a_certificate_is_timestamped_by_the_configured_tsa(
    promoted: Decision, tsa: LocalTsa, settings: Any, tmp_path: Path
) -> None:
    settings.REPROGATE_REPORT_TSA_URL = tsa.url
    certificate = Report.objects.get(decision=promoted)

    done = _generated(certificate)

    assert done.status == S.READY, done.error
    assert done.timestamped is True
    path = tmp_path / "certificate.pdf"
    path.write_bytes(_read(done.pdf_blob))
    assert has_timestamp(path)
    leaf = json.loads(bytes(done.deposit.leaf))
    assert (leaf["report_kind"], leaf["decision"]) == (
        "certificate",
        str(promoted.public_id),
    )


def test_a_tsa_that_does_not_answer_fails_it_and_a_retry_succeeds(
    promoted: Decision, settings: Any, buyer: Any
) -> None:
    settings.REPROGATE_REPORT_TSA_URL = "http://127.0.0.1:9/tsr"  # nothing listens
    certificate = Report.objects.get(decision=promoted)

    failed = _generated(certificate)

    assert failed.status == S.FAILED
    assert failed.error.startswith("The PDF could not be signed"), failed.error
    assert not Deposit.objects.filter(kind=Deposit.Kind.REPORT).exists()

    settings.REPROGATE_REPORT_TSA_URL = ""
    queued = report_request(
        evaluation=promoted.evaluation, actor=buyer, decision=promoted
    )
    assert (queued.pk, queued.status) == (certificate.pk, S.QUEUED)
    done = _generated(queued)

    assert done.status == S.READY, done.error
    assert done.attempts == 2
    assert _actions(done) == [
        "report.requested",
        "report.rendering",
        "report.failed",
        "report.queued",
        "report.rendering",
        "report.ready",
    ]
