"""Addenda: the visible diff, re-confirmation of bids and the deadline extension,
driven by the procurement clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Addendum, Bid, Rfp
from procurement.services.addenda import rfp_amend
from tests.procurement.factories_clarifications import BidFactory, open_rfp

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    clock: Any, buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any
) -> Rfp:
    clock.travel_to(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    return open_rfp(buyer_org, vendor_a_org, vendor_b_org, title="Flash tier")


def _amend(rfp: Rfp, actor: Any, **changes: object) -> Addendum:
    return rfp_amend(rfp=rfp, changes=changes, reason="Scope grew.", actor=actor)


def test_rfp_amend_numbers_addenda_one_after_another(rfp: Rfp, buyer: Any) -> None:
    first = _amend(rfp, buyer, title="Flash tier v2")
    second = _amend(rfp, buyer, min_bids=3)

    assert (first.number, second.number) == (1, 2)


def test_rfp_amend_records_a_json_safe_diff(rfp: Rfp, buyer: Any, clock: Any) -> None:
    old_deadline = rfp.submission_deadline
    new_deadline = clock.now() + timedelta(days=30)

    addendum = _amend(
        rfp, buyer, submission_deadline=new_deadline, retest_tolerance_pct="12.5"
    )

    addendum.refresh_from_db()
    assert addendum.changes == {
        "submission_deadline": [old_deadline.isoformat(), new_deadline.isoformat()],
        "retest_tolerance_pct": ["10.00", "12.50"],
    }
    assert addendum.issued_at == clock.now()
    assert addendum.deadline_extended_to is None


def test_rfp_amend_applies_the_changes(rfp: Rfp, buyer: Any) -> None:
    _amend(rfp, buyer, title="Flash tier v2", retest_vendor_funded=False, min_bids=2)

    rfp.refresh_from_db()
    assert (rfp.title, rfp.retest_vendor_funded, rfp.min_bids) == (
        "Flash tier v2",
        False,
        2,
    )


def test_rfp_amend_within_the_window_extends_to_exactly_the_window(
    rfp: Rfp, buyer: Any, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline - timedelta(days=2))

    addendum = _amend(rfp, buyer, title="Flash tier v2")

    rfp.refresh_from_db()
    assert rfp.submission_deadline == clock.now() + timedelta(days=4)
    assert addendum.deadline_extended_to == rfp.submission_deadline


@pytest.mark.parametrize("days_left", [4, 10])
def test_rfp_amend_outside_the_window_keeps_the_deadline(
    days_left: int, rfp: Rfp, buyer: Any, clock: Any
) -> None:
    deadline = rfp.submission_deadline
    clock.travel_to(deadline - timedelta(days=days_left))

    addendum = _amend(rfp, buyer, title="Flash tier v2")

    rfp.refresh_from_db()
    assert rfp.submission_deadline == deadline
    assert addendum.deadline_extended_to is None


def test_rfp_amend_uses_the_rfps_own_extension_days(
    rfp: Rfp, buyer: Any, clock: Any
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(addendum_extension_days=7)
    clock.travel_to(rfp.submission_deadline - timedelta(days=6, hours=23))

    _amend(rfp, buyer, min_bids=2)

    rfp.refresh_from_db()
    assert rfp.submission_deadline == clock.now() + timedelta(days=7)


def test_rfp_amend_refuses_a_deadline_inside_the_window(
    rfp: Rfp, buyer: Any, clock: Any
) -> None:
    deadline = rfp.submission_deadline

    with pytest.raises(ProcurementError, match="at least 4 day"):
        _amend(rfp, buyer, submission_deadline=clock.now() + timedelta(days=3))

    rfp.refresh_from_db()
    assert rfp.submission_deadline == deadline
    assert not Addendum.objects.exists()


def test_rfp_amend_accepts_a_deadline_at_the_window_edge(
    rfp: Rfp, buyer: Any, clock: Any
) -> None:
    earliest = clock.now() + timedelta(days=4)

    addendum = _amend(
        rfp,
        buyer,
        submission_deadline=earliest,
        questions_deadline=earliest - timedelta(days=1),
    )

    rfp.refresh_from_db()
    assert rfp.submission_deadline == earliest
    assert addendum.deadline_extended_to is None


def test_rfp_amend_marks_submitted_bids_for_reconfirmation(
    rfp: Rfp, buyer: Any, vendor_a_org: Organisation, vendor_b_org: Organisation
) -> None:
    submitted = BidFactory.create(rfp=rfp, vendor_organisation=vendor_a_org)
    withdrawn = BidFactory.create(
        rfp=rfp, vendor_organisation=vendor_b_org, status=Bid.Status.WITHDRAWN
    )

    _amend(rfp, buyer, min_bids=2)

    submitted.refresh_from_db()
    withdrawn.refresh_from_db()
    assert submitted.status == Bid.Status.NEEDS_RECONFIRMATION
    assert withdrawn.status == Bid.Status.WITHDRAWN


def test_rfp_amend_writes_one_audit_row_with_the_bid_count(
    rfp: Rfp, buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    BidFactory.create(rfp=rfp, vendor_organisation=vendor_a_org)

    _amend(rfp, buyer, min_bids=2)

    (event,) = AuditEvent.objects.filter(action="addendum.issued")
    assert event.organisation == buyer_org
    assert event.data["bids_needing_reconfirmation"] == 1
    assert event.data["changes"] == {"min_bids": [1, 2]}
    assert "acme" not in str(event.data)


def test_rfp_amend_refuses_when_nothing_changed(rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError, match="Nothing changed"):
        _amend(rfp, buyer, title="Flash tier", min_bids=1)

    assert not Addendum.objects.exists()


def test_rfp_amend_leaves_unchanged_values_out_of_the_diff(
    rfp: Rfp, buyer: Any
) -> None:
    addendum = _amend(rfp, buyer, title="Flash tier", min_bids=2)

    assert addendum.changes == {"min_bids": [1, 2]}


def test_rfp_amend_refuses_an_unknown_field(rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError) as refused:
        _amend(rfp, buyer, reference="RFP-HIJACK", min_bids=2)

    assert [p.path for p in refused.value.problems] == ["changes.reference"]
    assert not Addendum.objects.exists()


@pytest.mark.parametrize(
    "changes",
    [
        {"min_bids": "three"},
        {"min_bids": True},
        {"retest_vendor_funded": "yes"},
        {"submission_deadline": "2027-01-01"},
        {"submission_deadline": datetime(2027, 1, 1)},  # noqa: DTZ001 naive on purpose
        {"title": 5},
        {"retest_tolerance_pct": "a lot"},
        {"retest_tolerance_pct": "NaN"},
        {"retest_tolerance_pct": "1e30"},
        {"retest_tolerance_pct": "150"},
        {"min_bids": 0},
        {"title": ""},
    ],
)
def test_rfp_amend_rejects_wrong_values(
    changes: dict[str, object], rfp: Rfp, buyer: Any
) -> None:
    with pytest.raises(ProcurementError):
        rfp_amend(rfp=rfp, changes=changes, reason="Typo.", actor=buyer)

    rfp.refresh_from_db()
    assert (rfp.title, rfp.min_bids) == ("Flash tier", 1)
    assert not Addendum.objects.exists()


def test_rfp_amend_refuses_questions_after_submission(rfp: Rfp, buyer: Any) -> None:
    later = rfp.submission_deadline + timedelta(days=1)

    with pytest.raises(ProcurementError, match="questions deadline cannot be after"):
        _amend(rfp, buyer, questions_deadline=later)


@pytest.mark.parametrize("reason", ["", "   ", "r" * 4001])
def test_rfp_amend_needs_a_reason(reason: str, rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError, match="Give the reason"):
        rfp_amend(rfp=rfp, changes={"min_bids": 2}, reason=reason, actor=buyer)


@pytest.mark.parametrize(
    "status", [Rfp.Status.DRAFT, Rfp.Status.CLOSED, Rfp.Status.AWARDED]
)
def test_rfp_amend_needs_a_published_rfp(status: str, rfp: Rfp, buyer: Any) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=status)

    with pytest.raises(ProcurementError, match="Only a published RFP"):
        _amend(rfp, buyer, min_bids=2)


def test_rfp_amend_notifies_the_invited_vendors_only(
    rfp: Rfp, buyer: Any, vendor_a: Any, vendor_b: Any, outsider: Any
) -> None:
    _amend(rfp, buyer, min_bids=2)

    notes = Notification.objects.filter(subject__contains="addendum 1")
    assert {n.recipient for n in notes} == {vendor_a, vendor_b}
    assert "Minimum bids: 1 → 2" in notes.get(recipient=vendor_b).body


# --- the tab ----------------------------------------------------------------


def _tab(rfp: Rfp) -> str:
    return reverse("procurement:rfp_clarifications", args=[rfp.public_id])


def _issue_url(rfp: Rfp) -> str:
    return reverse("procurement:rfp_addendum_issue", args=[rfp.public_id])


def _form_data(rfp: Rfp, **edits: str) -> dict[str, str]:
    data = {
        "title": rfp.title,
        "submission_deadline": f"{rfp.submission_deadline:%Y-%m-%dT%H:%M}",
        "questions_deadline": f"{rfp.questions_deadline:%Y-%m-%dT%H:%M}",
        "min_bids": str(rfp.min_bids),
        "retest_tolerance_pct": str(rfp.retest_tolerance_pct),
        "escrow_retention_years": str(rfp.escrow_retention_years or ""),
        "retest_vendor_funded": "on",
        "reason": "Scope grew.",
    }
    return {**data, **edits}


def test_tab_shows_invited_vendors_the_diff_and_the_extension(
    rfp: Rfp, buyer: Any, clock: Any, client_for: Any, vendor_b: Any
) -> None:
    clock.travel_to(rfp.submission_deadline - timedelta(days=1))
    _amend(rfp, buyer, min_bids=2)

    html = client_for(vendor_b).get(_tab(rfp)).content.decode()

    assert 'data-testid="addendum"' in html
    assert "<del>1</del>" in html
    assert "<ins>2</ins>" in html
    assert "Scope grew." in html
    assert "extended automatically" in html


def test_page_addendum_issues_only_what_the_buyer_edited(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    data = _form_data(rfp, min_bids="3", description="\r\n")

    response = client_for(buyer).post(_issue_url(rfp), data, follow=True)

    assert Addendum.objects.get().changes == {"min_bids": [1, 3]}
    assert b"Addendum 1 issued" in response.content


def test_page_addendum_keeps_the_edits_on_a_refusal(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    response = client_for(buyer).post(_issue_url(rfp), _form_data(rfp, title="New"))
    assert response.status_code == 302  # sanity: the edited form is accepted

    response = client_for(buyer).post(_issue_url(rfp), _form_data(rfp, title="New"))

    assert response.status_code == 400
    assert b"Nothing changed" in response.content
    assert Addendum.objects.count() == 1


@pytest.mark.parametrize("persona", ["evaluator", "vendor_a", "labops"])
def test_page_addendum_is_for_buyers_only(
    persona: str, rfp: Rfp, client_for: Any, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    response = client_for(user).post(_issue_url(rfp), _form_data(rfp, min_bids="3"))

    assert response.status_code == 403
    assert not Addendum.objects.exists()


def test_tab_offers_the_addendum_form_to_the_buyer_only(
    rfp: Rfp, client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    assert b'data-testid="addendum-form"' in client_for(buyer).get(_tab(rfp)).content
    assert (
        b'data-testid="addendum-form"'
        not in client_for(vendor_a).get(_tab(rfp)).content
    )


def test_rfp_amend_stores_decimals_at_the_fields_precision(
    rfp: Rfp, buyer: Any
) -> None:
    addendum = _amend(rfp, buyer, retest_tolerance_pct=Decimal("7.5"))

    assert addendum.changes["retest_tolerance_pct"] == ["10.00", "7.50"]


def test_rfp_amend_refuses_a_decimal_beyond_its_precision(rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError, match="decimal places"):
        _amend(rfp, buyer, retest_tolerance_pct=Decimal("7.555"))
