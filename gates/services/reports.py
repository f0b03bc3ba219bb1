"""Signed reports (docs/reports.md): a benchmark report per gate evaluation, an
acceptance certificate per recorded promotion.

- ``report_request``: idempotent; creates the row (``report.requested``) or
  queues a failed one again, and enqueues the rendering task on commit;
- ``report_transition``: the one way a report's status changes
  (``REPORT_TRANSITIONS``, one audit row ``report.<status>``);
- ``report_generate`` (the task's): claims a queued report (a redelivered
  message never renders twice), then, outside any transaction, renders the PDF,
  PAdES-signs it, signs the in-toto statement, stores both as blobs, and in one
  transaction deposits them in escrow and makes the report ready (the deposit's
  audit row ``report.ready`` is that change's one row). Any failure makes it
  ``failed`` with a readable reason; a user may request it again;
- ``reports_reap`` (beat): a report whose worker was lost mid-render (rendering
  past the lease) is queued again, or failed after ``REPORT_MAX_ATTEMPTS``; a
  queued one whose message was lost (a broker down at the request) is sent again;
- ``report_download`` / ``report_download_record``: a download's bytes and its
  audit row.

The installation's keys are created on first use and never again once a report
is ready: a missing key then fails the report, telling the operator to restore
the key directory."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from celery import current_app
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q

from accounts.exceptions import InvalidTransition
from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from accounts.services.transitions import transition, transition_check
from artifacts.lib.transparency.keyfile import LogKeyError, load_private_key
from artifacts.models import Deposit, DepositBlob
from artifacts.services.escrow import deposit_create
from artifacts.services.escrow_records import DepositItem
from artifacts.storage.blobs import blob_put
from gates.conf import ReportSettings, report_settings
from gates.exceptions import GatesConflict
from gates.models import (
    REPORT_TRANSITIONS,
    CriterionResult,
    Decision,
    Evaluation,
    Report,
)

logger = logging.getLogger(__name__)
# the rendering task's name (``gates.tasks.report_generate_task``)
GENERATE_TASK: Final = "gates.report_generate"
K, S = Report.Kind, Report.Status
REASONS: Final = {
    K.EVALUATION: "ReproGate benchmark report",
    K.CERTIFICATE: "ReproGate acceptance certificate",
}
TEMPLATES: Final = {
    K.EVALUATION: "gates/reports/evaluation.html",
    K.CERTIFICATE: "gates/reports/certificate.html",
}
# the deposit's paths and the statement's subject (docs/reports.md), either kind
PDF_PATH, STATEMENT_PATH = "report.pdf", "statement.json"
KEYS_MISSING: Final = (
    "The installation's report signing keys are missing or unreadable, and "
    "signed reports exist already: keys are never made again once reports are "
    "signed. The operator must restore the report key directory from its backup, "
    "then request the report again."
)
ERROR_MAX: Final = 500
# The reaper: a rendering attempt older than this lost its worker (the task's soft
# time limit is 300 s), and a queued report older than this lost its message.
RENDER_LEASE: Final = timedelta(minutes=10)
REPORT_MAX_ATTEMPTS: Final = 3
WORKER_LOST: Final = (
    "The worker rendering the report stopped {attempts} times before it was done."
)
# an absolute file path in an error message (not a URL's path): never shown
_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.@+-]+/)+[\w.@+-]*")


def _facts(report: Report) -> dict[str, Any]:
    """What every audit row of a report names."""
    evaluation = report.evaluation
    facts: dict[str, Any] = {
        "rfp": report.rfp.reference,
        "vendor": report.vendor_organisation.slug,
        "report": str(report.public_id),
        "report_kind": report.kind,
        "evaluation": str(evaluation.public_id),
        "gate": evaluation.gate,
        "verdict": evaluation.verdict,
    }
    if report.decision is not None:
        facts["decision"] = str(report.decision.public_id)
    return facts


def _refused(report: Report, to: str) -> InvalidTransition:
    """The refusal of a move ``REPORT_TRANSITIONS`` does not allow, in words."""
    refused = InvalidTransition(entity="report", current=report.status, requested=to)
    refused.message = (
        f"The report is {report.get_status_display().lower()}: it cannot "
        f"become {Report.Status(to).label.lower()}."
    )
    return refused


@transaction.atomic
def report_transition(
    report: Report,
    to: str,
    actor: Actor,
    *,
    fields: tuple[str, ...] = (),
    **facts: Any,
) -> Report:
    """Move ``report`` (locked by the caller) to ``to`` through ``transition``
    (``REPORT_TRANSITIONS``), saving ``fields`` set with it; one audit row
    ``report.<to>`` in the buyer's trail."""
    return transition(
        report,
        to,
        actor=actor,
        table=REPORT_TRANSITIONS,
        entity="report",
        action=f"report.{to}",
        fields={name: getattr(report, name) for name in fields},
        organisation=report.rfp.buyer_organisation,
        data={**_facts(report), **facts},
        refused=lambda: _refused(report, to),
    )


