from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.models import Rfp
from tests.procurement.factories import RfpFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return RfpFactory.create(
        reference="RFP-DEMO-1",
        buyer_organisation=buyer_org,
        published=True,
        invited=[vendor_a_org, vendor_b_org],
    )


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _references(user: Any) -> list[str]:
    return [r["reference"] for r in _api(user).get("/api/v1/rfps/").json()["results"]]


def test_invited_vendor_sees_the_rfp_but_not_others(
    vendor_a: Any, demo_rfp: Rfp, buyer_org: Organisation
) -> None:
    RfpFactory.create(
        reference="RFP-NOT-INVITED", buyer_organisation=buyer_org, published=True
    )

    assert _references(vendor_a) == ["RFP-DEMO-1"]


def test_vendor_does_not_see_a_draft_it_is_invited_to(
    vendor_a: Any, vendor_a_org: Any, buyer_org: Organisation
) -> None:
    RfpFactory.create(buyer_organisation=buyer_org, invited=[vendor_a_org])

    assert _references(vendor_a) == []


def test_vendor_sees_only_its_own_invitation_not_competitors(
    vendor_a: Any, demo_rfp: Rfp
) -> None:
    body = _api(vendor_a).get(f"/api/v1/rfps/{demo_rfp.public_id}/").json()

    assert [v["slug"] for v in body["invited_vendors"]] == ["acme-flash"]


def test_buyer_sees_every_invited_vendor_and_own_drafts(
    buyer: Any, demo_rfp: Rfp, buyer_org: Organisation
) -> None:
    RfpFactory.create(reference="RFP-DRAFT-1", buyer_organisation=buyer_org)

    results = _api(buyer).get("/api/v1/rfps/").json()["results"]

    assert {r["reference"] for r in results} == {"RFP-DEMO-1", "RFP-DRAFT-1"}
    demo = next(r for r in results if r["reference"] == "RFP-DEMO-1")
    assert {v["slug"] for v in demo["invited_vendors"]} == {
        "acme-flash",
        "bolt-storage",
    }


@pytest.mark.parametrize("persona", ["labops", "auditor", "evaluator"])
def test_engaged_lab_auditor_and_evaluator_see_the_buyers_rfp(
    persona: str, request: pytest.FixtureRequest, demo_rfp: Rfp
) -> None:
    user = request.getfixturevalue(persona)

    assert _references(user) == ["RFP-DEMO-1"]


def test_other_buyer_gets_404_for_an_rfp_it_may_not_know(
    outsider: Any, demo_rfp: Rfp, client_for: Any
) -> None:
    api_response = _api(outsider).get(f"/api/v1/rfps/{demo_rfp.public_id}/")
    html_response = client_for(outsider).get(f"/rfps/{demo_rfp.public_id}/")

    assert api_response.status_code == 404
    assert api_response.json()["code"] == "not_found"
    assert html_response.status_code == 404
    assert _references(outsider) == []


def test_rfp_detail_page_hides_competitors_from_a_vendor(
    vendor_a: Any, demo_rfp: Rfp, client_for: Any
) -> None:
    response = client_for(vendor_a).get(f"/rfps/{demo_rfp.public_id}/")

    assert response.status_code == 200
    assert "Acme Flash" in response.content.decode()
    assert "Bolt Storage" not in response.content.decode()


def test_rfp_list_is_paginated(buyer: Any, buyer_org: Organisation) -> None:
    RfpFactory.create_batch(3, buyer_organisation=buyer_org)

    body = _api(buyer).get("/api/v1/rfps/", {"limit": 2}).json()

    assert body["count"] == 3
    assert len(body["results"]) == 2
    assert body["next"] is not None


def test_rfp_list_query_count_does_not_grow_with_rows(
    buyer: Any,
    buyer_org: Organisation,
    vendor_a_org: Any,
    django_assert_max_num_queries: Any,
) -> None:
    RfpFactory.create_batch(10, buyer_organisation=buyer_org, invited=[vendor_a_org])

    with django_assert_max_num_queries(12):
        response = _api(buyer).get("/api/v1/rfps/")

    assert response.json()["count"] == 10
