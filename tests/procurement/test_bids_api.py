"""Bids over /api/v1/: the vendor's own bid, documents, receipts."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.models import Bid, BidDocument, CostModelInput, Rfp
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_bids import (
    COST_INPUTS,
    COVER_NOTE,
    BidFactory,
    submit,
    tender,
    upload,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    return tender(buyer_org, vendor_a_org, vendor_b_org)


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _body(**overrides: Any) -> dict[str, Any]:
    claims = [{"metric": "ttft_ms", "stat": "p99", "value": 181.25, "unit": "ms"}]
    costs = {k: str(v) if not isinstance(v, int) else v for k, v in COST_INPUTS.items()}
    return {
        "cover_note": COVER_NOTE,
        "claims": claims,
        "cost_inputs": costs,
        **overrides,
    }


def test_post_bid_submits_then_replaces(rfp: Rfp, vendor_a: Any) -> None:
    url = f"/api/v1/rfps/{rfp.public_id}/bid/"

    first = _api(vendor_a).post(url, _body(), format="json")
    second = _api(vendor_a).post(url, _body(cover_note="v2"), format="json")

    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["receipt"]["action"] == "submitted"
    assert second.json()["bid"]["version"] == 2
    assert second.json()["bid"]["commitment"] == Bid.objects.get().commitment
    assert first.json()["receipt"]["commitment"] != second.json()["bid"]["commitment"]


def test_get_bid_returns_the_callers_own_bid(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)

    body = _api(vendor_a).get(f"/api/v1/rfps/{rfp.public_id}/bid/").json()

    assert body["cover_note"] == COVER_NOTE
    assert body["cost_inputs"]["hardware_cost"] == "987654.00"
    assert body["claims"][0]["value"] == 181.25


def test_get_bid_is_404_without_a_bid(rfp: Rfp, vendor_b: Any) -> None:
    response = _api(vendor_b).get(f"/api/v1/rfps/{rfp.public_id}/bid/")

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        (
            {"claims": [{"metric": "ttft_ms", "stat": "p42", "value": 1}]},
            "claims[0].stat",
        ),
        (
            {"claims": [{"metric": "ttft_ms", "stat": "p99", "value": "x"}]},
            "claims[0].value",
        ),
        (
            {"claims": [{"metric": "TTFT", "stat": "p99", "value": 1}]},
            "claims[0].metric",
        ),
        ({"cost_inputs": {"currency": "EUR"}}, "cost_inputs.hardware_cost"),
        ({"cost_inputs": None}, "cost_inputs"),
    ],
)
def test_post_bid_rejects_bad_input_with_problems(
    rfp: Rfp, vendor_a: Any, overrides: dict[str, Any], path: str
) -> None:
    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bid/", _body(**overrides), format="json"
    )

    assert response.status_code == 400
    paths = [p.get("path", "") for p in response.json()["problems"]]
    assert path in paths
    assert not Bid.objects.exists()


def test_post_bid_after_the_deadline_is_refused(
    rfp: Rfp, vendor_a: Any, clock: Any
) -> None:
    clock.advance(days=15)

    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bid/", _body(), format="json"
    )

    assert response.status_code == 400
    assert response.json()["code"] in {"deadline_passed", "rfp_not_published"}


def test_post_bid_is_forbidden_to_the_buyer_and_unknown_to_outsiders(
    rfp: Rfp, buyer: Any, outsider: Any
) -> None:
    url = f"/api/v1/rfps/{rfp.public_id}/bid/"

    assert _api(buyer).post(url, _body(), format="json").status_code == 403
    assert _api(outsider).post(url, _body(), format="json").status_code == 404


def test_document_upload_makes_a_new_version_with_the_file(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)

    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bid/documents/",
        {"file": upload("env.json", b'{"kernel": "6.8"}')},
        format="multipart",
    )

    assert response.status_code == 201
    bid = response.json()["bid"]
    assert bid["version"] == 2
    assert (
        bid["documents"][0]["sha256"]
        == hashlib.sha256(b'{"kernel": "6.8"}').hexdigest()
    )
    assert response.json()["receipt"]["contents"]["documents"][0]["name"] == "env.json"


def test_document_upload_needs_a_bid_first(rfp: Rfp, vendor_a: Any) -> None:
    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bid/documents/",
        {"file": upload()},
        format="multipart",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "no_bid"


def test_document_upload_over_the_limit_names_the_limit(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, settings: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    settings.PROCUREMENT_BID_DOCUMENT_MAX_BYTES = 4

    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bid/documents/",
        {"file": upload(content=b"12345")},
        format="multipart",
    )

    assert response.status_code == 400
    assert response.json()["message"] == (
        "“report.pdf” is larger than 4\xa0bytes, the limit per document."
    )


def test_document_download_api_is_the_bidders_only(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, vendor_b: Any, buyer: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org, files=(upload(content=b"trace"),))
    bid = Bid.objects.get()
    digest = hashlib.sha256(b"trace").hexdigest()
    url = f"/api/v1/bids/{bid.public_id}/documents/{digest}/"

    response = _api(vendor_a).get(url)

    assert response.getvalue() == b"trace"
    assert _api(vendor_b).get(url).status_code == 404
    assert _api(buyer).get(url).status_code == 404


def test_withdraw_then_withdraw_again_is_409(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    url = f"/api/v1/rfps/{rfp.public_id}/bid/withdraw/"

    first = _api(vendor_a).post(url)
    second = _api(vendor_a).post(url)

    assert first.status_code == 200
    assert first.json()["bid"]["status"] == "withdrawn"
    assert second.status_code == 409


def test_reconfirm_without_an_addendum_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)

    response = _api(vendor_a).post(f"/api/v1/rfps/{rfp.public_id}/bid/reconfirm/")

    assert response.status_code == 400
    assert response.json()["code"] == "reconfirmation_not_needed"


def test_receipts_api_lists_the_bidders_receipts_newest_first(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    submit(rfp, vendor_a, vendor_a_org, cover_note="v2")
    bid = Bid.objects.get()

    body = _api(vendor_a).get(f"/api/v1/bids/{bid.public_id}/receipts/").json()

    assert body["count"] == 2
    assert [r["action"] for r in body["results"]] == ["replaced", "submitted"]
    assert body["results"][0]["contents"]["cover_note"] == "v2"


@pytest.mark.parametrize("persona", ["vendor_b", "buyer", "evaluator", "outsider"])
def test_receipts_api_is_404_for_anyone_else(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, persona: str, request: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    bid = Bid.objects.get()

    api = _api(request.getfixturevalue(persona))

    assert api.get(f"/api/v1/bids/{bid.public_id}/receipts/").status_code == 404
    assert api.get(f"/api/v1/bids/{bid.public_id}/").status_code == 404


def test_bid_list_api_is_forbidden_to_vendors(rfp: Rfp, vendor_a: Any) -> None:
    response = _api(vendor_a).get(f"/api/v1/rfps/{rfp.public_id}/bids/")

    assert response.status_code == 403


def _opened_with_bids(rfp: Rfp, count: int) -> None:
    for _ in range(count):
        bid = BidFactory.create(rfp=rfp)
        CostModelInput.objects.create(bid=bid, **COST_INPUTS)
        BidDocument.objects.create(
            bid=bid,
            name="r.pdf",
            sha256="0" * 64,
            size=1,
            storage_key="bids/x",
            uploaded_at=bid.submitted_at,
        )


def test_opened_bid_list_api_queries_do_not_grow_with_bids(
    buyer_org: Organisation, buyer: Any
) -> None:
    small = RfpFactory.create(buyer_organisation=buyer_org, status=Rfp.Status.OPENED)
    large = RfpFactory.create(buyer_organisation=buyer_org, status=Rfp.Status.OPENED)
    _opened_with_bids(small, 2)
    _opened_with_bids(large, 20)
    api = _api(buyer)

    with CaptureQueriesContext(connection) as few:
        assert len(api.get(f"/api/v1/rfps/{small.public_id}/bids/").json()["bids"]) == 2
    with CaptureQueriesContext(connection) as many:
        assert (
            len(api.get(f"/api/v1/rfps/{large.public_id}/bids/").json()["bids"]) == 20
        )

    assert len(many.captured_queries) == len(few.captured_queries)
