"""Reads of signed reports (docs/reports.md): an evaluation's benchmark report,
a decision's acceptance certificate, one report by id if the user may see it,
and the public key the in-toto statements verify with. Reads only: the key is
loaded, never created (no report has been signed while it does not exist)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from artifacts.lib.transparency.keyfile import load_private_key
from gates.conf import report_settings
from gates.models import Decision, Evaluation, Report
from gates.permissions import AnyUser, can_download_report, gate_rows_visible_q


def _reports() -> QuerySet[Report]:
    return Report.objects.select_related(
        "evaluation",
        "decision",
        "rfp",
        "vendor_organisation",
        "deposit",
        "pdf_blob",
        "statement_blob",
    )


def report_for_evaluation(evaluation: Evaluation) -> Report | None:
    """The evaluation's benchmark report (live or failed), if one was requested."""
    found = _reports().filter(kind=Report.Kind.EVALUATION, evaluation=evaluation)
    return found.order_by("-id").first()


def report_for_decision(decision: Decision) -> Report | None:
    """The decision's acceptance certificate, if one was requested."""
    found = _reports().filter(kind=Report.Kind.CERTIFICATE, decision=decision)
    return found.order_by("-id").first()


def report_list_visible_to(user: AnyUser) -> QuerySet[Report]:
    """Every report of an evaluation the user sees."""
    return _reports().filter(gate_rows_visible_q(user))


def report_get_visible(user: AnyUser, public_id: uuid.UUID) -> Report | None:
    """One report by its id, if the user may see (and download) it."""
    found = report_list_visible_to(user).filter(public_id=public_id).first()
    if found is None or not can_download_report(user, found):
        return None
    return found


def report_statement_public_key_pem() -> bytes | None:
    """The statements' Ed25519 public key (PEM SubjectPublicKeyInfo); None while
    there is no key (no report has been signed yet). An unreadable key file
    raises ``LogKeyError``."""
    from artifacts.lib.signatures.statement import public_key_pem

    path = report_settings().statement_key_path
    if not path.exists():
        return None
    return public_key_pem(load_private_key(path, create=False))