def _generate_send(report_id: int) -> None:
    """Send the rendering task its message, by the task's name: ``gates.tasks``
    imports this module, never the reverse."""
    current_app.send_task(GENERATE_TASK, args=(report_id,))


def _enqueue(report: Report) -> None:
    pk = report.pk
    # robust: a broker that is down leaves the report queued (a request again
    # enqueues it again), never fails the evaluation or decision that asked
    transaction.on_commit(lambda: _generate_send(pk), robust=True)


def _certified(decision: Decision) -> Decision:
    decision = (
        Decision.objects.select_for_update(of=("self",))
        .select_related("evaluation")
        .get(pk=decision.pk)
    )
    if decision.kind != Decision.Kind.PROMOTE or decision.status != (
        Decision.Status.RECORDED
    ):
        raise GatesConflict(
            "Only a recorded promotion has an acceptance certificate; this decision "
            f"({decision.get_kind_display().lower()}) is "
            f"{decision.get_status_display().lower()}.",
            code="not_certifiable",
        )
    return decision


@transaction.atomic
def report_request(
    *, evaluation: Evaluation, actor: Actor, decision: Decision | None = None
) -> Report:
    """The evaluation's benchmark report (``decision``: the recorded promotion's
    acceptance certificate), requested: the live one if there is one (queued
    again for rendering if it is queued), a failed one queued again, else a new
    one. The task renders it after commit."""
    if decision is not None:
        decision = _certified(decision)
        evaluation = decision.evaluation
    # one request at a time per evaluation (the unique constraints back it)
    evaluation = (
        Evaluation.objects.select_for_update(of=("self",))
        .select_related("rfp__buyer_organisation", "vendor_organisation")
        .get(pk=evaluation.pk)
    )
    kind = K.CERTIFICATE if decision is not None else K.EVALUATION
    found = (
        Report.objects.select_for_update()
        .filter(kind=kind, evaluation=evaluation, decision=decision)
        .order_by("-id")
        .first()
    )
    if found is not None and found.status in (S.READY, S.RENDERING):
        return found
    if found is not None and found.status == S.QUEUED:
        _enqueue(found)  # its message may have been lost: claiming is idempotent
        return found
    now = clock.now()
    if found is not None:  # failed: again
        found.requested_by, found.requested_at = person(actor), now
        found.progress_pct, found.progress_step, previous = 0, "", found.error
        found.error, found.finished_at = "", None
        fields = ("requested_by", "requested_at", "progress_pct", "progress_step")
        report_transition(
            found, S.QUEUED, actor, fields=(*fields, "error", "finished_at"),
            previous_error=previous, attempts=found.attempts,
        )  # fmt: skip
        _enqueue(found)
        return found
    report = Report.objects.create(
        kind=kind,
        evaluation=evaluation,
        decision=decision,
        rfp=evaluation.rfp,
        vendor_organisation=evaluation.vendor_organisation,
        status=S.QUEUED,
        requested_by=person(actor),
        requested_at=now,
    )
    audit_record(
        actor=actor,
        action="report.requested",
        target=report,
        organisation=evaluation.rfp.buyer_organisation,
        data={**_facts(report), "automatic": person(actor) is None},
    )
    _enqueue(report)
    return report


