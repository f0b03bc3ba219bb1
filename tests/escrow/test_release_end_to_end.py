"""Acceptance 5, through the pages as people use them: the buyer requests the
release of the awarded vendor's escrow, the vendor objects within the notice
period, a single approval is not enough, the same role cannot approve twice,
buyer and auditor approve acknowledging the objection, the buyer executes, and
only then downloads the released deposits; the dashboards follow along."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest

from accounts.models import Role
from artifacts.models import Deposit, Release
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.escrow.release_support import BREACH, after_notice, award_to

pytestmark = pytest.mark.django_db


def _follow(client: Any, url: str, data: dict[str, Any] | None = None) -> str:
    response = client.post(url, data or {}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def _dashboard(client: Any) -> str:
    return client.get("/dashboard/").content.decode()


def test_release_end_to_end_through_the_pages(
    client_for: Any,
    deposit: Deposit,
    vendor_a_org: Any,
    buyer: Any,
    vendor_a: Any,
    auditor: Any,
    clock: Any,
) -> None:
    award_to(deposit.rfp, vendor_a_org, buyer)
    as_buyer, as_vendor = client_for(buyer), client_for(vendor_a)
    as_auditor = client_for(auditor)
    listing = as_buyer.get("/artifacts/escrow/releases/").content.decode()
    assert 'data-testid="request-release"' in listing

    form = f"/artifacts/escrow/releases/new/{deposit.rfp.public_id}/"
    as_buyer.post(form, {"condition": "breach", "statement": BREACH}, follow=True)
    release = Release.objects.get()
    base = f"/artifacts/escrow/releases/{release.public_id}"
    assert 'data-testid="release-pending"' in _dashboard(as_vendor)
    assert 'data-testid="object-form"' in as_vendor.get(f"{base}/").content.decode()
    assert (
        'data-testid="package-download"'
        not in as_buyer.get(f"{base}/").content.decode()
    )
    assert as_buyer.get(f"{base}/package/").status_code == 404

    clock.advance(days=2)
    page = _follow(as_vendor, f"{base}/object/", {"reason": "Ticket 4711 answered."})
    assert "disputed" in page
    after_notice(clock)
    page = _follow(as_buyer, f"{base}/approve/", {"note": "Unanswered since March."})
    assert "acknowledge the objection" in page  # refused: not acknowledged
    assert not release.steps.filter(action="approved").exists()
    ack = {"note": "Unanswered since March.", "acknowledge_objection": "on"}
    _follow(as_buyer, f"{base}/approve/", ack)
    page = _follow(as_buyer, f"{base}/execute/")
    assert "missing: auditor" in page  # a single approval is not enough
    _follow(as_auditor, f"{base}/approve/", ack)
    release.refresh_from_db()
    assert release.status == Release.Status.APPROVED

    page = _follow(as_buyer, f"{base}/execute/")
    assert 'data-testid="package-download"' in page
    response = as_buyer.get(f"{base}/package/")
    package = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert "certificate.json" in package.namelist()
    assert as_vendor.get(f"{base}/package/").status_code == 404
    assert 'data-testid="release-pending"' not in _dashboard(as_buyer)


def test_second_buyer_approval_refused_on_the_page(
    client_for: Any,
    deposit: Deposit,
    vendor_a_org: Any,
    buyer: Any,
    buyer_org: Any,
    clock: Any,
) -> None:
    colleague = UserFactory.create(username="buyer-2")
    MembershipFactory.create(user=colleague, organisation=buyer_org, role=Role.BUYER)
    award_to(deposit.rfp, vendor_a_org, buyer)
    form = f"/artifacts/escrow/releases/new/{deposit.rfp.public_id}/"
    client_for(buyer).post(form, {"condition": "insolvency"})
    base = f"/artifacts/escrow/releases/{Release.objects.get().public_id}"
    after_notice(clock)
    _follow(client_for(buyer), f"{base}/approve/")

    page = _follow(client_for(colleague), f"{base}/approve/")

    assert "must come from a different role" in page
    assert Release.objects.get().steps.filter(action="approved").count() == 1


def test_request_form_rejects_other_without_a_statement(
    client_for: Any, deposit: Deposit, vendor_a_org: Any, buyer: Any
) -> None:
    award_to(deposit.rfp, vendor_a_org, buyer)
    form = f"/artifacts/escrow/releases/new/{deposit.rfp.public_id}/"

    response = client_for(buyer).post(form, {"condition": "other", "statement": ""})

    assert response.status_code == 200
    assert 'data-testid="form-error"' in response.content.decode()
    assert not Release.objects.exists()
