"""Acceptance 2: sealed bids stay sealed.

Before opening, nothing that a buyer, evaluator, buyer-organisation admin, auditor,
lab operator or platform superuser can request (the bids tab, the bids API, the
admin, their notifications, the audit trails) names a bidder or shows a bid's
content: only the number of bids and their commitment hashes. A vendor never sees
another vendor's bid, receipt or document, by any URL (404).

The tender invites the vendors directly (as a factory), because the invitations
are the buyer's own act; what must never show is what the *bidding* adds,
including which signed bundle a bid names (its public id and digests)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Notification, Organisation, Role
from artifacts.models import Bundle, SigningKey
from procurement.models import Bid, BidDocument, BidReceipt, Rfp
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.opening import bid_opening_confirm, bid_opening_request
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.procurement.factories_bids import (
    COST_INPUTS,
    SECRETS,
    submit,
    tender,
    upload,
)
from tests.procurement.factories_bundles import accepted_bundle

pytestmark = pytest.mark.django_db

B_SECRETS = ("bolt-storage", "Bolt Storage", "vendor-b", "Quartz-7", "77.5", "55555")
EVERY_SECRET = SECRETS + B_SECRETS
BUYER_SIDE = ["buyer", "evaluator", "buyer_admin"]
WATCHERS = [*BUYER_SIDE, "auditor", "labops"]


@pytest.fixture
def buyer_admin(buyer_org: Organisation) -> Any:
    user = UserFactory.create(username="buyer-admin")
    MembershipFactory.create(user=user, organisation=buyer_org, role=Role.ADMIN)
    return user


@pytest.fixture(params=["published", "closed"])
def rfp(request: Any, buyer_org: Organisation, clock: Any, tmp_path: Path) -> Rfp:
    """Both vendors bid (A with a document, naming its accepted signed bundle);
    then either the deadline is still ahead, or it passed and the buyer requested
    the opening (not confirmed). Every watcher exists before the bids, so that it
    could be notified."""
    get = request.getfixturevalue
    buyer, vendor_a, vendor_b = get("buyer"), get("vendor_a"), get("vendor_b")
    for persona in ("evaluator", "buyer_admin", "auditor", "labops"):
        get(persona)
    a_org, b_org = get("vendor_a_org"), get("vendor_b_org")
    rfp = tender(buyer_org, a_org, b_org)
    bundle = accepted_bundle(rfp, a_org, tmp_path)
    submit(
        rfp,
        vendor_a,
        a_org,
        files=(upload("acme-flash-sizing.pdf"),),
        bundle=str(bundle.public_id),
    )
    submit(rfp, vendor_a, a_org)  # a replacement: receipts, events
    b_claims = [{"metric": "ttft_ms", "stat": "p99", "value": 77.5, "unit": "ms"}]
    b_costs = {**COST_INPUTS, "hardware_cost": Decimal("55555.00")}
    submit(
        rfp,
        vendor_b,
        b_org,
        cover_note="Quartz-7",
        claims=b_claims,
        cost_inputs=b_costs,
    )
    if request.param == "closed":
        clock.advance(days=15)
        rfp = rfp_apply_deadlines(rfp=rfp)
        bid_opening_request(rfp=rfp, actor=buyer)
    return rfp


def _bundle_secrets() -> list[str]:
    """The bundle a bid names: its public id and digests (in full and as the
    pages abbreviate them)."""
    secrets: list[str] = []
    for bundle in Bundle.objects.all():
        for value in (str(bundle.public_id), bundle.sha256, bundle.manifest_sha256):
            secrets += [value, value[:14]]
    return secrets


def _leaks(text: str) -> list[str]:
    every = [*EVERY_SECRET, *_bundle_secrets()]
    return [secret for secret in every if secret in text]


def _commitments(rfp: Rfp) -> list[str]:
    return sorted(Bid.objects.filter(rfp=rfp).values_list("commitment", flat=True))


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.mark.parametrize("persona", WATCHERS)
def test_sealed_bids_tab_shows_only_count_and_commitments(
    rfp: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    client: Client = client_for(request.getfixturevalue(persona))

    response = client.get(f"/rfps/{rfp.public_id}/bids/")

    page = response.content.decode()
    assert response.status_code == 200
    assert _leaks(page) == []
    first, second = _commitments(rfp)
    assert page.index(first) < page.index(second)  # by hash, not by arrival
    assert 'data-testid="bid-count">2<' in page


@pytest.mark.parametrize("persona", WATCHERS)
def test_sealed_bids_api_shows_only_count_and_commitments(
    rfp: Rfp, persona: str, request: Any
) -> None:
    response = _api(request.getfixturevalue(persona)).get(
        f"/api/v1/rfps/{rfp.public_id}/bids/"
    )

    assert response.status_code == 200
    assert response.json() == {
        "sealed": True,
        "count": 2,
        "commitments": _commitments(rfp),
        "bids": None,
        "next": None,
        "previous": None,
    }


@pytest.mark.parametrize("persona", WATCHERS)
def test_sealed_notifications_name_no_bidder(
    rfp: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    user = request.getfixturevalue(persona)

    page = client_for(user).get("/accounts/notifications/").content.decode()

    notes = Notification.objects.filter(recipient=user)
    assert _leaks(page) == []
    assert _leaks(" ".join(n.subject + n.body + n.url for n in notes)) == []


@pytest.mark.parametrize("persona", WATCHERS)
@pytest.mark.parametrize("trail", ["/accounts/audit/", "/rfps/{id}/audit/"])
def test_sealed_audit_trails_name_no_bidder(
    rfp: Rfp, persona: str, trail: str, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    response = client.get(trail.format(id=rfp.public_id))

    assert response.status_code in {200, 403}  # evaluators and labs read no trail
    assert _leaks(response.content.decode()) == []


AUDIT_EXPORTS = [
    "/accounts/audit/export.csv",
    "/accounts/audit/export.json",
    "/accounts/audit/export.csv?rfp={ref}",
    "/accounts/audit/export.json?rfp={ref}",
]


def _key_secrets() -> list[str]:
    """Who uploaded A's bundle and with which key."""
    return ["up-acme", *SigningKey.objects.values_list("fingerprint", flat=True)]