# --- generation (the task) ---------------------------------------------------


@dataclass(frozen=True)
class _Produced:
    pdf: bytes
    statement: bytes
    pages: int
    timestamped: bool
    signer_fingerprint: str


def _loaded(report_id: int) -> Report | None:
    return (
        Report.objects.select_related(
            "evaluation__plan",
            "evaluation__campaign__bundle__archive_blob",
            "decision",
            "rfp__buyer_organisation",
            "vendor_organisation",
        )
        .filter(pk=report_id)
        .first()
    )


def _claim(report_id: int) -> tuple[Report | None, bool]:
    """Lock the report and, if queued, make it rendering (attempts + 1); whether
    this call claimed it."""
    with transaction.atomic():
        locked = Report.objects.select_for_update().filter(pk=report_id).first()
        if locked is None or locked.status != S.QUEUED:
            return locked, False
        report = _loaded(report_id) or locked  # with its relations
        report.attempts += 1
        report.progress_pct, report.progress_step = 1, "Starting"
        report.claimed_at = clock.now()
        fields = ("attempts", "progress_pct", "progress_step", "claimed_at")
        report_transition(
            report, S.RENDERING, None, fields=fields, attempt=report.attempts
        )
        return report, True


def report_generate(*, report_id: int) -> Report | None:
    """Render, sign and deposit the report ``report_id`` if it is queued (the
    task's call; None if there is no such report). Anything else is returned as
    it is: a redelivered message never renders twice."""
    report, claimed = _claim(report_id)
    if report is None or not claimed:
        return report
    try:
        produced = _produce(report)
        return _ready_transition(report, produced)
    except Exception as error:  # every failure is the report's, with a reason
        if not _expected(error):
            logger.exception("report %s failed", report.public_id)
        return _fail(report_id, failure_reason(error))


def _progress(report: Report) -> Callable[[int, str], None]:
    def record(pct: int, step: str) -> None:
        pct = max(0, min(99, int(pct)))
        Report.objects.filter(pk=report.pk).update(
            progress_pct=pct, progress_step=step[:120]
        )

    return record


def _signed_reports_exist() -> bool:
    return Report.objects.filter(status=S.READY).exists()


def report_signer(conf: ReportSettings) -> Any:
    """The installation's report signer: its own when the settings name one,
    else the local one in the key directory (made only while no report is
    ready)."""
    from gates.lib.signing.pki import signer_load, signer_load_or_create

    if conf.signer is not None:
        return signer_load(conf.signer, conf.signer_key, conf.signer_password)
    return signer_load_or_create(conf.keys_dir, create=not _signed_reports_exist())


def report_statement_key(conf: ReportSettings) -> Ed25519PrivateKey:
    """The Ed25519 key of the in-toto statements (made only while no report is
    ready)."""
    return load_private_key(conf.statement_key_path, create=not _signed_reports_exist())


def _verdict_lists(evaluation: Evaluation) -> tuple[list[str], list[str], list[str]]:
    rows = list(
        CriterionResult.objects.filter(evaluation=evaluation)
        .order_by("position")
        .values_list("criterion", "verdict")
    )
    passed = [c for c, v in rows if v == "PASS"]
    warned = [c for c, v in rows if v == "WARN"]
    failed = [c for c, v in rows if v not in ("PASS", "WARN")]
    return passed, warned, failed


