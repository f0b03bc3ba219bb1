"""Clarifications: the services and the tab. Vendor A asks; vendor B, the buyer's
trail and every notification must never learn that it was A."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Clarification, Rfp
from procurement.selectors.audit import rfp_audit_events
from procurement.services.clarifications import (
    clarification_answer,
    clarification_ask,
)
from tests.procurement.factories_clarifications import ClarificationFactory, open_rfp

pytestmark = pytest.mark.django_db

# Everything that would name vendor A (organisation name and slug, its user).
ACME = ("acme", "Acme Flash", "vendor-a")


def _leaks(text: str) -> list[str]:
    return [word for word in ACME if word.lower() in text.lower()]


@pytest.fixture
def rfp(
    clock: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer: Any,
    evaluator: Any,
) -> Rfp:
    """Buyer and evaluator exist first, so that they can be notified."""
    return open_rfp(buyer_org, vendor_a_org, vendor_b_org)


@pytest.fixture
def question(rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation) -> Clarification:
    return clarification_ask(
        rfp=rfp,
        organisation=vendor_a_org,
        question="Is NVMe/TCP acceptable instead of RoCE?",
        actor=vendor_a,
    )


def _url(name: str, rfp: Rfp, *args: Any) -> str:
    return reverse(f"procurement:{name}", args=[rfp.public_id, *args])


# --- asking -----------------------------------------------------------------


def test_clarification_ask_is_pending_and_owned_by_the_vendor(
    question: Clarification, vendor_a_org: Organisation
) -> None:
    assert question.asked_by_organisation == vendor_a_org
    assert not question.is_answered


def test_clarification_ask_audit_row_stays_out_of_the_buyer_trail(
    question: Clarification, rfp: Rfp, buyer: Any, vendor_a_org: Organisation
) -> None:
    event = AuditEvent.objects.get(action="clarification.asked")

    assert event.organisation == vendor_a_org
    assert not rfp_audit_events(buyer, rfp=rfp).filter(pk=event.pk).exists()


def test_clarification_ask_notifies_buyers_without_naming_the_vendor(
    question: Clarification, buyer: Any, evaluator: Any
) -> None:
    (note,) = Notification.objects.filter(recipient=buyer)

    assert "Vendor question #1" in note.body
    assert "NVMe/TCP" in note.body
    assert _leaks(note.subject + note.body) == []
    assert not Notification.objects.filter(recipient=evaluator).exists()


@pytest.mark.parametrize(
    ("minutes_after_questions_deadline", "allowed"), [(-1, True), (0, False)]
)
def test_clarification_ask_stops_at_the_questions_deadline(
    minutes_after_questions_deadline: int,
    allowed: bool,
    rfp: Rfp,
    clock: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:
    clock.travel_to(
        rfp.questions_deadline + timedelta(minutes=minutes_after_questions_deadline)
    )

    if allowed:
        clarification_ask(
            rfp=rfp, organisation=vendor_a_org, question="Q?", actor=vendor_a
        )
    else:
        with pytest.raises(ProcurementError, match="questions deadline passed"):
            clarification_ask(
                rfp=rfp, organisation=vendor_a_org, question="Q?", actor=vendor_a
            )

    assert Clarification.objects.count() == int(allowed)


def test_clarification_ask_without_questions_deadline_stops_at_submission(
    clock: Any, buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = open_rfp(buyer_org, vendor_a_org, questions_deadline=None)
    clock.travel_to(rfp.submission_deadline)

    with pytest.raises(ProcurementError, match="submission deadline passed"):
        clarification_ask(
            rfp=rfp, organisation=vendor_a_org, question="Q?", actor=vendor_a
        )


@pytest.mark.parametrize(
    "status", [Rfp.Status.DRAFT, Rfp.Status.CLOSED, Rfp.Status.CANCELLED]
)
def test_clarification_ask_needs_a_published_rfp(
    status: str, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=status)

    with pytest.raises(ProcurementError, match="only while the RFP is published"):
        clarification_ask(
            rfp=rfp, organisation=vendor_a_org, question="Q?", actor=vendor_a
        )


def test_clarification_ask_refuses_an_organisation_not_invited(
    clock: Any, buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = open_rfp(buyer_org)

    with pytest.raises(ProcurementError, match="Only invited vendors"):
        clarification_ask(
            rfp=rfp, organisation=vendor_a_org, question="Q?", actor=vendor_a
        )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "Write the question"),
        ("  \n ", "Write the question"),
        ("x" * 10_001, "limit is 4000"),
    ],
)
def test_clarification_ask_rejects_empty_and_overlong_questions(
    text: str, problem: str, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ProcurementError, match=problem):
        clarification_ask(
            rfp=rfp, organisation=vendor_a_org, question=text, actor=vendor_a
        )

    assert not Clarification.objects.exists()


# --- answering --------------------------------------------------------------


def test_clarification_answer_notifies_every_invited_vendor_without_the_asker(
    question: Clarification, buyer: Any, vendor_a: Any, vendor_b: Any
) -> None:
    clarification_answer(clarification=question, answer="Yes, NVMe/TCP.", actor=buyer)

    notes = Notification.objects.filter(subject__contains="answered")
    assert {n.recipient for n in notes} == {vendor_a, vendor_b}
    other = notes.get(recipient=vendor_b)
    assert "Yes, NVMe/TCP." in other.body
    assert _leaks(other.subject + other.body) == []


def test_clarification_answer_is_final(question: Clarification, buyer: Any) -> None:
    clarification_answer(clarification=question, answer="First.", actor=buyer)

    with pytest.raises(ProcurementError, match="answers are final"):
        clarification_answer(clarification=question, answer="Second.", actor=buyer)

    question.refresh_from_db()
    assert question.answer == "First."


def test_clarification_answer_audit_row_is_the_buyers_and_names_no_asker(
    question: Clarification, rfp: Rfp, buyer: Any, buyer_org: Organisation
) -> None:
    clarification_answer(clarification=question, answer="Yes.", actor=buyer)

    event = rfp_audit_events(buyer, rfp=rfp).get(action="clarification.answered")
    assert event.organisation == buyer_org
    assert event.data["rfp"] == rfp.reference
    assert _leaks(json.dumps(event.data) + event.target_repr + event.actor_repr) == []


@pytest.mark.parametrize("text", ["", "   ", "y" * 10_001])
def test_clarification_answer_rejects_empty_and_overlong_answers(
    text: str, question: Clarification, buyer: Any
) -> None:
    with pytest.raises(ProcurementError):
        clarification_answer(clarification=question, answer=text, actor=buyer)

    question.refresh_from_db()
    assert not question.is_answered


def test_clarification_answer_refused_once_the_rfp_is_cancelled(
    question: Clarification, rfp: Rfp, buyer: Any
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CANCELLED)

    with pytest.raises(ProcurementError, match="only while the RFP is open"):
        clarification_answer(clarification=question, answer="Late.", actor=buyer)


def test_clarification_answer_allowed_after_the_deadline_while_published(
    question: Clarification, rfp: Rfp, buyer: Any, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline + timedelta(hours=1))

    clarification_answer(clarification=question, answer="Yes.", actor=buyer)

    question.refresh_from_db()
    assert question.is_answered


# --- the tab ----------------------------------------------------------------


def test_tab_hides_a_pending_question_from_other_vendors(
    question: Clarification, rfp: Rfp, client_for: Any, vendor_b: Any
) -> None:
    html = client_for(vendor_b).get(_url("rfp_clarifications", rfp)).content.decode()

    assert "NVMe/TCP" not in html
    assert 'data-testid="qa-empty"' in html


def test_tab_shows_an_answer_to_other_vendors_without_the_asker(
    question: Clarification, rfp: Rfp, buyer: Any, client_for: Any, vendor_b: Any
) -> None:
    clarification_answer(clarification=question, answer="Yes, NVMe/TCP.", actor=buyer)

    html = client_for(vendor_b).get(_url("rfp_clarifications", rfp)).content.decode()

    assert "Q&amp;A 1" in html
    assert "Yes, NVMe/TCP." in html
    assert 'data-testid="own-question"' not in html
    assert _leaks(html) == []


def test_tab_shows_the_asker_its_pending_question(
    question: Clarification, rfp: Rfp, client_for: Any, vendor_a: Any
) -> None:
    html = client_for(vendor_a).get(_url("rfp_clarifications", rfp)).content.decode()

    assert 'data-testid="own-question"' in html
    assert 'data-state="pending"' in html
    assert "NVMe/TCP" in html


def test_tab_shows_the_buyer_a_numbered_question_without_the_asker(
    question: Clarification, rfp: Rfp, client_for: Any, buyer: Any
) -> None:
    html = client_for(buyer).get(_url("rfp_clarifications", rfp)).content.decode()

    assert "Vendor question #1" in html
    assert 'data-testid="answer-form"' in html
    assert _leaks(html) == []


def test_tab_lets_an_evaluator_read_but_not_answer(
    question: Clarification, rfp: Rfp, client_for: Any, evaluator: Any
) -> None:
    response = client_for(evaluator).get(_url("rfp_clarifications", rfp))

    assert response.status_code == 200
    assert b"NVMe/TCP" in response.content
    assert b'data-testid="answer-form"' not in response.content
    assert b'data-testid="addendum-form"' not in response.content


@pytest.mark.parametrize(
    ("persona", "code"), [("labops", 403), ("auditor", 403), ("outsider", 404)]
)
def test_tab_is_closed_to_the_lab_auditors_and_strangers(
    persona: str, code: int, rfp: Rfp, client_for: Any, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert client_for(user).get(_url("rfp_clarifications", rfp)).status_code == code


def test_tab_explains_empty_lists_to_the_buyer(
    rfp: Rfp, client_for: Any, buyer: Any
) -> None:
    html = client_for(buyer).get(_url("rfp_clarifications", rfp)).content.decode()

    assert 'data-testid="questions-empty"' in html
    assert 'data-testid="addenda-empty"' in html


def test_tab_disables_asking_after_the_questions_deadline(
    rfp: Rfp, client_for: Any, vendor_a: Any, clock: Any
) -> None:
    clock.travel_to(rfp.questions_deadline)

    html = client_for(vendor_a).get(_url("rfp_clarifications", rfp)).content.decode()

    assert 'data-testid="questions-closed"' in html
    assert 'data-testid="ask-submit" disabled' in html


def test_page_ask_sends_the_question(
    rfp: Rfp, client_for: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    response = client_for(vendor_a).post(
        _url("rfp_clarification_ask", rfp), {"question": "Which kernel?"}, follow=True
    )

    assert Clarification.objects.get().asked_by_organisation == vendor_a_org
    assert b"Question sent" in response.content


def test_page_ask_reports_an_empty_question(
    rfp: Rfp, client_for: Any, vendor_a: Any
) -> None:
    response = client_for(vendor_a).post(
        _url("rfp_clarification_ask", rfp), {"question": " "}, follow=True
    )

    assert not Clarification.objects.exists()
    assert b"Your question was not sent" in response.content


@pytest.mark.parametrize("persona", ["buyer", "evaluator", "labops", "auditor"])
def test_page_ask_is_for_vendors_only(
    persona: str, rfp: Rfp, client_for: Any, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    response = client_for(user).post(
        _url("rfp_clarification_ask", rfp), {"question": "Q?"}
    )

    assert response.status_code == 403
    assert not Clarification.objects.exists()


def test_page_answer_publishes(
    question: Clarification, rfp: Rfp, client_for: Any, buyer: Any
) -> None:
    url = _url("clarification_answer", rfp, question.public_id)

    response = client_for(buyer).post(url, {"answer": "Yes."}, follow=True)

    question.refresh_from_db()
    assert question.answer == "Yes."
    assert b"Answer published" in response.content


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 403), ("vendor_a", 403), ("vendor_b", 404), ("outsider", 404)],
)
def test_page_answer_is_for_buyers_only(
    persona: str,
    code: int,
    question: Clarification,
    rfp: Rfp,
    client_for: Any,
    request: Any,
) -> None:
    user = request.getfixturevalue(persona)
    url = _url("clarification_answer", rfp, question.public_id)

    assert client_for(user).post(url, {"answer": "Yes."}).status_code == code
    question.refresh_from_db()
    assert not question.is_answered


@pytest.mark.parametrize(
    ("persona", "code"),
    [("vendor_a", 200), ("vendor_b", 404), ("buyer", 200), ("outsider", 404)],
)
def test_question_page_of_a_pending_question_exists_only_for_asker_and_buyer(
    persona: str,
    code: int,
    question: Clarification,
    rfp: Rfp,
    client_for: Any,
    request: Any,
) -> None:
    user = request.getfixturevalue(persona)
    url = _url("clarification_detail", rfp, question.public_id)

    assert client_for(user).get(url).status_code == code


def test_question_page_of_an_answered_question_is_public_to_invited_vendors(
    question: Clarification, rfp: Rfp, buyer: Any, client_for: Any, vendor_b: Any
) -> None:
    clarification_answer(clarification=question, answer="Yes.", actor=buyer)
    url = _url("clarification_detail", rfp, question.public_id)

    response = client_for(vendor_b).get(url)

    assert response.status_code == 200
    assert _leaks(response.content.decode()) == []


def test_tab_lists_unanswered_questions_first_for_the_buyer(
    clock: Any, rfp: Rfp, client_for: Any, buyer: Any
) -> None:
    ClarificationFactory.create(rfp=rfp, question="Answered one?", answered=True)
    clock.advance(minutes=1)
    ClarificationFactory.create(rfp=rfp, question="Still open?")

    html = client_for(buyer).get(_url("rfp_clarifications", rfp)).content.decode()

    assert html.index("Still open?") < html.index("Answered one?")
    assert "Vendor question #2" in html
    assert "published as Q&amp;A 1" in html
