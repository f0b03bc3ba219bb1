"""Clarifications: an invited vendor asks privately, the buyer answers publicly.

Who asked is known only to the asking organisation. The buyer side sees a question
as "Vendor question #N" and never the asking organisation or user: Prozorro hashes
the asker for the same reason, the answer goes to every invited vendor anyway (so
the buyer has no need to know whom it answers), and evaluators who later score the
bids must not be biased by who asked what. The audit row of a question therefore
belongs to the vendor organisation's trail, not the buyer's.

Answers are final. A wrong or incomplete answer is corrected by an addendum (see
``procurement.services.addenda``): it changes the RFP's conditions for every
invited vendor with a visible diff and a public reason, marks submitted bids for
re-confirmation and extends a close deadline — what a correction of the conditions
must do and an edited answer would silently skip."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from procurement.exceptions import ProcurementError
from procurement.models import Clarification, Rfp
from procurement.services.deadlines import rfp_apply_deadlines

QUESTION_MAX_LENGTH = 4000
ANSWER_MAX_LENGTH = 10000


def clean_text(text: str, *, what: str, max_length: int) -> str:
    """``text`` stripped, or a refusal when it is empty or too long."""
    text = (text or "").strip()
    if not text:
        raise ProcurementError(f"Write the {what} first.", code="required")
    if len(text) > max_length:
        raise ProcurementError(
            f"The {what} has {len(text)} characters; the limit is {max_length}.",
            code="too_long",
        )
    return text


def questions_closed_reason(rfp: Rfp) -> str:
    """Why no question can be asked now, or "" while questions are open."""
    now = clock.now()
    by_deadline = {Rfp.Status.PUBLISHED, Rfp.Status.CLOSED, Rfp.Status.UNSUCCESSFUL}
    if rfp.status_now not in by_deadline:
        return "Questions can be asked only while the RFP is published."
    if rfp.questions_deadline is not None and now >= rfp.questions_deadline:
        deadline = rfp.questions_deadline
        return f"The questions deadline passed on {deadline:%Y-%m-%d %H:%M} UTC."
    if now >= rfp.submission_deadline:
        deadline = rfp.submission_deadline
        return f"The submission deadline passed on {deadline:%Y-%m-%d %H:%M} UTC."
    if rfp.status_now != Rfp.Status.PUBLISHED:  # closed early: never by the clock
        return "Questions can be asked only while the RFP is published."
    return ""


def _clarifications_url(rfp: Rfp) -> str:
    return reverse("procurement:rfp_clarifications", args=[rfp.public_id])


@transaction.atomic
def clarification_ask(
    *, rfp: Rfp, organisation: Organisation, question: str, actor: User
) -> Clarification:
    """A question of an invited vendor, private to it until the buyer answers."""
    rfp = rfp_apply_deadlines(rfp=Rfp.objects.select_for_update().get(pk=rfp.pk))
    closed = questions_closed_reason(rfp)
    if closed:
        raise ProcurementError(closed, code="questions_closed")
    if not rfp.invited_vendors.filter(pk=organisation.pk).exists():
        raise ProcurementError("Only invited vendors ask questions on this RFP.")
    text = clean_text(question, what="question", max_length=QUESTION_MAX_LENGTH)
    clarification = Clarification(
        rfp=rfp, asked_by_organisation=organisation, asked_by=actor, question=text
    )
    clarification.full_clean()
    clarification.save()
    audit_record(
        actor=actor,
        action="clarification.asked",
        target=clarification,
        organisation=organisation,  # the vendor's own trail: the buyer's stays blind
        data={"rfp": rfp.reference, "clarification": str(clarification.public_id)},
    )
    notify_users(
        users=user_list_in([rfp.buyer_organisation_id], Role.BUYER, Role.ADMIN),
        template="clarification_asked",
        context={
            "rfp": rfp,
            "label": f"Vendor question #{rfp.clarifications.count()}",
            "question": text,
        },
        url=_clarifications_url(rfp),
    )
    return clarification


@transaction.atomic
def clarification_answer(
    *, clarification: Clarification, answer: str, actor: User
) -> Clarification:
    """Publish the buyer's answer to every invited vendor. Answers are final."""
    clarification = (
        Clarification.objects.select_for_update()
        .select_related("rfp")
        .get(pk=clarification.pk)
    )
    rfp = clarification.rfp
    if clarification.is_answered:
        raise ProcurementError(
            "This question is already answered and answers are final; "
            "correct the RFP's conditions with an addendum.",
            code="already_answered",
        )
    if rfp.status != Rfp.Status.PUBLISHED:
        raise ProcurementError("Questions are answered only while the RFP is open.")
    clarification.answer = clean_text(
        answer, what="answer", max_length=ANSWER_MAX_LENGTH
    )
    clarification.answered_by = actor
    clarification.answered_at = clock.now()
    clarification.full_clean()
    clarification.save(
        update_fields=["answer", "answered_by", "answered_at", "updated_at"]
    )
    audit_record(
        actor=actor,
        action="clarification.answered",
        target=clarification,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "clarification": str(clarification.public_id)},
    )
    _notify_answered(clarification)
    return clarification


def _notify_answered(clarification: Clarification) -> None:
    """Every member of every invited vendor, with no word of who asked."""
    rfp = clarification.rfp
    notify_users(
        users=user_list_in(rfp.invited_vendors.values_list("id", flat=True)),
        template="clarification_answered",
        context={
            "rfp": rfp,
            "question": clarification.question,
            "answer": clarification.answer,
        },
        url=_clarifications_url(rfp),
    )
