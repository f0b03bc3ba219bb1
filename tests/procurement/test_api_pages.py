"""The RFP's lists page through the API's one paginator: the opened bids, the
score sheet's bids, the consensus rows, the comparison's and fidelity's vendors,
the TCO formula versions and the invited vendors. A vendor sees only its own
invitation and none of the buyer side's lists."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.models import Rfp
from tests.api.paging import assert_pages
from tests.procurement.factories_evaluation import (
    TcoFormulaFactory,
    evaluator_in,
    opened_rfp,
    score_all,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _url(rfp: Rfp, suffix: str) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/{suffix}"


@pytest.mark.parametrize(
    ("suffix", "rows"),
    [
        ("bids/", "bids"),
        ("consensus/", "rows"),
        ("comparison/", "vendors"),
        ("fidelity/", "vendors"),
        ("tco-formulas/", "results"),
        ("invitations/", "results"),
    ],
)
def test_the_buyers_lists_page(
    buyer: Any, buyer_org: Organisation, rfp: Rfp, suffix: str, rows: str
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eva"))
    TcoFormulaFactory.create(rfp=rfp, version=1, created_by=buyer)
    TcoFormulaFactory.create(rfp=rfp, version=2, created_by=buyer)

    whole = assert_pages(_api(buyer), _url(rfp, suffix), rows)

    assert whole["count"] == 2


def test_the_score_sheet_pages_its_bids_with_their_scores(
    buyer_org: Organisation, rfp: Rfp
) -> None:
    evaluator = evaluator_in(buyer_org, "eva")
    score_all(rfp, evaluator, submitted=False)

    whole = assert_pages(_api(evaluator), _url(rfp, "scores/"), "bids")
    second = _api(evaluator).get(_url(rfp, "scores/"), {"limit": 1, "offset": 1})

    page = second.json()
    (bid,) = page["bids"]
    assert {s["bid"] for s in page["scores"]} == {bid["id"]}
    assert len(page["scores"]) == rfp.criteria.count()
    assert len(whole["scores"]) == 2 * rfp.criteria.count()


def test_a_vendor_sees_its_own_invitation_only(vendor_a: Any, rfp: Rfp) -> None:
    body = _api(vendor_a).get(_url(rfp, "invitations/"), {"limit": 10_000}).json()
    detail = _api(vendor_a).get(_url(rfp, "")).json()

    assert [v["slug"] for v in body["results"]] == ["acme-flash"]
    assert body["count"] == detail["invited_vendor_count"] == 1
    assert [v["slug"] for v in detail["invited_vendors"]] == ["acme-flash"]
    assert detail["invited_vendors_url"] == _url(rfp, "invitations/")


@pytest.mark.parametrize("suffix", ["bids/", "consensus/", "comparison/"])
def test_a_vendor_gets_none_of_the_buyer_sides_lists(
    vendor_a: Any, rfp: Rfp, suffix: str
) -> None:
    response = _api(vendor_a).get(_url(rfp, suffix), {"limit": 10_000})

    assert response.status_code in {403, 404}  # bids: 403; the evaluation's: 404
    assert "bolt-storage" not in response.content.decode()
