"""Reads never write: every procurement page and API GET, for every persona, on an
RFP whose submission deadline has just passed (which the reads used to close,
with an audit row and a row lock), makes no INSERT, UPDATE or DELETE. The status
by the clock shows at once; the beat task and the write services record it."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from procurement import urls as page_urls
from procurement.api import urls as api_urls
from procurement.models import Bid, BidReceipt, Rfp
from procurement.selectors.rfps import rfp_effective_status, rfp_list_visible_to
from procurement.services.award import award_request
from procurement.tasks import rfp_apply_deadlines_task
from tests.procurement.factories_bids import submit, tender
from tests.procurement.factories_evaluation import bid_of, opened_rfp, score_all
from tests.procurement.factories_rfps import QuestionFactory

pytestmark = pytest.mark.django_db

PERSONAS = ["buyer", "evaluator", "vendor_a", "vendor_b", "auditor", "labops"]
WRITES = ("INSERT", "UPDATE", "DELETE")
RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."


@pytest.fixture
def due(
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b: Any,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    """Published, both vendors bid, a question answered; the deadline passed a
    second ago and nothing recorded it yet."""
    rfp = tender(buyer_org, vendor_a_org, vendor_b_org, min_bids=2)
    submit(rfp, vendor_a, vendor_a_org)
    submit(rfp, vendor_b, vendor_b_org, cover_note="Bolt offer.")
    QuestionFactory.create(rfp=rfp, asked_by_organisation=vendor_a_org, answered=True)
    clock.travel_to(rfp.submission_deadline + timedelta(seconds=1))
    return rfp


@pytest.fixture
def in_award(
    buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any, evaluator: Any,
    buyer: Any,
) -> Rfp:  # fmt: skip
    """Opened, scored, an award request waiting for confirmation."""
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org], reference="RFP-AWD-1")
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    bid = bid_of(rfp, vendor_a_org)
    award_request(rfp=rfp, bid=bid, rationale=RATIONALE, actor=buyer)
    return rfp


def _arguments(rfp: Rfp) -> dict[str, Any]:
    """A value for every URL parameter of the procurement area, on ``rfp``."""
    bid = rfp.bids.order_by("id").first()
    receipt = BidReceipt.objects.filter(bid__rfp=rfp).order_by("id").first()
    question = rfp.clarifications.order_by("id").first()
    return {
        "rfp_id": rfp.public_id,
        "bid_id": bid.public_id if bid else uuid.uuid4(),
        "receipt_id": receipt.public_id if receipt else uuid.uuid4(),
        "clarification_id": question.public_id if question else uuid.uuid4(),
        "template_id": uuid.uuid4(),
        "vendor_slug": "acme-flash",
        "sha256": "0" * 64,
    }


def _fill(
    converters: dict[str, Any], arguments: dict[str, Any], m: re.Match[str]
) -> str:
    return str(converters[m[1]].to_url(arguments[m[1]]))


def _paths(prefix: str, patterns: list[Any], rfp: Rfp) -> list[str]:
    """Each route with its parameters filled in (``<uuid:rfp_id>`` and the like)."""
    arguments = _arguments(rfp)
    paths = []
    for pattern in patterns:
        assert isinstance(pattern, URLPattern)
        converters = pattern.pattern.converters
        fill = partial(_fill, converters, arguments)
        route = re.sub(r"<(?:\w+:)?(\w+)>", fill, str(pattern.pattern))
        paths.append(prefix + route)
    return paths


def _walk(client: Any, paths: list[str]) -> list[str]:
    """GET every path; the writing SQL statements, each with its path."""
    with CaptureQueriesContext(connection) as captured:
        marks = []
        for path in paths:
            before = len(captured.captured_queries)
            client.get(path)
            marks.append((path, before, len(captured.captured_queries)))
    return [
        f"{path}: {q['sql'][:120]}"
        for path, start, end in marks
        for q in captured.captured_queries[start:end]
        if q["sql"].lstrip().upper().startswith(WRITES)
    ]


def _all_paths(rfp: Rfp) -> list[str]:
    return _paths("/rfps/", page_urls.urlpatterns, rfp) + _paths(
        "/api/v1/", api_urls.urlpatterns, rfp
    )


@pytest.mark.parametrize("persona", PERSONAS)
def test_no_procurement_page_or_api_get_writes(
    due: Rfp, in_award: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    user = request.getfixturevalue(persona)
    page, api = client_for(user), APIClient()
    api.force_authenticate(user)
    paths = _all_paths(due) + _all_paths(in_award)

    writes = _walk(page, [p for p in paths if p.startswith("/rfps/")])
    writes += _walk(api, [p for p in paths if p.startswith("/api/")])

    assert writes == []
    assert Rfp.objects.get(pk=due.pk).status == Rfp.Status.PUBLISHED


def test_the_walk_reaches_every_procurement_route(due: Rfp) -> None:
    paths = _all_paths(due)

    assert len(paths) == len(page_urls.urlpatterns) + len(api_urls.urlpatterns)
    assert f"/rfps/{due.public_id}/" in paths
    assert f"/api/v1/rfps/{due.public_id}/bids/" in paths
    assert not [p for p in paths if "<" in p]


def test_a_page_read_after_the_deadline_shows_closed_before_the_sweep(
    due: Rfp, buyer: Any, client_for: Any
) -> None:
    html = client_for(buyer).get(f"/rfps/{due.public_id}/bids/").content.decode()

    assert 'data-testid="rfp-status">Closed' in html
    assert 'data-testid="opening-request"' in html  # the buyer may act on it
    assert Rfp.objects.get(pk=due.pk).status == Rfp.Status.PUBLISHED


def test_the_sweep_then_records_what_the_reads_showed(due: Rfp) -> None:
    a_second_before = due.submission_deadline - timedelta(seconds=1)
    assert rfp_effective_status(due, a_second_before) == Rfp.Status.PUBLISHED

    changed = rfp_apply_deadlines_task()

    assert changed == 1
    assert Rfp.objects.get(pk=due.pk).status == Rfp.Status.CLOSED
    assert AuditEvent.objects.filter(action="rfp.transitioned", data__to="closed")


def test_a_request_to_open_records_the_close_first(
    due: Rfp, buyer: Any, client_for: Any
) -> None:
    client_for(buyer).post(f"/rfps/{due.public_id}/opening/request/")

    due.refresh_from_db()
    assert due.status == Rfp.Status.CLOSED
    assert due.opening.requested_by == buyer


def test_a_bid_post_after_the_deadline_is_refused(
    due: Rfp, vendor_a: Any, client_for: Any
) -> None:
    before = Bid.objects.get(rfp=due, vendor_organisation__slug="acme-flash")

    response = client_for(vendor_a).post(
        f"/rfps/{due.public_id}/bid/withdraw/", follow=True
    )

    assert "submission deadline passed" in response.content.decode()
    after = Bid.objects.get(pk=before.pk)
    assert (after.status, after.commitment) == (before.status, before.commitment)


def test_a_bid_api_post_after_the_deadline_is_refused(due: Rfp, vendor_a: Any) -> None:
    api = APIClient()
    api.force_authenticate(vendor_a)

    response = api.post(f"/api/v1/rfps/{due.public_id}/bid/withdraw/")

    assert response.status_code in (400, 409)
    assert response.json()["code"] in ("deadline_passed", "rfp_not_published")
    assert Bid.objects.filter(rfp=due, status=Bid.Status.WITHDRAWN).count() == 0


def test_an_unanswered_question_keeps_the_rfp_published_by_the_clock(
    due: Rfp, vendor_b_org: Organisation, clock: Any
) -> None:
    QuestionFactory.create(rfp=due, asked_by_organisation=vendor_b_org)

    assert rfp_effective_status(due, clock.now()) == Rfp.Status.PUBLISHED


def test_too_few_bids_read_as_unsuccessful(due: Rfp, buyer: Any, clock: Any) -> None:
    Rfp.objects.filter(pk=due.pk).update(min_bids=3)
    due.refresh_from_db()

    listed = rfp_list_visible_to(buyer).get(pk=due.pk)

    assert rfp_effective_status(due, clock.now()) == Rfp.Status.UNSUCCESSFUL
    assert listed.status_now == Rfp.Status.UNSUCCESSFUL
    assert listed.status == Rfp.Status.PUBLISHED


def test_the_dashboard_shows_the_bids_to_open_by_the_clock(
    due: Rfp, buyer: Any, client_for: Any
) -> None:
    client = client_for(buyer)

    with CaptureQueriesContext(connection) as captured:
        html = client.get("/dashboard/").content.decode()

    panel = html.split('data-testid="panel-bids-to-open"')[1].split("</section>")[0]
    assert due.reference in panel
    assert "Deadline passed: request the opening of the bids" in html
    writes = [q["sql"] for q in captured if q["sql"].upper().startswith(WRITES)]
    assert writes == []
