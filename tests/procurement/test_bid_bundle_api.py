"""Bid submission over the API names its bundle (``bundle``) and answers with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.models import Bid, Rfp
from tests.procurement.factories_bids import tender
from tests.procurement.test_bid_bundle import MANIFEST, example_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    return tender(buyer_org, vendor_a_org, vendor_b_org)


@pytest.fixture
def bundle(rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path) -> Bundle:
    return example_bundle(rfp, vendor_a_org, tmp_path)


def _post(user: Any, rfp: Rfp, body: dict[str, Any]) -> Any:
    api = APIClient()
    api.force_authenticate(user)
    return api.post(f"/api/v1/rfps/{rfp.public_id}/bid/", body, format="json")


def test_post_bid_with_a_bundle_returns_it_and_takes_its_claims(
    rfp: Rfp, bundle: Bundle, vendor_a: Any
) -> None:
    response = _post(vendor_a, rfp, {"bundle": str(bundle.public_id)})

    body = response.json()
    assert response.status_code == 201, body
    assert body["bid"]["bundle"] == {
        "id": str(bundle.public_id),
        "sha256": bundle.sha256,
        "manifest_sha256": bundle.manifest_sha256,
        "url": f"/api/v1/bundles/{bundle.public_id}/",
    }
    assert body["receipt"]["contents"]["bundle"]["sha256"] == bundle.sha256
    assert len(body["bid"]["claims"]) == len(MANIFEST["claims"]) == 7
    assert body["bid"]["cost_inputs"]["hardware_cost"] == "1840000.00"
    assert body["bid"]["bundle_differences"] == {}


def test_post_bid_flags_a_typed_cost_input_that_differs(
    rfp: Rfp, bundle: Bundle, vendor_a: Any
) -> None:
    response = _post(vendor_a, rfp, {"cost_inputs": {"rack_units": 6}})

    assert response.status_code == 201
    assert response.json()["bid"]["bundle_differences"] == {
        "cost_inputs": {"rack_units": "differs from the signed bundle: bundle says 8"}
    }


def test_post_bid_refuses_another_vendors_bundle_with_a_problem(
    rfp: Rfp, vendor_a: Any, vendor_b_org: Organisation, tmp_path: Path
) -> None:
    theirs = example_bundle(rfp, vendor_b_org, tmp_path)

    response = _post(vendor_a, rfp, {"bundle": str(theirs.public_id)})

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "bundle_not_found"
    assert body["problems"][0]["path"] == "bundle"
    assert not Bid.objects.exists()


def test_openapi_documents_the_bid_bundle() -> None:
    schema = APIClient().get("/api/v1/schema/", {"format": "json"}).json()

    components = schema["components"]["schemas"]
    assert "bundle" in components["BidSubmitInput"]["properties"]
    assert "bundle" in components["Bid"]["properties"]
    assert "claims" not in components["BidSubmitInput"].get("required", [])