def _statement(report: Report, pdf_sha256: str) -> dict[str, Any]:
    from gates.lib.signing.statement import statement_result, test_result_statement

    evaluation = report.evaluation
    bundle = evaluation.campaign.bundle
    archive = bundle.archive_blob
    passed, warned, failed = _verdict_lists(evaluation)
    return test_result_statement(
        subjects=[
            (PDF_PATH, pdf_sha256),
            ("evaluation.json", evaluation.evaluation_sha256),
        ],
        result=statement_result(evaluation.verdict),
        configuration=[
            ("plan.json", evaluation.plan_sha256),
            ("bundle", archive.sha256 if archive is not None else bundle.sha256),
        ],
        passed=passed,
        warned=warned,
        failed=failed,
    )


def _produce(report: Report) -> _Produced:
    """Everything outside the database: content, PDF, signatures."""
    from gates.lib.signing.pades import sign_pdf
    from gates.lib.signing.statement import statement_sign
    from gates.selectors.report_content import (
        certificate_context,
        evaluation_report_context,
    )
    from gates.services.report_pdf import count_pages, render_pdf

    progress = _progress(report)
    conf = report_settings()
    progress(2, "Loading the signing keys")
    signer = report_signer(conf)
    key = report_statement_key(conf)
    content = progress  # the content's steps say 5 to 50 %
    if report.decision is not None:  # a certificate
        context = certificate_context(
            report.decision, signer_fingerprint=signer.fingerprint, progress=content
        )
    else:
        context = evaluation_report_context(
            report.evaluation, signer_fingerprint=signer.fingerprint, progress=content
        )
    progress(60, "Rendering the PDF")
    pdf = render_pdf(TEMPLATES[Report.Kind(report.kind)], context)
    timestamped = bool(conf.tsa_url)
    progress(75, "Signing the PDF" + (" and time-stamping it" if timestamped else ""))
    signed = sign_pdf(
        pdf,
        signer,
        reason=REASONS[Report.Kind(report.kind)],
        timestamp_url=conf.tsa_url,
    )
    progress(88, "Signing the in-toto statement")
    envelope = statement_sign(_statement(report, _sha(signed)), key)
    progress(94, "Depositing in escrow")
    return _Produced(
        pdf=signed,
        statement=envelope,
        pages=count_pages(signed),
        timestamped=timestamped,
        signer_fingerprint=signer.fingerprint,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ready_transition(report: Report, produced: _Produced) -> Report:
    """rendering → ready: the blobs stored, then in one transaction the deposit
    (whose audit row, ``report.ready``, is this change's one row) and the row."""
    pdf_sha, statement_sha = _sha(produced.pdf), _sha(produced.statement)
    pdf_blob = blob_put(produced.pdf, pdf_sha, len(produced.pdf))
    statement_blob = blob_put(
        produced.statement, statement_sha, len(produced.statement)
    )
    with transaction.atomic():
        locked = Report.objects.select_for_update().get(pk=report.pk)
        transition_check(
            locked,
            S.READY,
            table=REPORT_TRANSITIONS,
            entity="report",
            refused=lambda: _refused(locked, S.READY),
        )
        evaluation = report.evaluation
        bundle = evaluation.campaign.bundle
        extra: dict[str, Any] = {
            "bundle": str(bundle.public_id),
            "report": str(report.public_id),
            "report_kind": report.kind,
            "evaluation": str(evaluation.public_id),
            "pdf_sha256": pdf_sha,
            "statement_sha256": statement_sha,
            "evaluation_sha256": evaluation.evaluation_sha256,
        }
        if report.decision is not None:
            extra["decision"] = str(report.decision.public_id)
        role = DepositBlob.Role.DOCUMENT
        deposit = deposit_create(
            kind=Deposit.Kind.REPORT,
            organisation=report.rfp.buyer_organisation,
            rfp=report.rfp,
            bundle=bundle,
            items=[
                DepositItem(pdf_blob, role, PDF_PATH),
                DepositItem(statement_blob, role, STATEMENT_PATH),
            ],
            actor=None,
            extra=extra,
            action="report.ready",
            target=report,
            data={
                **_facts(report),
                "from": locked.status,
                "to": S.READY,
                "pdf_sha256": pdf_sha,
                "statement_sha256": statement_sha,
                "pages": produced.pages,
                "timestamped": produced.timestamped,
                "signer_fingerprint": produced.signer_fingerprint,
            },
        )
        report = transition(
            report,
            S.READY,
            actor=None,
            table=REPORT_TRANSITIONS,
            entity="report",
            action=None,  # the deposit's row, report.ready
            fields={
                "deposit": deposit,
                "pdf_blob": pdf_blob,
                "statement_blob": statement_blob,
                "pdf_sha256": pdf_sha,
                "statement_sha256": statement_sha,
                "pages": produced.pages,
                "timestamped": produced.timestamped,
                "signer_fingerprint": produced.signer_fingerprint,
                "progress_pct": 100,
                "progress_step": "Ready",
                "finished_at": clock.now(),
            },
        )
    return report


def _fail(report_id: int, reason: str) -> Report | None:
    with transaction.atomic():
        Report.objects.select_for_update().filter(pk=report_id).first()  # lock
        report = _loaded(report_id)
        if report is None or report.status != S.RENDERING:
            return report
        report.error, report.finished_at = reason, clock.now()
        return report_transition(
            report, S.FAILED, None, fields=("error", "finished_at"), error=reason
        )


def _expected(error: BaseException) -> bool:
    """A failure with a reason of its own (others are logged with their
    traceback for the operator)."""
    from celery.exceptions import SoftTimeLimitExceeded

    from gates.lib.signing.pades import PdfSigningError
    from gates.lib.signing.pki import ReportKeyError

    known = (PdfSigningError, ReportKeyError, LogKeyError, SoftTimeLimitExceeded)
    return isinstance(error, known)


def _readable(text: str) -> str:
    """One line, no file paths, at most ``ERROR_MAX`` characters."""
    text = _PATH.sub("…", " ".join(str(text).split()))
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 1] + "…"


