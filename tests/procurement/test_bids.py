"""The vendor side of bids: services and pages."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Bid, BidDocument, BidReceipt, Rfp
from procurement.services.bids import (
    bid_reconfirm,
    bid_withdraw,
    bids_require_reconfirmation,
)
from tests.procurement.factories_bids import (
    CLAIMS,
    COST_INPUTS,
    COVER_NOTE,
    submit,
    tender,
    upload,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Organisation, clock: Any) -> Rfp:
    return tender(buyer_org, vendor_a_org)


def _recomputed(contents: dict[str, Any]) -> str:
    text = json.dumps(
        contents, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- services ---------------------------------------------------------------------


def test_bid_submit_commitment_is_reproducible_from_the_receipt(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org, files=(upload(),))

    receipt.refresh_from_db()  # what the database gives back, as a vendor reads it
    assert _recomputed(receipt.contents) == receipt.commitment
    assert receipt.commitment == Bid.objects.get().commitment
    assert receipt.contents["cover_note"] == COVER_NOTE
    assert receipt.contents["documents"][0]["name"] == "report.pdf"
    assert len(receipt.contents["salt"]) == 32


def test_bid_submit_twice_replaces_the_one_bid(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    first = submit(rfp, vendor_a, vendor_a_org)

    second = submit(rfp, vendor_a, vendor_a_org, cover_note="Better offer.")

    bid = Bid.objects.get()
    assert (first.action, second.action) == ("submitted", "replaced")
    assert bid.version == 2
    assert second.commitment != first.commitment
    assert bid.commitment == second.commitment == _recomputed(second.contents)


def test_same_content_gets_a_different_commitment_each_time(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    first = submit(rfp, vendor_a, vendor_a_org)
    bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    again = submit(rfp, vendor_a, vendor_a_org)

    assert first.contents["salt"] != again.contents["salt"]
    assert first.commitment != again.commitment


def test_bid_submit_after_the_deadline_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline)

    with pytest.raises(ProcurementError, match="deadline passed") as exc:
        submit(rfp, vendor_a, vendor_a_org)

    assert exc.value.code == "deadline_passed"
    assert not Bid.objects.exists()


def test_bid_submit_refuses_an_uninvited_vendor(
    rfp: Rfp, vendor_b: Any, vendor_b_org: Organisation
) -> None:
    with pytest.raises(ProcurementError, match="not invited"):
        submit(rfp, vendor_b, vendor_b_org)

    assert not Bid.objects.exists()


def test_bid_submit_refuses_a_draft_rfp(
    buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    draft = tender(buyer_org, vendor_a_org, status=Rfp.Status.DRAFT)

    with pytest.raises(ProcurementError, match="only while it is published"):
        submit(draft, vendor_a, vendor_a_org)


def test_bid_withdraw_keeps_the_commitment_then_resubmit_makes_a_version(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submitted = submit(rfp, vendor_a, vendor_a_org)

    withdrawn = bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)
    assert Bid.objects.get().status == Bid.Status.WITHDRAWN
    assert withdrawn.commitment == submitted.commitment
    assert withdrawn.contents == submitted.contents

    again = submit(rfp, vendor_a, vendor_a_org)
    bid = Bid.objects.get()
    assert (again.action, bid.status, bid.version) == ("submitted", "submitted", 2)


def test_bid_withdraw_twice_is_a_refused_transition(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    with pytest.raises(InvalidTransition):
        bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    assert BidReceipt.objects.filter(action="withdrawn").count() == 1


def test_bid_withdraw_without_a_bid_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ProcurementError, match="has no bid"):
        bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)


def test_bid_reconfirm_after_an_addendum_binds_a_new_commitment(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submitted = submit(rfp, vendor_a, vendor_a_org)
    assert bids_require_reconfirmation(rfp=rfp, actor=None, note="addendum 1") == 1
    assert Bid.objects.get().status == Bid.Status.NEEDS_RECONFIRMATION

    receipt = bid_reconfirm(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    bid = Bid.objects.get()
    assert (bid.status, bid.version, receipt.action) == ("submitted", 1, "reconfirmed")
    assert receipt.commitment != submitted.commitment
    assert receipt.commitment == bid.commitment == _recomputed(receipt.contents)


def test_bid_reconfirm_is_refused_when_nothing_changed(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)

    with pytest.raises(ProcurementError, match="does not need re-confirmation"):
        bid_reconfirm(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)


BAD_CLAIMS = [
    ({"metric": "TTFT", "stat": "p99", "value": 1}, "claims[0].metric"),
    ({"metric": "ttft_ms", "stat": "p42", "value": 1}, "claims[0].stat"),
    ({"metric": "ttft_ms", "stat": "p99", "value": "fast"}, "claims[0].value"),
    ({"metric": "ttft_ms", "stat": "p99", "value": float("nan")}, "claims[0].value"),
    ({"metric": "ttft_ms", "stat": "p99", "value": float("inf")}, "claims[0].value"),
    ({"metric": "ttft_ms", "stat": "p99", "value": True}, "claims[0].value"),
    ({"metric": "ttft_ms", "stat": "p99"}, "claims[0].value"),
]


@pytest.mark.parametrize(("claim", "path"), BAD_CLAIMS)
def test_bid_submit_rejects_a_bad_claim(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, claim: Any, path: str
) -> None:
    with pytest.raises(ProcurementError) as exc:
        submit(rfp, vendor_a, vendor_a_org, claims=[claim])

    assert [p.path for p in exc.value.problems] == [path]
    assert not Bid.objects.exists()


def test_bid_submit_rejects_a_metric_claimed_twice(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ProcurementError) as exc:
        submit(rfp, vendor_a, vendor_a_org, claims=[CLAIMS[0], CLAIMS[0]])

    assert "claimed twice" in exc.value.problems[0].message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hardware_cost", "-1"),
        ("amortisation_years", "0.1"),
        ("currency", "euro"),
        ("delivered_tokens_per_s", None),
    ],
)
def test_bid_submit_rejects_bad_cost_inputs(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, field: str, value: Any
) -> None:
    inputs = {**COST_INPUTS, field: value}

    with pytest.raises(ProcurementError) as exc:
        submit(rfp, vendor_a, vendor_a_org, cost_inputs=inputs)

    assert f"cost_inputs.{field}" in [p.path for p in exc.value.problems]


def test_bid_document_is_stored_content_addressed(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    content = b"raw trace " * 1000

    submit(rfp, vendor_a, vendor_a_org, files=(upload("trace.csv", content),))

    document = BidDocument.objects.get()
    digest = hashlib.sha256(content).hexdigest()
    assert (document.sha256, document.size) == (digest, len(content))
    assert document.storage_key == f"bids/{digest}"
    assert default_storage.open(document.storage_key).read() == content


def test_bid_document_over_the_size_limit_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, settings: Any
) -> None:
    settings.PROCUREMENT_BID_DOCUMENT_MAX_BYTES = 10

    with pytest.raises(ProcurementError, match="larger than 10"):
        submit(rfp, vendor_a, vendor_a_org, files=(upload(content=b"x" * 11),))

    assert not default_storage.listdir("")[1]


def test_bid_replace_supersedes_a_document_of_the_same_name(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org, files=(upload(content=b"v1"), upload("a.txt")))

    receipt = submit(rfp, vendor_a, vendor_a_org, files=(upload(content=b"v2"),))

    old = BidDocument.objects.get(sha256=hashlib.sha256(b"v1").hexdigest())
    assert old.superseded_at is not None
    names = [(d["name"], d["size"]) for d in receipt.contents["documents"]]
    assert names == [("a.txt", 15), ("report.pdf", 2)]


def test_bid_replace_removes_a_document_on_request(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org, files=(upload(),))

    receipt = submit(rfp, vendor_a, vendor_a_org, remove_documents=["report.pdf"])

    assert receipt.contents["documents"] == []
    assert BidDocument.objects.get().superseded_at is not None
    with pytest.raises(ProcurementError, match="no document"):
        submit(rfp, vendor_a, vendor_a_org, remove_documents=["ghost.pdf"])


def test_bid_events_go_to_the_vendor_trail_only(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    events = AuditEvent.objects.filter(action__startswith="bid.")
    assert [e.action for e in events.order_by("id")] == [
        "bid.submitted",
        "bid.withdrawn",
    ]
    assert {e.organisation_id for e in events} == {vendor_a_org.pk}
    assert all(e.data["rfp"] == rfp.reference for e in events)


def test_bid_submit_notifies_the_vendor_with_a_receipt_and_the_buyer_with_a_count(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, buyer: Any
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org)

    to_vendor = Notification.objects.get(recipient=vendor_a)
    to_buyer = Notification.objects.get(recipient=buyer)
    assert receipt.commitment in to_vendor.body
    assert to_buyer.subject == f"A bid was received on {rfp.reference}"
    assert "Bids in now: 1." in to_buyer.body
    assert "Acme" not in to_buyer.body + to_buyer.subject


# --- pages ------------------------------------------------------------------------


def _form(**overrides: Any) -> dict[str, Any]:
    data = {
        "cover_note": COVER_NOTE,
        "claims": "ttft_ms p99 181.25 ms\ntokens_per_s mean 48213.5 tok/s cold-c32",
        **{k: str(v) for k, v in COST_INPUTS.items()},
    }
    return {**data, **overrides}


def test_bid_form_submits_and_shows_the_receipt(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    client: Client = client_for(vendor_a)

    response = client.post(
        f"/rfps/{rfp.public_id}/bid/", _form(documents=[upload()]), follow=True
    )

    receipt = BidReceipt.objects.get()
    assert response.redirect_chain[-1][0].endswith(f"/receipts/{receipt.public_id}/")
    assert receipt.commitment in response.content.decode()
    assert Bid.objects.get().claimed_metrics == CLAIMS


def test_bid_form_points_at_the_bad_claim_line(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    claims = "ttft_ms p99 181 ms\n\nttft_ms p42 9 ms"

    response = client_for(vendor_a).post(
        f"/rfps/{rfp.public_id}/bid/", _form(claims=claims)
    )

    assert response.status_code == 200
    assert "Line 3: “p42” is not one of" in response.content.decode()
    assert not Bid.objects.exists()


def test_bid_form_rejects_a_malformed_claim_line(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    response = client_for(vendor_a).post(
        f"/rfps/{rfp.public_id}/bid/", _form(claims="ttft_ms 181")
    )

    assert "Line 1: write metric stat value" in response.content.decode()


def test_bid_form_is_forbidden_to_the_buyer(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    response = client_for(buyer).get(f"/rfps/{rfp.public_id}/bid/")

    assert response.status_code == 403


def test_bids_tab_shows_the_vendor_its_bid_and_receipts(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org)

    response = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bids/")

    page = response.content.decode()
    assert 'data-testid="own-bid-commitment">' + receipt.commitment in page
    assert f"/bid/receipts/{receipt.public_id}/" in page


def test_bids_tab_invites_a_vendor_without_a_bid(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    response = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bids/")

    assert "You have not submitted a bid" in response.content.decode()


def test_withdraw_page_action_issues_a_receipt(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org)

    response = client_for(vendor_a).post(
        f"/rfps/{rfp.public_id}/bid/withdraw/", follow=True
    )

    assert "Bid withdrawn." in response.content.decode()
    assert Bid.objects.get().status == Bid.Status.WITHDRAWN


def test_withdraw_after_the_deadline_shows_the_refusal(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any, clock: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    clock.advance(days=15)

    response = client_for(vendor_a).post(
        f"/rfps/{rfp.public_id}/bid/withdraw/", follow=True
    )

    assert "can no longer be submitted or changed" in (response.content.decode())
    assert Bid.objects.get().status == Bid.Status.SUBMITTED


def test_receipt_json_download_is_what_was_committed(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org, files=(upload(),))

    response = client_for(vendor_a).get(
        f"/rfps/{rfp.public_id}/bid/receipts/{receipt.public_id}/json/"
    )

    body = json.loads(response.content)
    assert response["Content-Disposition"].startswith("attachment;")
    assert body["commitment"] == receipt.commitment == _recomputed(body["contents"])


def test_receipts_page_lists_every_action(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org)
    bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    response = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bid/receipts/")

    assert response.content.decode().count('data-testid="receipt-row"') == 2


def test_own_document_downloads_as_an_attachment(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    submit(rfp, vendor_a, vendor_a_org, files=(upload(content=b"<script>"),))
    document = BidDocument.objects.select_related("bid").get()

    response = client_for(vendor_a).get(
        f"/rfps/{rfp.public_id}/bids/{document.bid.public_id}/documents/"
        f"{document.sha256}/"
    )

    assert b"".join(response.streaming_content) == b"<script>"
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
