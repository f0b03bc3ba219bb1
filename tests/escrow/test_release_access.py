"""Who sees a release and who may take which step (pages and API), and access
to the released deposits before and after execution: nothing before, exactly
the certificate's digests after, for the buyer organisation only."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

import pytest
from django.test import Client

from accounts.models import AuditEvent
from artifacts.models import Deposit, EscrowEvent, Release
from artifacts.selectors.escrow import deposit_get_visible
from artifacts.services.release_execution import release_execute
from artifacts.services.transparency import checkpoint_publish
from procurement.models import Rfp
from tests.escrow.release_support import (
    after_notice,
    approve_both,
    award_to,
    request_breach,
)

pytestmark = pytest.mark.django_db

SEES = {
    "buyer": 200,
    "evaluator": 200,
    "auditor": 200,
    "vendor_a": 200,
    "vendor_b": 404,
    "labops": 404,
    "outsider": 404,
}


@pytest.fixture
def release(deposit: Deposit, vendor_a_org: Any, buyer: Any, clock: Any) -> Release:
    award_to(deposit.rfp, vendor_a_org, buyer)
    return request_breach(deposit.rfp, buyer)


@pytest.fixture
def released(release: Release, buyer: Any, auditor: Any, clock: Any) -> Release:
    after_notice(clock)
    approve_both(release, buyer, auditor)
    return release_execute(release=release, actor=buyer)


def _client(request: Any, persona: str) -> Client:
    client = Client()
    client.force_login(request.getfixturevalue(persona))
    return client


@pytest.mark.parametrize("persona", sorted(SEES))
def test_release_is_seen_by_the_parties_only(
    request: Any, release: Release, persona: str
) -> None:
    client = _client(request, persona)

    page = client.get(f"/artifacts/escrow/releases/{release.public_id}/")
    api = client.get(f"/api/v1/escrow/releases/{release.public_id}/")
    listed = client.get("/api/v1/escrow/releases/").json()["results"]

    assert (page.status_code, api.status_code) == (SEES[persona], SEES[persona])
    assert len(listed) == (1 if SEES[persona] == 200 else 0)


@pytest.mark.parametrize(
    ("persona", "step", "code"),
    [
        ("evaluator", "approve", 403),
        ("vendor_a", "approve", 403),
        ("vendor_a", "execute", 403),
        ("vendor_a", "withdraw", 403),
        ("buyer", "object", 403),
        ("buyer", "reject", 403),
        ("evaluator", "object", 403),
        ("vendor_b", "object", 404),
        ("labops", "approve", 404),
        ("outsider", "execute", 404),
    ],
)
def test_steps_refused_to_those_who_may_not_take_them(
    request: Any, release: Release, persona: str, step: str, code: int
) -> None:
    client = _client(request, persona)
    data = {"reason": "A reason long enough.", "note": ""}

    page = client.post(f"/artifacts/escrow/releases/{release.public_id}/{step}/", data)
    api = client.post(f"/api/v1/escrow/releases/{release.public_id}/{step}/", data)

    assert (page.status_code, api.status_code) == (code, code)
    assert not release.steps.exclude(action="requested").exists()


@pytest.mark.parametrize("persona", ["vendor_a", "evaluator", "outsider"])
def test_only_the_buyer_side_requests_a_release(
    request: Any, deposit: Deposit, vendor_a_org: Any, buyer: Any, persona: str
) -> None:
    award_to(deposit.rfp, vendor_a_org, buyer)
    client = _client(request, persona)
    body = {"rfp": str(deposit.rfp.public_id), "condition": "breach", "statement": ""}

    api = client.post("/api/v1/escrow/releases/", body, content_type="application/json")
    page = client.get(f"/artifacts/escrow/releases/new/{deposit.rfp.public_id}/")

    assert (api.status_code, page.status_code) == (404, 404)
    assert not Release.objects.exists()


def test_released_deposits_cannot_be_downloaded_before_execution(
    request: Any, release: Release, buyer: Any, auditor: Any, clock: Any
) -> None:
    client = _client(request, "buyer")
    urls = [
        f"/artifacts/escrow/releases/{release.public_id}/package/",
        f"/api/v1/escrow/releases/{release.public_id}/package/",
        f"/artifacts/escrow/releases/{release.public_id}/certificate/",
        f"/api/v1/escrow/releases/{release.public_id}/certificate/",
    ]
    after_notice(clock)
    approve_both(release, buyer, auditor)  # approved, not executed

    assert [client.get(url).status_code for url in urls] == [404] * 4
    assert not EscrowEvent.objects.filter(action="release.downloaded").exists()


def _zip(response: Any) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def test_buyer_downloads_exactly_the_certified_digests_after_execution(
    request: Any, released: Release, deposit: Deposit
) -> None:
    response = _client(request, "buyer").get(
        f"/api/v1/escrow/releases/{released.public_id}/package/"
    )

    assert response.status_code == 200
    package = _zip(response)
    certificate = package.read("certificate.json")
    assert certificate == bytes(released.certificate)
    listed = {b["sha256"] for b in json.loads(certificate)["released_blobs"]}
    blobs = {n.removeprefix("blobs/") for n in package.namelist() if "blobs/" in n}
    assert blobs == listed
    assert blobs == {i.blob.sha256 for i in deposit.items.select_related("blob")}
    for name in blobs:
        assert hashlib.sha256(package.read(f"blobs/{name}")).hexdigest() == name
    assert EscrowEvent.objects.filter(action="release.downloaded").count() == 1
    assert AuditEvent.objects.filter(action="release.downloaded").count() == 1


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 200), ("auditor", 404), ("vendor_a", 404), ("labops", 404)],
)
def test_released_deposits_go_to_the_buyer_organisation_only(
    request: Any, released: Release, persona: str, code: int
) -> None:
    client = _client(request, persona)

    response = client.get(f"/artifacts/escrow/releases/{released.public_id}/package/")

    assert response.status_code == code


def test_release_access_does_not_depend_on_the_rfps_sealing(
    request: Any, released: Release, deposit: Deposit, buyer: Any
) -> None:
    """Were the RFP sealed again (its status forced here), the deposit would be
    hidden from the buyer side, but what was released stays released."""
    Rfp.objects.filter(pk=deposit.rfp_id).update(status=Rfp.Status.CANCELLED)

    response = _client(request, "buyer").get(
        f"/artifacts/escrow/releases/{released.public_id}/package/"
    )

    assert deposit_get_visible(buyer, deposit.public_id) is None
    assert response.status_code == 200


def test_certificate_page_and_json_show_the_logged_certificate(
    request: Any, released: Release
) -> None:
    client = _client(request, "vendor_a")
    checkpoint_publish()  # as the execution's commit does

    page = client.get(f"/artifacts/escrow/releases/{released.public_id}/certificate/")
    raw = client.get(
        f"/artifacts/escrow/releases/{released.public_id}/certificate.json"
    )

    assert page.status_code == 200
    assert released.certificate_sha256 in page.content.decode()
    assert 'data-testid="certificate-inclusion"' in page.content.decode()
    assert ">verified<" in page.content.decode()
    assert raw.content == bytes(released.certificate)


def test_api_runs_the_workflow(
    request: Any, deposit: Deposit, vendor_a_org: Any, clock: Any
) -> None:
    buyer, auditor = _client(request, "buyer"), _client(request, "auditor")
    award_to(deposit.rfp, vendor_a_org, request.getfixturevalue("buyer"))
    body = {"rfp": str(deposit.rfp.public_id), "condition": "insolvency"}

    created = buyer.post("/api/v1/escrow/releases/", body, "application/json")
    url = f"/api/v1/escrow/releases/{created.json()['id']}"
    early = buyer.post(f"{url}/approve/", {}, "application/json")
    after_notice(clock)
    buyer.post(f"{url}/approve/", {}, "application/json")
    again = auditor.post(f"{url}/execute/", {}, "application/json")
    auditor.post(f"{url}/approve/", {}, "application/json")
    done = buyer.post(f"{url}/execute/", {}, "application/json")

    assert created.status_code == 201
    assert (early.status_code, early.json()["code"]) == (409, "notice_running")
    assert again.status_code == 403
    assert done.status_code == 200
    assert done.json()["status"] == "released"
    assert [s["action"] for s in done.json()["steps"]] == [
        "requested",
        "approved",
        "approved",
        "executed",
    ]