def failure_reason(error: BaseException) -> str:
    """What the page shows for a failed report: readable, never a traceback or
    a server path."""
    from celery.exceptions import SoftTimeLimitExceeded

    from gates.lib.signing.pades import PdfSigningError
    from gates.lib.signing.pki import ReportKeyError

    if isinstance(error, ReportKeyError | LogKeyError):
        if _signed_reports_exist():
            return KEYS_MISSING
        text = str(error).replace("log key", "statement key")
        return "The report signing keys could not be loaded: " + _readable(text)
    if isinstance(error, PdfSigningError):
        return "The PDF could not be signed: " + _readable(str(error))
    if isinstance(error, SoftTimeLimitExceeded):
        return "Rendering the report took too long and was stopped."
    return f"Rendering the report failed ({type(error).__name__}): " + _readable(
        str(error) or "no detail"
    )


# --- the reaper (beat) --------------------------------------------------------


@dataclass(frozen=True)
class ReapOutcome:
    requeued: int
    failed: int
    resent: int


def _reap_one(report_id: int, cutoff: Any) -> str:
    with transaction.atomic():
        Report.objects.select_for_update().filter(pk=report_id).first()  # lock
        report = _loaded(report_id)
        if report is None:
            return ""
        if report.status == S.QUEUED:
            if report.requested_at >= cutoff:
                return ""
            _enqueue(report)
            return "resent"
        if report.status != S.RENDERING or (
            report.claimed_at is not None and report.claimed_at >= cutoff
        ):
            return ""  # done meanwhile, or its worker may still be at it
        if report.attempts >= REPORT_MAX_ATTEMPTS:
            reason = WORKER_LOST.format(attempts=report.attempts)
            report.error, report.finished_at = reason, clock.now()
            report_transition(
                report, S.FAILED, None, fields=("error", "finished_at"), error=reason
            )
            return "failed"
        report.progress_pct, report.progress_step = 0, "Queued again: worker lost"
        report.requested_at = clock.now()  # its message's age, for the next sweep
        report_transition(
            report,
            S.QUEUED,
            None,
            fields=("progress_pct", "progress_step", "requested_at"),
            reason="worker_lost",
            attempts=report.attempts,
        )
        _enqueue(report)
        return "requeued"


