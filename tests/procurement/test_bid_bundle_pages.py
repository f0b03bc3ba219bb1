"""The bid form takes its claims and cost inputs from the chosen signed bundle;
differences from the bundle show to the vendor on its own bid pages and to the
buyer side once the bids are opened (bid page and comparison matrix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.models import Bid, Rfp
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.opening import bid_opening_confirm, bid_opening_request
from tests.procurement.factories_bids import submit, tender
from tests.procurement.test_bid_bundle import MANIFEST, example_bundle

pytestmark = pytest.mark.django_db

FLAG = "differs from the signed bundle: bundle says 2400.0 ms"


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Organisation, clock: Any) -> Rfp:
    return tender(buyer_org, vendor_a_org)


@pytest.fixture
def bundle(rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path) -> Bundle:
    return example_bundle(rfp, vendor_a_org, tmp_path)


def _flagged_bid(rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation) -> Bid:
    typed = [{**MANIFEST["claims"][1], "value": 1900.0}]
    submit(rfp, vendor_a, vendor_a_org, claims=typed, cost_inputs={})
    return Bid.objects.get()


def _open(rfp: Rfp, buyer: Any, evaluator: Any, clock: Any) -> Rfp:
    clock.advance(days=15)
    rfp = rfp_apply_deadlines(rfp=rfp)
    bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)
    rfp.refresh_from_db()
    return rfp


def test_bid_form_prefills_the_bundles_seven_claims_and_cost_model(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, client_for: Any
) -> None:
    response = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bid/")

    form = response.context["form"]
    lines = form.initial["claims"].splitlines()
    assert len(lines) == 7
    assert lines[0] == "ttft_ms p99 4000.0 ms cold-c32-b8"
    assert form.initial["hardware_cost"] == "1840000.00"
    assert form.initial["bundle"] == str(bundle.public_id)
    assert 'data-testid="bid-bundle"' in response.content.decode()


def test_bid_form_submitted_as_prefilled_binds_the_bundle_without_flags(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, client_for: Any
) -> None:
    client = client_for(vendor_a)
    form = client.get(f"/rfps/{rfp.public_id}/bid/").context["form"]
    data = {k: v for k, v in form.initial.items() if k != "remove_documents"}

    response = client.post(f"/rfps/{rfp.public_id}/bid/", data)

    assert response.status_code == 302
    bid = Bid.objects.get()
    assert str(bid.bundle_public_id) == str(bundle.public_id)
    assert len(bid.claimed_metrics) == 7
    assert bid.bundle_differences == {}


def test_bid_form_refuses_a_bundle_not_offered(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, client_for: Any
) -> None:
    client = client_for(vendor_a)
    form = client.get(f"/rfps/{rfp.public_id}/bid/").context["form"]
    data = {**form.initial, "bundle": "00000000-0000-0000-0000-000000000000"}
    data.pop("remove_documents", None)

    response = client.post(f"/rfps/{rfp.public_id}/bid/", data)

    assert response.status_code == 200
    assert response.context["form"].errors["bundle"]
    assert not Bid.objects.exists()


def test_vendor_sees_the_difference_on_its_own_bid_pages(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    bid = _flagged_bid(rfp, vendor_a, vendor_a_org)
    client = client_for(vendor_a)

    tab = client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    page = client.get(f"/rfps/{rfp.public_id}/bids/{bid.public_id}/").content.decode()

    assert "1 value differs from the signed bundle" in tab
    assert bundle.sha256[:12] in tab
    assert FLAG in page
    assert bundle.sha256 in page


def test_buyer_sees_the_difference_after_opening_on_bid_page_and_matrix(
    rfp: Rfp,
    bundle: Bundle,
    vendor_a: Any,
    vendor_a_org: Organisation,
    buyer: Any,
    evaluator: Any,
    clock: Any,
    client_for: Any,
) -> None:
    bid = _flagged_bid(rfp, vendor_a, vendor_a_org)
    rfp.metrics.create(name="ttft_ms")
    rfp = _open(rfp, buyer, evaluator, clock)
    client = client_for(buyer)

    page = client.get(f"/rfps/{rfp.public_id}/bids/{bid.public_id}/").content.decode()
    matrix = client.get(f"/rfps/{rfp.public_id}/comparison/").content.decode()
    listing = client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()

    assert FLAG in page
    assert bundle.sha256 in page
    assert FLAG in matrix
    assert "1 differs from the signed bundle" in listing


def test_loading_another_bundle_refills_its_claims_and_keeps_the_cover_note(
    rfp: Rfp,
    bundle: Bundle,
    vendor_a: Any,
    vendor_a_org: Organisation,
    tmp_path: Path,
    client_for: Any,
    clock: Any,
) -> None:
    clock.advance(minutes=5)
    example_bundle(rfp, vendor_a_org, tmp_path)  # newer: pre-filled by default
    two_claims = {**bundle.manifest, "claims": MANIFEST["claims"][:2]}
    Bundle.objects.filter(pk=bundle.pk).update(manifest=two_claims)  # the older one

    response = client_for(vendor_a).post(
        f"/rfps/{rfp.public_id}/bid/",
        {"load": "1", "bundle": str(bundle.public_id), "cover_note": "Draft note"},
    )

    form = response.context["form"]
    assert response.status_code == 200
    assert not form.is_bound
    assert form.initial["bundle"] == str(bundle.public_id)
    assert len(form.initial["claims"].splitlines()) == 2
    assert form.initial["cover_note"] == "Draft note"
    assert not Bid.objects.exists()


def test_completeness_in_the_matrix_follows_the_bundle_the_bid_names(
    rfp: Rfp,
    bundle: Bundle,
    vendor_a: Any,
    vendor_a_org: Organisation,
    buyer: Any,
    evaluator: Any,
    tmp_path: Path,
    clock: Any,
    client_for: Any,
) -> None:
    submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))
    clock.advance(minutes=5)
    newer = example_bundle(rfp, vendor_a_org, tmp_path)  # uploaded, not bound
    tab = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    rfp = _open(rfp, buyer, evaluator, clock)

    matrix = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison/")

    row = matrix.context["comparison"].rows[0]
    assert row.evidence.summary.bundle_id == str(bundle.public_id)
    assert str(newer.public_id) not in matrix.content.decode()
    assert 'data-testid="newer-bundle"' in tab