@pytest.mark.parametrize("persona", WATCHERS)
@pytest.mark.parametrize("url", AUDIT_EXPORTS)
def test_sealed_audit_exports_name_no_bidder(
    rfp: Rfp, persona: str, url: str, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    response = client.get(url.format(ref=rfp.reference))

    assert response.status_code in {200, 403}  # evaluators and labs read no trail
    streamed = response.status_code == 200
    body = b"".join(response.streaming_content) if streamed else response.content
    assert _leaks(body.decode()) == []
    assert [s for s in _key_secrets() if s in body.decode()] == []


@pytest.mark.parametrize("persona", WATCHERS)
def test_sealed_dashboard_activity_names_no_bidder(
    rfp: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    response = client_for(request.getfixturevalue(persona)).get("/dashboard/")

    page = response.content.decode()
    assert response.status_code == 200
    assert _leaks(page) == []
    assert [s for s in _key_secrets() if s in page] == []


@pytest.mark.parametrize("persona", ["buyer", "buyer_admin", "auditor"])
@pytest.mark.parametrize("trail", ["/accounts/audit/", "/rfps/{id}/audit/"])
def test_sealed_audit_trails_show_each_bid_as_a_sealed_row(
    rfp: Rfp, persona: str, trail: str, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    page = client.get(trail.format(id=rfp.public_id)).content.decode()

    assert all(c in page for c in _commitments(rfp))
    assert "Bid submitted" in page
    assert "Bundle accepted" in page
    assert [s for s in _key_secrets() if s in page] == []


@pytest.mark.parametrize("persona", BUYER_SIDE)
@pytest.mark.parametrize(
    "url",
    [
        "/rfps/{id}/evaluation/",
        "/rfps/{id}/comparison/",
        "/api/v1/rfps/{id}/comparison/",
        "/api/v1/rfps/{id}/comparison.csv",
        "/api/v1/rfps/{id}/consensus/",
    ],
)
def test_sealed_evaluation_pages_and_exports_name_no_bidder(
    rfp: Rfp, persona: str, url: str, request: Any, client_for: Any
) -> None:
    response = client_for(request.getfixturevalue(persona)).get(
        url.format(id=rfp.public_id)
    )

    assert _leaks(response.content.decode()) == []


def test_sealed_bid_pages_are_404_for_the_buyer_side(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    bid = Bid.objects.get(vendor_organisation__slug="acme-flash")
    document = BidDocument.objects.filter(bid=bid).first()
    client, api = client_for(buyer), _api(buyer)

    assert client.get(f"/rfps/{rfp.public_id}/bids/{bid.public_id}/").status_code == 404
    assert api.get(f"/api/v1/bids/{bid.public_id}/").status_code == 404
    path = f"bids/{bid.public_id}/documents/{document.sha256}/"
    assert client.get(f"/rfps/{rfp.public_id}/{path}").status_code == 404
    assert api.get(f"/api/v1/{path}").status_code == 404


@pytest.mark.parametrize("persona", BUYER_SIDE)
def test_sealed_bundle_pages_are_404_for_the_buyer_side(
    rfp: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    bundle = Bid.objects.get(vendor_organisation__slug="acme-flash").bundle_public_id
    user = request.getfixturevalue(persona)

    page = client_for(user).get(f"/artifacts/bundles/{bundle}/")
    api = _api(user).get(f"/api/v1/bundles/{bundle}/")

    assert (page.status_code, api.status_code) == (404, 404)


def test_superuser_sees_no_sealed_bid_pages_or_api(
    rfp: Rfp, admin_client: Client, admin_user: Any
) -> None:
    assert admin_client.get(f"/rfps/{rfp.public_id}/bids/").status_code == 404
    response = _api(admin_user).get(f"/api/v1/rfps/{rfp.public_id}/bids/")

    assert response.status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/admin/procurement/bid/",
        "/admin/procurement/bid/?q=acme",
        "/admin/procurement/rfp/",
        "/admin/procurement/bidopening/",
        "/admin/",
    ],
)
def test_admin_lists_reveal_no_sealed_bid(
    rfp: Rfp, admin_client: Client, url: str
) -> None:
    response = admin_client.get(url)

    page = response.content.decode()
    assert response.status_code == 200
    assert _leaks(page) == []
    assert not [c for c in _commitments(rfp) if c in page]


@pytest.mark.parametrize(
    "url", ["/admin/accounts/auditevent/", "/admin/accounts/auditevent/?q=vendor-a"]
)
def test_admin_audit_trail_hides_sealed_bid_events(
    rfp: Rfp, admin_client: Client, url: str
) -> None:
    response = admin_client.get(url)

    page = response.content.decode()
    assert response.status_code == 200
    assert "bid.submitted" not in page
    assert 'field-actor_repr">vendor-a<' not in page
    assert not [c[:12] for c in _commitments(rfp) if c[:12] in page]


def test_admin_change_pages_reveal_no_sealed_bid(
    rfp: Rfp, admin_client: Client
) -> None:
    bid = Bid.objects.get(vendor_organisation__slug="acme-flash")

    bid_page = admin_client.get(f"/admin/procurement/bid/{bid.pk}/change/", follow=True)
    rfp_page = admin_client.get(f"/admin/procurement/rfp/{rfp.pk}/change/")

    assert rfp_page.status_code == 200
    assert _leaks(bid_page.content.decode() + rfp_page.content.decode()) == []
    assert bid.commitment not in bid_page.content.decode()


# --- vendor against vendor --------------------------------------------------------


def _a_urls(rfp: Rfp) -> list[str]:
    bid = Bid.objects.get(vendor_organisation__slug="acme-flash")
    receipt = BidReceipt.objects.filter(bid=bid).first()
    sha = BidDocument.objects.filter(bid=bid).first().sha256
    r, b, rc = rfp.public_id, bid.public_id, receipt.public_id
    bundle = bid.bundle_public_id
    return [
        f"/artifacts/bundles/{bundle}/",
        f"/api/v1/bundles/{bundle}/",
        f"/rfps/{r}/bids/{b}/",
        f"/rfps/{r}/bids/{b}/documents/{sha}/",
        f"/rfps/{r}/bid/receipts/{rc}/",
        f"/rfps/{r}/bid/receipts/{rc}/json/",
        f"/api/v1/bids/{b}/",
        f"/api/v1/bids/{b}/receipts/",
        f"/api/v1/bids/{b}/documents/{sha}/",
    ]


def test_vendor_b_gets_404_for_every_url_of_vendor_a(
    rfp: Rfp, vendor_b: Any, client_for: Any
) -> None:
    client = client_for(vendor_b)

    statuses = {url: client.get(url).status_code for url in _a_urls(rfp)}

    assert set(statuses.values()) == {404}, statuses


def test_vendor_b_still_gets_404_after_opening(
    rfp: Rfp, buyer: Any, evaluator: Any, vendor_b: Any, client_for: Any, clock: Any
) -> None:
    _open(rfp, buyer, evaluator, clock)
    client = client_for(vendor_b)

    statuses = {url: client.get(url).status_code for url in _a_urls(rfp)}

    assert set(statuses.values()) == {404}, statuses


def test_vendor_b_sees_only_its_own_bid(
    rfp: Rfp, vendor_b: Any, client_for: Any
) -> None:
    client = client_for(vendor_b)

    pages = [
        client.get(f"/rfps/{rfp.public_id}/bids/").content.decode(),
        client.get(f"/api/v1/rfps/{rfp.public_id}/bid/").content.decode(),
        client.get(f"/rfps/{rfp.public_id}/bid/receipts/").content.decode(),
        client.get("/accounts/notifications/").content.decode(),
    ]

    a_commitment = Bid.objects.get(vendor_organisation__slug="acme-flash").commitment
    assert not [s for s in [*SECRETS, *_bundle_secrets()] if s in " ".join(pages)]
    assert a_commitment not in " ".join(pages)
    assert "Quartz-7" in pages[1]


# --- after opening ----------------------------------------------------------------


def _open(rfp: Rfp, buyer: Any, evaluator: Any, clock: Any) -> Rfp:
    if rfp.status == Rfp.Status.PUBLISHED:
        clock.advance(days=15)
        rfp = rfp_apply_deadlines(rfp=rfp)
        bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)
    rfp.refresh_from_db()
    return rfp


@pytest.mark.parametrize("persona", BUYER_SIDE)
def test_opened_bids_show_vendors_and_content_to_the_buyer_side(
    rfp: Rfp,
    persona: str,
    buyer: Any,
    evaluator: Any,
    clock: Any,
    request: Any,
    client_for: Any,
) -> None:
    rfp = _open(rfp, buyer, evaluator, clock)
    user = request.getfixturevalue(persona)

    page = client_for(user).get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    body = _api(user).get(f"/api/v1/rfps/{rfp.public_id}/bids/").json()

    assert "Acme Flash" in page
    assert "Bolt Storage" in page
    assert body["sealed"] is False
    assert sorted(b["vendor"]["slug"] for b in body["bids"]) == [
        "acme-flash",
        "bolt-storage",
    ]


def test_opened_bid_page_shows_content_and_serves_documents(
    rfp: Rfp, buyer: Any, evaluator: Any, clock: Any, client_for: Any
) -> None:
    rfp = _open(rfp, buyer, evaluator, clock)
    bid = Bid.objects.get(vendor_organisation__slug="acme-flash")
    document = BidDocument.objects.get(bid=bid)
    client = client_for(evaluator)

    page = client.get(f"/rfps/{rfp.public_id}/bids/{bid.public_id}/").content.decode()
    download = client.get(
        f"/rfps/{rfp.public_id}/bids/{bid.public_id}/documents/{document.sha256}/"
    )

    assert "Zephyr-9" in page
    assert "181.25" in page
    assert "acme-flash-sizing.pdf" in page
    assert bid.bundle_sha256 in page  # the bundle it names, once opened
    assert b"".join(download.streaming_content) == b"%PDF-1.7 signed"


def test_opened_bids_stay_closed_to_labs_and_auditors(
    rfp: Rfp, buyer: Any, evaluator: Any, auditor: Any, labops: Any, clock: Any
) -> None:
    rfp = _open(rfp, buyer, evaluator, clock)

    for user in (auditor, labops):
        body = _api(user).get(f"/api/v1/rfps/{rfp.public_id}/bids/").json()
        assert body["bids"] is None
        assert _leaks(json.dumps(body)) == []


@pytest.mark.parametrize("persona", ["buyer", "auditor"])
def test_opened_audit_trail_and_exports_name_the_bidders(
    rfp: Rfp,
    persona: str,
    buyer: Any,
    evaluator: Any,
    clock: Any,
    request: Any,
    client_for: Any,
) -> None:
    rfp = _open(rfp, buyer, evaluator, clock)
    client = client_for(request.getfixturevalue(persona))

    page = client.get(f"/rfps/{rfp.public_id}/audit/").content.decode()
    export = client.get("/accounts/audit/export.json", {"rfp": rfp.reference})
    events = json.loads(b"".join(export.streaming_content))["events"]

    assert "vendor-a" in page
    assert "vendor-b" in page
    assert "Acme Flash" in page
    assert {e["organisation"] for e in events if e["action"] == "bid.submitted"} == {
        "Acme Flash",
        "Bolt Storage",
    }
    assert not [e for e in events if e["sealed"]]


def test_opened_bids_appear_in_the_admin(
    rfp: Rfp, buyer: Any, evaluator: Any, clock: Any, admin_client: Client
) -> None:
    _open(rfp, buyer, evaluator, clock)

    page = admin_client.get("/admin/procurement/bid/").content.decode()

    assert all(c in page for c in _commitments(rfp))
