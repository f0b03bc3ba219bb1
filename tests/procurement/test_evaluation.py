"""Scoring services and the evaluator workspace page."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.exceptions import StateConflict
from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp, Score, ScoreSheet
from procurement.services.evaluation import (
    ScoreEntry,
    score_sheet_save,
    score_sheet_submit,
)
from tests.procurement.factories_evaluation import (
    BidFactory,
    bid_of,
    evaluator_in,
    opened_rfp,
    score_all,
    vendor_orgs,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])


def _entries(
    rfp: Rfp, value: int = 7, why: str = "Harness re-ran cleanly."
) -> list[ScoreEntry]:
    return [
        ScoreEntry(bid.public_id, criterion.pk, value, why)
        for bid in rfp.bids.filter(status=Bid.Status.SUBMITTED)
        for criterion in rfp.criteria.all()
    ]


def _page(client: Any, rfp: Rfp) -> Any:
    return client.get(f"/rfps/{rfp.public_id}/evaluation/")


# --- services -------------------------------------------------------------------


def test_save_keeps_a_partial_draft(evaluator: Any, rfp: Rfp) -> None:
    sheet = score_sheet_save(rfp=rfp, entries=_entries(rfp)[:1], actor=evaluator)

    assert sheet.submitted_at is None
    assert sheet.scores.count() == 1
    event = AuditEvent.objects.get(action="score_sheet.saved")
    assert event.data == {"rfp": rfp.reference, "scored": 1}


def test_save_replaces_the_previous_draft(evaluator: Any, rfp: Rfp) -> None:
    score_sheet_save(rfp=rfp, entries=_entries(rfp, 3), actor=evaluator)

    score_sheet_save(rfp=rfp, entries=_entries(rfp, 9)[:2], actor=evaluator)

    assert sorted(Score.objects.values_list("value", flat=True)) == [9, 9]
    assert ScoreSheet.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"justification": "  "}, "justification"),
        ({"value": 11}, "from 0 to 10"),
        ({"criterion": 999999}, "No such criterion"),
    ],
)
def test_save_refuses_a_bad_score_and_saves_nothing(
    evaluator: Any, rfp: Rfp, change: dict[str, Any], message: str
) -> None:
    entries = _entries(rfp)
    entries[1] = ScoreEntry(**(vars(entries[1]) | change))

    with pytest.raises(ProcurementError) as error:
        score_sheet_save(rfp=rfp, entries=entries, actor=evaluator)

    assert error.value.problems[0].path == "scores[1]"
    assert message in error.value.problems[0].message
    assert not Score.objects.exists()


def test_save_refuses_the_same_cell_twice(evaluator: Any, rfp: Rfp) -> None:
    entry = _entries(rfp)[0]

    with pytest.raises(ProcurementError, match="problems"):
        score_sheet_save(rfp=rfp, entries=[entry, entry], actor=evaluator)


def test_save_refuses_a_bid_of_another_rfp(
    evaluator: Any, rfp: Rfp, buyer_org: Any
) -> None:
    other = BidFactory.create(rfp=opened_rfp(buyer_org, []))
    entry = ScoreEntry(other.public_id, rfp.criteria.first().pk, 5, "x")

    with pytest.raises(ProcurementError) as error:
        score_sheet_save(rfp=rfp, entries=[entry], actor=evaluator)

    assert error.value.problems[0].message == "No such bid on this RFP."


def test_save_refuses_a_withdrawn_bid(
    evaluator: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    Bid.objects.filter(vendor_organisation=vendor_b_org).update(status="withdrawn")
    entry = ScoreEntry(
        bid_of(rfp, vendor_b_org).public_id, rfp.criteria.first().pk, 5, "x"
    )

    with pytest.raises(ProcurementError) as error:
        score_sheet_save(rfp=rfp, entries=[entry], actor=evaluator)

    assert "not evaluated" in error.value.problems[0].message


@pytest.mark.parametrize(
    "status", [Rfp.Status.CLOSED, Rfp.Status.AWARDED, Rfp.Status.CANCELLED]
)
def test_save_is_refused_unless_the_rfp_is_opened(
    evaluator: Any, rfp: Rfp, status: str
) -> None:
    entries = _entries(rfp)
    Rfp.objects.filter(pk=rfp.pk).update(status=status)

    with pytest.raises(StateConflict):
        score_sheet_save(rfp=rfp, entries=entries, actor=evaluator)

    assert not ScoreSheet.objects.exists()


def test_submit_lists_every_missing_score(
    evaluator: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    score_sheet_save(rfp=rfp, entries=_entries(rfp)[:3], actor=evaluator)

    with pytest.raises(ProcurementError, match="1 score") as error:
        score_sheet_submit(rfp=rfp, actor=evaluator)

    (problem,) = error.value.problems
    assert problem.code == "missing_score"
    assert "TCO: not scored yet" in problem.message
    assert ScoreSheet.objects.get().submitted_at is None


def test_submit_without_a_sheet_lists_everything(evaluator: Any, rfp: Rfp) -> None:
    with pytest.raises(ProcurementError) as error:
        score_sheet_submit(rfp=rfp, actor=evaluator)

    assert len(error.value.problems) == 4  # 2 bids x 2 criteria


def test_submit_ignores_withdrawn_bids(
    evaluator: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    Bid.objects.filter(vendor_organisation=vendor_b_org).update(status="withdrawn")
    score_sheet_save(rfp=rfp, entries=_entries(rfp), actor=evaluator)

    sheet = score_sheet_submit(rfp=rfp, actor=evaluator)

    assert sheet.submitted_at is not None


def test_submit_locks_the_sheet_at_clock_time(
    evaluator: Any, rfp: Rfp, clock: Any
) -> None:
    score_sheet_save(rfp=rfp, entries=_entries(rfp), actor=evaluator)

    sheet = score_sheet_submit(rfp=rfp, actor=evaluator)

    assert sheet.submitted_at == clock.now()
    assert AuditEvent.objects.filter(action="score_sheet.submitted").count() == 1
    with pytest.raises(StateConflict, match="cannot be changed"):
        score_sheet_save(rfp=rfp, entries=_entries(rfp, 1), actor=evaluator)
    with pytest.raises(StateConflict):
        score_sheet_submit(rfp=rfp, actor=evaluator)


def test_submit_tells_the_buyers_how_many_have_submitted(
    evaluator: Any, buyer: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    evaluator_in(buyer_org, "second-evaluator")
    score_sheet_save(rfp=rfp, entries=_entries(rfp), actor=evaluator)

    score_sheet_submit(rfp=rfp, actor=evaluator)

    note = Notification.objects.get(recipient=buyer)
    assert note.subject == f"{rfp.reference}: evaluator submitted scores (1 of 2)"
    assert not Notification.objects.filter(recipient=evaluator).exists()


# --- page -----------------------------------------------------------------------


def test_page_shows_the_evaluator_a_sheet_per_bid(
    client_for: Any, evaluator: Any, rfp: Rfp
) -> None:
    html = _page(client_for(evaluator), rfp).content.decode()

    assert 'data-testid="score-sheet-form"' in html
    assert 'data-testid="score-acme-flash-reproducibility"' in html
    assert 'data-testid="justification-bolt-storage-tco"' in html


def test_page_is_404_for_vendors_and_outsiders(
    client_for: Any, vendor_a: Any, outsider: Any, rfp: Rfp
) -> None:
    assert _page(client_for(vendor_a), rfp).status_code == 404
    assert _page(client_for(outsider), rfp).status_code == 404


def test_page_is_forbidden_to_auditors(client_for: Any, auditor: Any, rfp: Rfp) -> None:
    assert _page(client_for(auditor), rfp).status_code == 403


def test_page_reveals_nothing_while_sealed(
    client_for: Any, evaluator: Any, rfp: Rfp
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    html = _page(client_for(evaluator), rfp).content.decode()

    assert 'data-testid="evaluation-sealed"' in html
    assert "Acme Flash" not in html
    assert "Bolt Storage" not in html


def test_evaluator_does_not_see_others_scores_before_submitting(
    client_for: Any, evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 9)
    Score.objects.update(justification="Secret reasoning of eve.")

    html = _page(client_for(evaluator), rfp).content.decode()

    assert "Secret reasoning of eve." not in html
    assert 'data-testid="consensus-hidden"' in html
    assert "once you have submitted your own score sheet" in html


def test_evaluator_sees_the_consensus_after_submitting(
    client_for: Any, evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 9)
    score_all(rfp, evaluator, 3)

    html = _page(client_for(evaluator), rfp).content.decode()

    assert 'data-testid="consensus-table"' in html
    assert "6.00" in html  # mean of 9 and 3
    assert 'data-testid="disagreement"' in html  # spread 6
    assert 'data-testid="score-sheet-form"' not in html


def test_buyer_sees_progress_but_never_drafts(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    score_all(rfp, evaluator, 7, submitted=False)
    Score.objects.update(justification="Draft thoughts.")

    html = _page(client_for(buyer), rfp).content.decode()

    assert 'data-testid="progress-evaluator"' in html
    assert "4 of 4" in html
    assert "Draft thoughts." not in html
    assert "No score sheet has been submitted yet" in html


def test_buyer_sees_a_provisional_consensus(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    evaluator_in(buyer_org, "eve")
    score_all(rfp, evaluator, 7)

    html = _page(client_for(buyer), rfp).content.decode()

    assert 'data-testid="consensus-provisional"' in html
    assert "1 of 2 evaluators" in html


def test_page_post_saves_a_draft(
    client_for: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    bid, criterion = bid_of(rfp, vendor_a_org), rfp.criteria.first()
    key = f"{bid.public_id}-{criterion.pk}"
    data = {
        f"value-{key}": "8",
        f"justification-{key}": "Complete bundle.",
        "action": "save",
    }

    response = client_for(evaluator).post(f"/rfps/{rfp.public_id}/evaluation/", data)

    assert response.status_code == 302
    assert Score.objects.get().value == 8


def test_page_post_refuses_a_score_without_justification(
    client_for: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    key = f"{bid_of(rfp, vendor_a_org).public_id}-{rfp.criteria.first().pk}"

    response = client_for(evaluator).post(
        f"/rfps/{rfp.public_id}/evaluation/", {f"value-{key}": "8", "action": "save"}
    )

    assert response.status_code == 400
    assert "Justify this score." in response.content.decode()
    assert not Score.objects.exists()


def test_page_post_submit_with_gaps_keeps_the_draft(
    client_for: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    key = f"{bid_of(rfp, vendor_a_org).public_id}-{rfp.criteria.first().pk}"
    data = {f"value-{key}": "8", f"justification-{key}": "Good.", "action": "submit"}

    response = client_for(evaluator).post(
        f"/rfps/{rfp.public_id}/evaluation/", data, follow=True
    )

    assert "3 score(s) missing" in response.content.decode()
    assert ScoreSheet.objects.get().submitted_at is None
    assert Score.objects.count() == 1


def test_page_post_is_forbidden_to_buyers(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/evaluation/", {})

    assert response.status_code == 403


def test_page_post_is_refused_after_the_award(
    client_for: Any, evaluator: Any, rfp: Rfp
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.AWARDED)

    response = client_for(evaluator).post(
        f"/rfps/{rfp.public_id}/evaluation/", {"action": "save"}, follow=True
    )

    assert "only while the bids are opened" in response.content.decode()
    assert not ScoreSheet.objects.exists()


@pytest.mark.parametrize("persona", ["evaluator", "buyer"])
def test_page_query_count_does_not_grow_with_vendors(
    client_for: Any,
    buyer_org: Organisation,
    django_assert_num_queries: Any,
    request: Any,
    persona: str,
) -> None:
    eve = evaluator_in(buyer_org, "eve")
    small = opened_rfp(buyer_org, vendor_orgs(2), reference="RFP-Q-002")
    large = opened_rfp(buyer_org, vendor_orgs(20), reference="RFP-Q-020")
    for rfp in (small, large):
        score_all(rfp, eve, 6)
    client = client_for(request.getfixturevalue(persona))
    _page(client, small)  # warm the session and content-type caches
    with CaptureQueriesContext(connection) as two_vendors:
        _page(client, small)

    with django_assert_num_queries(len(two_vendors)):
        assert _page(client, large).status_code == 200


def _reads_submitted_scores(client: Any, rfp: Rfp) -> bool:
    """Whether the page read the submitted scores' justifications (the
    consensus's query: its sheets submitted)."""
    with CaptureQueriesContext(connection) as queries:
        assert _page(client, rfp).status_code == 200
    return any(
        '"procurement_score"."justification"' in q["sql"]
        and '"submitted_at" IS NOT NULL' in q["sql"]
        for q in queries.captured_queries
    )


def test_a_drafting_evaluators_page_does_not_read_the_consensus_it_hides(
    client_for: Any, buyer: Any, buyer_org: Organisation, rfp: Rfp
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 6)  # submitted by another
    drafting = evaluator_in(buyer_org, "dora")

    assert not _reads_submitted_scores(client_for(drafting), rfp)
    assert _reads_submitted_scores(client_for(buyer), rfp)  # the buyer sees it
