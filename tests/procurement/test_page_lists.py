"""The buyer-side pages of an opened RFP at N and 3N vendors: the lists are paged
by the one page size (``accounts.lib.paging.PAGE_SIZE``), and no page's query
count grows with the bids."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from procurement.models import Rfp
from tests.procurement.factories_evaluation import (
    CostModelInputFactory,
    evaluator_in,
    opened_rfp,
    score_all,
    vendor_orgs,
)

pytestmark = pytest.mark.django_db

PAGES = ["bids/", "evaluation/", "comparison/", "tco/", "audit/"]


def _tender(buyer_org: Organisation, vendors: list[Any], reference: str) -> Rfp:
    rfp = opened_rfp(buyer_org, vendors, reference=reference)
    for bid in rfp.bids.all():
        CostModelInputFactory.create(bid=bid)
    return rfp


def test_bids_page_shows_the_second_page(
    client_for: Any, buyer: Any, buyer_org: Organisation, monkeypatch: Any
) -> None:
    monkeypatch.setattr("procurement.views.bids.PAGE_SIZE", 2)
    rfp = _tender(buyer_org, vendor_orgs(3), "RFP-P-003")
    client = client_for(buyer)

    first = client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    second = client.get(f"/rfps/{rfp.public_id}/bids/?page=2").content.decode()

    assert first.count('data-testid="bid-row"') == 2
    assert second.count('data-testid="bid-row"') == 1
    assert "Page 2 of 2 · 3 in all" in second


def test_lists_use_the_one_page_size() -> None:
    from accounts.views import users
    from procurement.views import bids, clarifications, rfps

    for module in (bids, clarifications, rfps, users):
        assert module.PAGE_SIZE == PAGE_SIZE


@pytest.mark.parametrize("suffix", PAGES)
def test_page_queries_do_not_grow_with_the_bids(
    client_for: Any, buyer: Any, buyer_org: Organisation, suffix: str
) -> None:
    eve = evaluator_in(buyer_org, "eve")
    small = _tender(buyer_org, vendor_orgs(2), "RFP-P-002")
    large = _tender(
        buyer_org,
        [v for v in vendor_orgs(8) if v not in small.invited_vendors.all()],
        "RFP-P-006",
    )
    for rfp in (small, large):
        score_all(rfp, eve, 6)
    client = client_for(buyer)
    client.get(f"/rfps/{small.public_id}/{suffix}")  # warm the session and caches

    with CaptureQueriesContext(connection) as two:
        client.get(f"/rfps/{small.public_id}/{suffix}")
    with CaptureQueriesContext(connection) as six:
        response = client.get(f"/rfps/{large.public_id}/{suffix}")

    assert response.status_code == 200
    assert len(six) == len(two), [q["sql"] for q in six.captured_queries]
