"""The award takes two people: a buyer requests, another buyer-side member
confirms; incomplete score sheets need a written override that shows on the
award; any buyer-side member cancels a pending request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.exceptions import InvalidTransition, StateConflict
from accounts.models import AuditEvent, Notification, Organisation, Role
from procurement.exceptions import ProcurementError
from procurement.models import AWARD_REQUEST_TRANSITIONS, Award, AwardRequest, Rfp
from procurement.selectors.attention import attention_for
from procurement.services.award import award_cancel, award_confirm, award_request
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.procurement.factories_evaluation import (
    bid_of,
    evaluator_in,
    opened_rfp,
    score_all,
)
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."
OVERRIDE = "The second evaluator is on leave until after the budget deadline."
S = AwardRequest.Status


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return opened_rfp(buyer_org, [vendor_a_org, vendor_b_org], standstill_days=10)


@pytest.fixture
def scored(rfp: Rfp, evaluator: Any) -> Rfp:
    """Every evaluator (one) submitted: acme-flash ranks first."""
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    return rfp


@pytest.fixture
def half_scored(scored: Rfp, buyer_org: Organisation) -> Rfp:
    """A second evaluator, ``slow``, has not submitted."""
    evaluator_in(buyer_org, "slow")
    return scored


def _request(rfp: Rfp, vendor: Any, actor: Any, **extra: Any) -> AwardRequest:
    bid = bid_of(rfp, vendor)
    return award_request(rfp=rfp, bid=bid, rationale=RATIONALE, actor=actor, **extra)


def _in_state(rfp: Rfp, vendor: Any, buyer: Any, other: Any, state: str) -> None:
    """A request of ``rfp`` in ``state``, set directly as factories do."""
    now = timezone.now()
    by_state: dict[str, dict[str, Any]] = {
        S.CONFIRMED: {"confirmed_by": other, "confirmed_at": now},
        S.CANCELLED: {"cancelled_by": other, "cancelled_at": now},
    }
    extra = by_state.get(state, {})
    AwardRequest.objects.create(
        rfp=rfp,
        bid=bid_of(rfp, vendor),
        status=state,
        rationale=RATIONALE,
        sheets_submitted=1,
        sheets_expected=1,
        requested_by=buyer,
        requested_at=now,
        **extra,
    )


MOVES: dict[str, Callable[..., object]] = {
    S.CONFIRMED: award_confirm,
    S.CANCELLED: award_cancel,
}


@pytest.mark.parametrize("to", list(MOVES))
@pytest.mark.parametrize("current", S.values)
def test_award_request_moves_only_as_the_table_allows(
    scored: Rfp,
    vendor_a_org: Any,
    buyer: Any,
    evaluator: Any,
    current: str,
    to: str,
    transition_moves: list[Move],
) -> None:
    _in_state(scored, vendor_a_org, buyer, evaluator, current)
    allowed = to in AWARD_REQUEST_TRANSITIONS[current]

    if allowed:
        MOVES[to](rfp=scored, actor=evaluator)
    else:
        with pytest.raises(InvalidTransition):
            MOVES[to](rfp=scored, actor=evaluator)

    latest = AwardRequest.objects.latest("id")
    assert latest.status == (to if allowed else current)
    assert Award.objects.exists() == (allowed and to == S.CONFIRMED)
    requests = [m for m in transition_moves if m.model == "procurement.awardrequest"]
    assert requests == (
        [Move("procurement.awardrequest", current, to)] if allowed else []
    )


def test_the_table_never_returns_a_request_to_pending() -> None:
    assert all(S.PENDING not in moves for moves in AWARD_REQUEST_TRANSITIONS.values())


def test_the_requester_cannot_confirm(
    scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    with pytest.raises(ProcurementError, match="another member") as error:
        award_confirm(rfp=scored, actor=buyer)

    assert error.value.code == "award_same_person"
    assert AwardRequest.objects.get().status == S.PENDING
    assert Rfp.objects.get(pk=scored.pk).status == Rfp.Status.OPENED


def test_the_database_refuses_one_person_as_both(
    scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    request = _request(scored, vendor_a_org, buyer)

    with (
        pytest.raises(IntegrityError, match="procurement_award_two_people"),
        transaction.atomic(),
    ):
        AwardRequest.objects.filter(pk=request.pk).update(
            status=S.CONFIRMED, confirmed_by=buyer, confirmed_at=timezone.now()
        )


def test_the_database_keeps_one_live_request_per_rfp(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _in_state(scored, vendor_a_org, buyer, evaluator, S.PENDING)

    with (
        pytest.raises(IntegrityError),  # procurement_award_request_one_live
        transaction.atomic(),
    ):
        _in_state(scored, vendor_a_org, buyer, evaluator, S.PENDING)


def test_a_second_request_while_one_is_pending_is_refused(
    scored: Rfp, vendor_a_org: Any, vendor_b_org: Any, buyer: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    with pytest.raises(ProcurementError, match="already requested"):
        _request(scored, vendor_b_org, buyer)

    assert AwardRequest.objects.count() == 1


def test_incomplete_score_sheets_refuse_the_request_without_a_reason(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    with pytest.raises(StateConflict, match=r"1 of 2 evaluators .*\(slow\)") as error:
        _request(half_scored, vendor_a_org, buyer)

    assert error.value.code == "sheets_incomplete"
    assert not AwardRequest.objects.exists()


def test_a_token_override_reason_is_not_enough(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    with pytest.raises(StateConflict, match="at least 20 characters"):
        _request(half_scored, vendor_a_org, buyer, override_reason="  urgent  ")

    assert not AwardRequest.objects.exists()


def test_an_override_reason_lets_the_award_go_ahead_and_stays_on_it(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(half_scored, vendor_a_org, buyer, override_reason=f"  {OVERRIDE} ")

    award = award_confirm(rfp=half_scored, actor=evaluator)

    assert award.request.override_reason == OVERRIDE
    assert (award.request.sheets_submitted, award.request.sheets_expected) == (1, 2)
    created = AuditEvent.objects.get(action="award.created")
    assert created.data["override_reason"] == OVERRIDE
    assert created.data["requested_by"] == buyer.username


def test_the_override_reason_is_shown_in_every_notice(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any, vendor_b: Any
) -> None:
    _request(half_scored, vendor_a_org, buyer, override_reason=OVERRIDE)
    award_confirm(rfp=half_scored, actor=evaluator)

    request_note = Notification.objects.get(
        recipient=evaluator, subject__contains="Confirm"
    )
    vendor_note = Notification.objects.get(recipient=vendor_b)
    team_note = Notification.objects.get(recipient=buyer)
    for note in (request_note, vendor_note, team_note):
        assert OVERRIDE in note.body


def test_a_reason_is_not_kept_when_every_sheet_is_in(
    scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    request = _request(scored, vendor_a_org, buyer, override_reason=OVERRIDE)

    assert request.override_reason == ""


def test_an_evaluator_with_an_open_sheet_cannot_confirm(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any, buyer_org: Organisation
) -> None:
    slow = half_scored.buyer_organisation.memberships.get(user__username="slow").user
    score_all(half_scored, slow, submitted=False)
    _request(half_scored, vendor_a_org, buyer, override_reason=OVERRIDE)

    with pytest.raises(StateConflict, match="Submit your own score sheet"):
        award_confirm(rfp=half_scored, actor=slow)

    assert not Award.objects.exists()


def test_an_evaluator_who_never_scored_cannot_confirm(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    slow = half_scored.buyer_organisation.memberships.get(user__username="slow").user
    _request(half_scored, vendor_a_org, buyer, override_reason=OVERRIDE)

    with pytest.raises(StateConflict, match="Submit your own score sheet"):
        award_confirm(rfp=half_scored, actor=slow)

    assert AwardRequest.objects.get().status == S.PENDING


def test_the_requester_withdraws_and_a_new_request_may_follow(
    scored: Rfp, vendor_a_org: Any, vendor_b_org: Any, buyer: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    award_cancel(rfp=scored, actor=buyer, reason="Wrong bid chosen.")
    again = _request(scored, vendor_b_org, buyer)

    first = AwardRequest.objects.get(status=S.CANCELLED)
    assert (first.cancelled_by, first.cancel_reason) == (buyer, "Wrong bid chosen.")
    assert again.status == S.PENDING


def test_another_member_declines_and_the_requester_is_told(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    award_cancel(rfp=scored, actor=evaluator, reason="Scores not final.")

    note = Notification.objects.get(recipient=buyer, subject__contains="cancelled")
    assert "Scores not final." in note.body
    assert Rfp.objects.get(pk=scored.pk).status == Rfp.Status.OPENED


def test_every_step_writes_one_audit_row_in_the_buyer_trail(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(scored, vendor_a_org, buyer)
    award_cancel(rfp=scored, actor=evaluator)
    _request(scored, vendor_a_org, buyer)
    award_confirm(rfp=scored, actor=evaluator)

    actions = list(
        AuditEvent.objects.filter(action__startswith="award.")
        .order_by("id")
        .values_list("action", "actor__username", "organisation__slug")
    )
    assert [(a, who) for a, who, _ in actions] == [
        ("award.requested", "buyer"),
        ("award.request_cancelled", "evaluator"),
        ("award.requested", "buyer"),
        ("award.created", "evaluator"),
    ]
    assert {org for _, _, org in actions} == {scored.buyer_organisation.slug}


def test_the_dashboard_asks_the_others_to_confirm(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any, auditor: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    mine = [a for a in attention_for(evaluator) if a.kind == "award"]
    assert [a.text for a in mine] == [
        "buyer asks you to confirm the award to Acme Flash"
    ]
    assert mine[0].url == f"/rfps/{scored.public_id}/award/"
    assert not [a for a in attention_for(buyer) if a.kind == "award"]
    assert not [a for a in attention_for(auditor) if a.kind == "award"]


# --- page -----------------------------------------------------------------------


def _page(client: Any, rfp: Rfp) -> str:
    return client.get(f"/rfps/{rfp.public_id}/award/").content.decode()


def test_the_confirmer_sees_what_they_sign(
    client_for: Any, scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    html = _page(client_for(evaluator), scored)

    assert 'data-testid="award-pending-request"' in html
    assert 'data-testid="award-confirm"' in html
    assert "All 1 evaluator submitted their score sheets." in html
    row = html.split('data-testid="award-summary-acme-flash"')[1].split("</tr>")[0]
    assert 'data-testid="award-summary-rank">1<' in row
    assert "80.00" in row
    assert "proposed winner" in row


def test_the_requester_sees_the_request_but_no_confirm_button(
    client_for: Any, scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    html = _page(client_for(buyer), scored)

    assert 'data-testid="award-pending-mine"' in html
    assert 'data-testid="award-confirm"' not in html
    assert "Withdraw my request" in html


def test_the_page_asks_for_a_reason_while_sheets_are_missing(
    client_for: Any, half_scored: Rfp, vendor_a_org: Any, buyer: Any
) -> None:
    data = {"bid": str(bid_of(half_scored, vendor_a_org).public_id)}
    data["rationale"] = RATIONALE
    client = client_for(buyer)

    html = _page(client, half_scored)
    refused = client.post(f"/rfps/{half_scored.public_id}/award/", data)
    accepted = client.post(
        f"/rfps/{half_scored.public_id}/award/", data | {"override_reason": OVERRIDE}
    )

    assert 'data-testid="award-override-input"' in html
    assert "not yet: slow" in html
    assert refused.status_code == 400
    assert accepted.status_code == 302
    assert AwardRequest.objects.get().override_reason == OVERRIDE


def test_the_award_page_shows_both_people_and_the_override(
    client_for: Any, half_scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(half_scored, vendor_a_org, buyer, override_reason=OVERRIDE)
    client_for(evaluator).post(f"/rfps/{half_scored.public_id}/award/confirm/")

    html = _page(client_for(buyer), half_scored)

    assert "by buyer" in html.split('data-testid="award-requested-by"')[1][:80]
    assert "by evaluator" in html.split('data-testid="award-confirmed-by"')[1][:80]
    assert OVERRIDE in html.split('data-testid="award-override"')[1][:300]


def test_a_buyer_side_member_declines_on_the_page(
    client_for: Any, scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    response = client_for(evaluator).post(
        f"/rfps/{scored.public_id}/award/cancel/", {"reason": "Not yet."}, follow=True
    )

    assert "Award request cancelled." in response.content.decode()
    assert AwardRequest.objects.get().status == S.CANCELLED


@pytest.mark.parametrize("who", ["auditor", "labops"])
def test_award_steps_are_forbidden_outside_the_buyer_side(
    client_for: Any,
    scored: Rfp,
    vendor_a_org: Any,
    buyer: Any,
    who: str,
    request: Any,
) -> None:
    _request(scored, vendor_a_org, buyer)
    client = client_for(request.getfixturevalue(who))

    for step in ("confirm", "cancel"):
        response = client.post(f"/rfps/{scored.public_id}/award/{step}/")
        assert response.status_code == 403
    assert AwardRequest.objects.get().status == S.PENDING


# --- API ------------------------------------------------------------------------


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _url(rfp: Rfp, step: str = "") -> str:
    return f"/api/v1/rfps/{rfp.public_id}/award/{step}"


def test_award_over_the_api_takes_two_people(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    data = {"bid": str(bid_of(scored, vendor_a_org).public_id), "rationale": RATIONALE}

    requested = _api(buyer).post(_url(scored, "request/"), data, format="json")
    pending = _api(evaluator).get(_url(scored, "request/"))
    by_requester = _api(buyer).post(_url(scored, "confirm/"))
    confirmed = _api(evaluator).post(_url(scored, "confirm/"))

    assert requested.status_code == 201
    assert requested.json()["status"] == "pending"
    body = pending.json()
    assert body["sheets"] == {
        "submitted": 1,
        "expected": 1,
        "complete": True,
        "missing": [],
    }
    assert [
        (r["bid"]["vendor"]["slug"], r["rank"], r["weighted_total"])
        for r in body["ranking"]
    ] == [("acme-flash", 1, "80.00"), ("bolt-storage", 2, "60.00")]
    assert by_requester.status_code == 400
    assert by_requester.json()["code"] == "award_same_person"
    assert confirmed.status_code == 200
    assert (confirmed.json()["requested_by"], confirmed.json()["decided_by"]) == (
        "buyer",
        "evaluator",
    )


def test_the_api_refuses_incomplete_sheets_and_shows_the_override(
    half_scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    data = {"bid": str(bid_of(half_scored, vendor_a_org).public_id)}
    data["rationale"] = RATIONALE

    refused = _api(buyer).post(_url(half_scored, "request/"), data, format="json")
    data["override_reason"] = OVERRIDE
    _api(buyer).post(_url(half_scored, "request/"), data, format="json")
    _api(evaluator).post(_url(half_scored, "confirm/"))
    award = _api(buyer).get(_url(half_scored))

    assert refused.status_code == 409
    assert refused.json()["code"] == "sheets_incomplete"
    assert award.json()["override_reason"] == OVERRIDE
    assert (award.json()["sheets_submitted"], award.json()["sheets_expected"]) == (1, 2)


def test_the_api_cancels_and_then_has_nothing_pending(
    scored: Rfp, vendor_a_org: Any, buyer: Any, evaluator: Any
) -> None:
    _request(scored, vendor_a_org, buyer)

    cancelled = _api(evaluator).post(
        _url(scored, "cancel/"), {"reason": "Not yet."}, format="json"
    )
    again = _api(evaluator).post(_url(scored, "cancel/"))

    assert cancelled.status_code == 200
    assert cancelled.json()["cancelled_by"] == "evaluator"
    assert again.status_code == 409
    assert _api(buyer).get(_url(scored, "request/")).status_code == 404


def test_the_api_lets_only_buyers_request(
    scored: Rfp, vendor_a_org: Any, evaluator: Any, vendor_a: Any, auditor: Any
) -> None:
    data = {"bid": str(bid_of(scored, vendor_a_org).public_id), "rationale": RATIONALE}

    codes = [
        _api(user).post(_url(scored, "request/"), data, format="json").status_code
        for user in (evaluator, vendor_a, auditor)
    ]

    assert codes == [403, 404, 403]
    assert not AwardRequest.objects.exists()


def test_a_second_buyer_may_confirm_as_well(
    scored: Rfp, vendor_a_org: Any, buyer: Any, buyer_org: Organisation
) -> None:
    colleague = UserFactory.create(username="colleague")
    MembershipFactory.create(user=colleague, organisation=buyer_org, role=Role.BUYER)
    _request(scored, vendor_a_org, buyer)

    award = award_confirm(rfp=scored, actor=colleague)

    assert award.decided_by == colleague