def reports_reap() -> ReapOutcome:
    """No report stays queued or rendering for ever: each one past
    ``RENDER_LEASE`` is sent, queued again or failed (one transaction and, for
    a status change, one audit row each)."""
    cutoff = clock.now() - RENDER_LEASE
    stale = Report.objects.filter(
        Q(status=S.RENDERING, claimed_at__lt=cutoff)
        | Q(status=S.RENDERING, claimed_at__isnull=True)
        | Q(status=S.QUEUED, requested_at__lt=cutoff)
    ).values_list("pk", flat=True)
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    for report_id in list(stale):
        outcome = _reap_one(report_id, cutoff)
        if outcome:
            counts[outcome] += 1
    return ReapOutcome(**counts)


# --- downloads ----------------------------------------------------------------


def _trail_of(report: Report, actor: User) -> Organisation:
    """A vendor's own downloads in its trail, everyone else's in the buyer's."""
    if report.vendor_organisation_id in organisation_ids_for(
        actor, Role.VENDOR, Role.ADMIN
    ):
        return report.vendor_organisation
    return report.rfp.buyer_organisation


@transaction.atomic
def report_download_record(*, report: Report, actor: User, part: str) -> None:
    """Record that ``actor`` downloaded ``part`` ("pdf" or "statement") of the
    ready ``report`` (the caller checked that they may)."""
    if part not in ("pdf", "statement"):
        raise ValueError(f"no such part of a report: {part!r}")
    audit_record(
        actor=actor,
        action="report.downloaded",
        target=report,
        organisation=_trail_of(report, actor),
        data={
            **_facts(report),
            "part": part,
            "sha256": report.pdf_sha256 if part == "pdf" else report.statement_sha256,
        },
    )


@dataclass(frozen=True)
class ReportDownload:
    data: bytes
    content_type: str
    filename: str
    sha256: str


CONTENT_TYPES: Final = {"pdf": "application/pdf", "statement": "application/json"}


def report_download(*, report: Report, actor: User, part: str) -> ReportDownload:
    """``part`` ("pdf" or "statement") of the ready ``report``, its download
    audited (the caller checked that ``actor`` may have it); GatesConflict
    ``report_not_ready`` while it is not ready. The file name is made of our
    own fields: ``RFP-1-acme-lab-validation-report.pdf``."""
    from artifacts.storage.blobs import blob_open

    if report.status != S.READY:
        raise GatesConflict(
            f"The {report.get_kind_display().lower()} is "
            f"{report.get_status_display().lower()}: it can be downloaded once "
            "it is ready.",
            code="report_not_ready",
        )
    blob = report.pdf_blob if part == "pdf" else report.statement_blob
    if blob is None:  # gates_report_ready_complete makes this impossible
        raise ValueError(f"the ready report {report.public_id} has no {part}")
    with blob_open(blob) as handle:
        data = handle.read()
    report_download_record(report=report, actor=actor, part=part)
    stem = (
        f"{report.rfp.reference}-{report.vendor_organisation.slug}-"
        f"{report.evaluation.gate}-"
        + ("certificate" if report.kind == K.CERTIFICATE else "report")
    )
    suffix = ".pdf" if part == "pdf" else ".statement.json"
    return ReportDownload(data, CONTENT_TYPES[part], stem + suffix, blob.sha256)
