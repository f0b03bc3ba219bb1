"""The fixity source gates gives the escrow check
(``artifacts.services.fixity.sources``): every evaluation row against its
escrow deposit, so a later edit of a stored document, digest or verdict is
found by the daily check (the deposit's leaf and blobs are checked against
the log and their digests by artifacts itself).

An evaluation is reported (``row.altered``) when a document's text no longer
hashes to its SHA-256 field, a SHA-256 field is not the one its deposit's leaf
names (nor the digest of the leaf's blob of that document), its verdict is not
its evaluation document's (nor the leaf's), its deposit names another
evaluation, or it has no deposit; an evaluation deposit whose evaluation row is
gone is reported too (``row.missing``). Likewise every ready signed report
(``report_findings``): its PDF's and statement's digests against their blobs and
its deposit's leaf, and report deposits with no report row. Findings name
fields, never values (the buyer side sees them while bids are sealed), and
carry the RFP and the deposit for whose dashboards. Rows are read in chunks,
a constant number of queries per chunk."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any, Final

from artifacts.models import Deposit, FixityFinding
from artifacts.services.fixity.report import Finding
from gates.models import Evaluation, Report

Kind = FixityFinding.Kind
CHUNK: Final = 200
# each document: its text field, its digest field, its blob's path in the deposit
DOCUMENTS: Final = (
    ("plan_document", "plan_sha256", "plan.json"),
    ("results_document", "results_sha256", "results.json"),
    ("evaluation_document", "evaluation_sha256", "evaluation.json"),
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record(data: bytes) -> dict[str, Any]:
    try:
        record = json.loads(data)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _document_verdict(text: str) -> Any:
    return _record(text.encode("utf-8")).get("verdict")


def _problems(evaluation: Evaluation) -> list[str]:
    problems = [
        f"its {text} does not hash to its {digest}"
        for text, digest, _ in DOCUMENTS
        if _sha(getattr(evaluation, text)) != getattr(evaluation, digest)
    ]
    if evaluation.verdict != _document_verdict(evaluation.evaluation_document):
        problems.append("its verdict is not its evaluation document's")
    deposit = evaluation.deposit
    if deposit is None:
        return [*problems, "it has no escrow deposit"]
    leaf = _record(bytes(deposit.leaf))
    blobs = {
        b.get("path"): b.get("sha256")
        for b in leaf.get("blobs") or []
        if isinstance(b, dict)
    }
    if deposit.kind != Deposit.Kind.EVALUATION or leaf.get("evaluation") != str(
        evaluation.public_id
    ):
        problems.append("its deposit is of another evaluation")
    differing = [
        digest
        for _, digest, path in DOCUMENTS
        if not getattr(evaluation, digest) == leaf.get(digest) == blobs.get(path)
    ]
    if differing:
        problems.append(f"its {', '.join(differing)} differ from its deposit")
    if evaluation.verdict != leaf.get("verdict"):
        problems.append("its verdict differs from its deposit")
    return problems


def _evaluations() -> Iterator[Evaluation]:
    rows = (
        Evaluation.objects.select_related("rfp", "deposit")
        .only(
            "public_id",
            "verdict",
            *(field for document in DOCUMENTS for field in document[:2]),
            "rfp__reference",
            "deposit__public_id",
            "deposit__kind",
            "deposit__leaf",
            "deposit__log_index",
        )
        .order_by("id")
    )
    return rows.iterator(chunk_size=CHUNK)


def _orphans(kind: str, row: str) -> Iterator[Deposit]:
    """Deposits of ``kind`` — by their row and by their leaf — that no row points
    to (``row``: the reverse relation of the rows that should). A deposit row
    whose kind was changed is the deposit check's finding, not a missing row."""
    rows = Deposit.objects.filter(kind=kind, **{f"{row}__isnull": True})
    found = (
        rows.select_related("rfp")
        .only("public_id", "log_index", "leaf", "rfp__reference")
        .order_by("log_index")
        .iterator(chunk_size=CHUNK)
    )
    for deposit in found:
        try:
            logged = json.loads(bytes(deposit.leaf)).get("kind")
        except (ValueError, AttributeError):
            logged = None  # an unreadable leaf is the deposit check's finding
        if logged == kind:
            yield deposit


