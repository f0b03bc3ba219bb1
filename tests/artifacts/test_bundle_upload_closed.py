"""Bundle uploads follow the RFP's submission rule (``rfp_submissions_closed``):
on an RFP past its deadline, closed, opened, awarded or cancelled, the upload
page answers with a clear message and no form, no page links to an upload, and
the API refuses with a problem code."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.models import Bundle
from procurement.models import Rfp
from tests.artifacts.ingest_support import build_bundle, open_rfp, register_corpus_keys
from tests.procurement.factories_bundles import accepted_bundle

pytestmark = pytest.mark.django_db

CLOSED_STATES = ["deadline_passed", "closed", "opened", "awarded", "cancelled"]


@pytest.fixture
def rfp(vendor_a: Any, vendor_a_org: Organisation, buyer_org: Organisation) -> Rfp:
    register_corpus_keys([vendor_a_org], vendor_a)
    return open_rfp(vendor_a_org, buyer=buyer_org)


def _close(rfp: Rfp, state: str) -> Rfp:
    """Set the state directly, as factories do; past the deadline in every case."""
    past = clock.now() - timedelta(hours=1)
    status = Rfp.Status.PUBLISHED if state == "deadline_passed" else state
    Rfp.objects.filter(pk=rfp.pk).update(status=status, submission_deadline=past)
    return Rfp.objects.get(pk=rfp.pk)


def _upload_url(rfp: Rfp) -> str:
    return f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"


def test_an_open_rfp_offers_the_upload_form(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    client = client_for(vendor_a)

    page = client.get(_upload_url(rfp)).content.decode()
    tab = client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()

    assert 'data-testid="bundle-upload"' in page
    assert 'data-testid="upload-closed"' not in page
    assert "Your bundles · upload" in tab


@pytest.mark.parametrize("state", CLOSED_STATES)
def test_the_upload_page_of_a_closed_rfp_says_so_and_offers_no_form(
    rfp: Rfp, state: str, vendor_a: Any, client_for: Any
) -> None:
    rfp = _close(rfp, state)

    response = client_for(vendor_a).get(_upload_url(rfp))

    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-testid="upload-closed"' in page
    assert 'data-testid="bundle-upload"' not in page
    assert 'type="file"' not in page
    said = ("can no longer be submitted or changed", "only while it is published")
    assert [s for s in said if s in page]


@pytest.mark.parametrize("state", CLOSED_STATES)
def test_no_page_links_to_an_upload_on_a_closed_rfp(
    rfp: Rfp, state: str, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path,
    client_for: Any,
) -> None:  # fmt: skip
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path)
    Bundle.objects.filter(pk=bundle.pk).update(status=Bundle.Status.REJECTED)
    rfp = _close(rfp, state)
    client = client_for(vendor_a)

    tab = client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    detail = client.get(f"/artifacts/bundles/{bundle.public_id}/").content.decode()

    assert "· upload" not in tab
    assert "Upload a corrected bundle" not in detail


def test_a_rejected_bundle_on_an_open_rfp_links_to_a_new_upload(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path,
    client_for: Any,
) -> None:  # fmt: skip
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path)
    Bundle.objects.filter(pk=bundle.pk).update(status=Bundle.Status.REJECTED)

    detail = client_for(vendor_a).get(f"/artifacts/bundles/{bundle.public_id}/")

    assert "Upload a corrected bundle" in detail.content.decode()


@pytest.mark.parametrize("state", CLOSED_STATES)
def test_posting_to_a_closed_rfp_keeps_nothing_and_shows_no_form(
    rfp: Rfp, state: str, vendor_a: Any, tmp_path: Path, client_for: Any
) -> None:
    rfp = _close(rfp, state)

    with build_bundle(tmp_path).open("rb") as handle:
        response = client_for(vendor_a).post(_upload_url(rfp), {"file": handle})

    assert response.status_code == 400
    assert 'data-testid="upload-closed"' in response.content.decode()
    assert not Bundle.objects.exists()


@pytest.mark.parametrize("state", CLOSED_STATES)
def test_the_api_refuses_an_upload_to_a_closed_rfp_with_a_problem_code(
    rfp: Rfp, state: str, vendor_a: Any, tmp_path: Path
) -> None:
    rfp = _close(rfp, state)
    api = APIClient()
    api.force_authenticate(vendor_a)

    with build_bundle(tmp_path).open("rb") as handle:
        response = api.post(f"/api/v1/rfps/{rfp.public_id}/bundles/", {"file": handle})

    codes = {"rfp_not_published"}
    if state in ("deadline_passed", "closed"):  # a closed RFP is past its deadline
        codes.add("deadline_passed")
    assert response.status_code == 400
    assert response.json()["code"] in codes
    assert not Bundle.objects.exists()