def _altered(
    subject: str, what: str, problems: list[str], deposit: Deposit | None, rfp: str
) -> Finding:
    return Finding(
        Kind.ROW_ALTERED,
        subject,
        f"The {what} row differs from its escrow deposit: " + "; ".join(problems),
        log_index=deposit.log_index if deposit is not None else None,
        rfp_reference=rfp,
        deposit=str(deposit.public_id) if deposit is not None else "",
    )


def _missing(deposit: Deposit, subject: str, deposits_what: str, row: str) -> Finding:
    return Finding(
        Kind.ROW_MISSING,
        f"{subject} deposit #{deposit.log_index}",
        f"Log entry {deposit.log_index} deposits {deposits_what} that has no "
        f"{row} row: the row was deleted.",
        log_index=deposit.log_index,
        rfp_reference=deposit.rfp.reference,
        deposit=str(deposit.public_id),
    )


def evaluation_findings() -> Iterator[Finding]:
    """Every evaluation that differs from its deposit, then every evaluation
    deposit with no evaluation (reads only)."""
    for evaluation in _evaluations():
        problems = _problems(evaluation)
        if problems:
            subject = f"evaluation {evaluation.public_id}"
            rfp = evaluation.rfp.reference
            yield _altered(subject, "evaluation", problems, evaluation.deposit, rfp)
    for deposit in _orphans(Deposit.Kind.EVALUATION, "evaluation"):
        yield _missing(deposit, "evaluation", "a gate evaluation", "evaluation")


# --- signed reports ------------------------------------------------------------
# each part: its blob field, its digest field, its path in the deposit
REPORT_PARTS: Final = (
    ("pdf_blob", "pdf_sha256", "report.pdf"),
    ("statement_blob", "statement_sha256", "statement.json"),
)


def _report_problems(report: Report) -> list[str]:
    deposit = report.deposit
    if deposit is None:
        return ["it has no escrow deposit"]
    problems = []
    leaf = _record(bytes(deposit.leaf))
    blobs = {
        b.get("path"): b.get("sha256")
        for b in leaf.get("blobs") or []
        if isinstance(b, dict)
    }
    if deposit.kind != Deposit.Kind.REPORT or leaf.get("report") != str(
        report.public_id
    ):
        problems.append("its deposit is of another report")
    for blob_field, digest, path in REPORT_PARTS:
        blob = getattr(report, blob_field)
        stored = blob.sha256 if blob is not None else None
        if not getattr(report, digest) == stored == leaf.get(digest) == blobs.get(path):
            problems.append(f"its {digest} differs from its blob or its deposit")
    return problems


def _ready_reports() -> Iterator[Report]:
    rows = (
        Report.objects.filter(status=Report.Status.READY)
        .select_related("rfp", "deposit", "pdf_blob", "statement_blob")
        .only(
            "public_id",
            "pdf_sha256",
            "statement_sha256",
            "rfp__reference",
            "pdf_blob__sha256",
            "statement_blob__sha256",
            "deposit__public_id",
            "deposit__kind",
            "deposit__leaf",
            "deposit__log_index",
        )
        .order_by("id")
    )
    return rows.iterator(chunk_size=CHUNK)


def report_findings() -> Iterator[Finding]:
    """Every ready signed report whose PDF or statement digest is not its blob's
    and its deposit's leaf's, then every report deposit with no report row
    (reads only)."""
    for report in _ready_reports():
        problems = _report_problems(report)
        if problems:
            subject, rfp = f"report {report.public_id}", report.rfp.reference
            yield _altered(subject, "signed report", problems, report.deposit, rfp)
    for deposit in _orphans(Deposit.Kind.REPORT, "report"):
        yield _missing(deposit, "report", "a signed report", "report")
