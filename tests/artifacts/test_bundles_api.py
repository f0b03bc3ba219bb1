"""The bundles API: upload (201 / 422 / 4xx / 503), detail, list and download,
and sealing: a vendor sees only its own bundles, the buyer side sees accepted
bundles only once the RFP is opened, everyone else gets 404."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from accounts.services.users import api_token_issue
from artifacts.models import Blob, Bundle
from artifacts.services.blob_sweep import blob_sweep
from artifacts.services.fixity.report import grace_period
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, noise
from tests.artifacts.ingest_support import (
    build_bundle,
    open_rfp,
    storage_names,
    upload_rfp,  # noqa: F401 (fixture rfp)
    use_failing_storage,
)

pytestmark = pytest.mark.django_db


def _api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _post(user: Any, rfp: Rfp, path: Path) -> Any:
    with path.open("rb") as handle:
        return _api(user).post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/",
            {"file": handle},
            format="multipart",
        )


def _uploaded(user: Any, rfp: Rfp, path: Path) -> str:
    response = _post(user, rfp, path)
    assert response.status_code in (201, 422), response.content
    return response.json()["id"]


def _open(rfp: Rfp) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)


# --- upload -----------------------------------------------------------------------


def test_upload_accepts_a_good_bundle_with_its_receipt(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    path = build_bundle(tmp_path)

    response = _post(vendor_a, rfp, path)

    body = response.json()
    assert response.status_code == 201
    assert body["status"] == "accepted"
    assert body["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert body["size"] == path.stat().st_size
    assert len(body["files"]) == 6
    assert body["signature"]["kind"] == "sshsig"
    assert body["signature"]["comment"] == "corpus-vendor_a"
    assert body["claims"][0]["scenario"] == "cold-c32"
    assert body["completeness"]["schema"] == "reprogate.completeness/v1"
    assert body["problems"] == []


def test_upload_of_a_bad_bundle_answers_422_with_every_problem(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    path = build_bundle(tmp_path, key="vendor_a_revoked")

    response = _post(vendor_a, rfp, path)

    body = response.json()
    assert response.status_code == 422
    assert body["code"] == "bundle_rejected"
    assert [p["code"] for p in body["problems"]] == ["signature_key_revoked"]
    assert body["problems"][0]["path"] == "manifest.json.sig"
    assert Bundle.objects.get().public_id.hex == body["id"].replace("-", "")
    assert storage_names() == []


def test_a_rejected_bundle_detail_lists_its_problems(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path, key="stranger"))

    body = _api(vendor_a).get(f"/api/v1/bundles/{bundle_id}/").json()

    assert body["status"] == "rejected"
    assert body["problems"][0]["code"] == "signature_key_not_allowed"
    assert body["files"] == []
    assert body["download_url"] is None


def test_upload_without_a_file_field_is_a_bad_request(rfp: Rfp, vendor_a: Any) -> None:
    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bundles/", {"note": "hi"}, format="multipart"
    )

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "file"
    assert not Bundle.objects.exists()


def test_upload_as_json_is_unsupported(rfp: Rfp, vendor_a: Any) -> None:
    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/bundles/", {"file": "x"}, format="json"
    )

    assert response.status_code == 415


def test_upload_over_the_size_limit_is_refused_without_a_record(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, settings: Any
) -> None:
    settings.BUNDLE_MAX_UPLOAD_BYTES = 1000

    response = _post(vendor_a, rfp, build_bundle(tmp_path))

    assert response.status_code == 413
    assert response.json()["code"] == "bundle_too_large"
    assert not Bundle.objects.exists()


def test_upload_announcing_too_many_bytes_is_refused_before_reading(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, settings: Any
) -> None:
    settings.BUNDLE_MAX_UPLOAD_BYTES = 0
    files = good_files() | {"traces/raw.bin": noise(1_200_000)}

    response = _post(vendor_a, rfp, build_bundle(tmp_path, files))

    assert response.status_code == 413
    assert not Bundle.objects.exists()


def test_upload_during_a_storage_outage_answers_503_and_records_nothing(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, settings: Any
) -> None:
    use_failing_storage(settings, fail_on=3)

    response = _post(vendor_a, rfp, build_bundle(tmp_path))

    assert response.status_code == 503
    assert response.json()["code"] == "storage_unavailable"
    assert not Bundle.objects.exists()
    assert not Blob.objects.exists()
    assert len(storage_names()) <= 2  # written before the outage: for the sweep
    blob_sweep(now=timezone.now() + grace_period() + timedelta(seconds=1))
    assert storage_names() == []


def test_upload_after_the_deadline_is_refused(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline)

    response = _post(vendor_a, rfp, build_bundle(tmp_path))

    assert response.status_code == 400
    assert not Bundle.objects.exists()


def test_the_buyer_cannot_upload_a_vendors_bundle(
    tmp_path: Path, rfp: Rfp, buyer: Any
) -> None:
    # a buyer's upload is a baseline of its own harness: a vendor's signature
    # does not verify as the buyer organisation's
    response = _post(buyer, rfp, build_bundle(tmp_path))

    assert response.status_code == 422
    assert "signature_key_not_allowed" in {
        p["code"] for p in response.json()["problems"]
    }
    assert not Bundle.objects.filter(status=Bundle.Status.ACCEPTED).exists()


def test_an_evaluator_cannot_upload(tmp_path: Path, rfp: Rfp, evaluator: Any) -> None:
    response = _post(evaluator, rfp, build_bundle(tmp_path))

    assert response.status_code == 403


def test_a_vendor_not_invited_does_not_see_the_rfp(
    tmp_path: Path, vendor_a: Any, vendor_a_org: Organisation, buyer_org: Organisation
) -> None:
    rfp = open_rfp(buyer=buyer_org)

    response = _post(vendor_a, rfp, build_bundle(tmp_path))

    assert response.status_code == 404


def test_upload_uses_the_vendors_own_key_only(
    tmp_path: Path, rfp: Rfp, vendor_b: Any
) -> None:
    path = build_bundle(tmp_path)  # acme-flash's manifest and key

    body = _post(vendor_b, rfp, path).json()

    codes = {p["code"] for p in body["problems"]}
    assert codes == {"signature_key_not_allowed", "vendor_mismatch"}


# --- sealing --------------------------------------------------------------------------


def test_another_vendor_gets_404_on_detail_download_and_an_empty_list(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_b: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))
    client = _api(vendor_b)

    detail = client.get(f"/api/v1/bundles/{bundle_id}/")
    download = client.get(f"/api/v1/bundles/{bundle_id}/download/")
    listed = client.get(f"/api/v1/rfps/{rfp.public_id}/bundles/")

    assert detail.status_code == download.status_code == 404
    assert listed.json()["results"] == []


def test_the_buyer_gets_404_while_sealed_and_200_once_opened(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, buyer: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))
    url = f"/api/v1/bundles/{bundle_id}/"

    sealed = _api(buyer).get(url)
    _open(rfp)
    opened = _api(buyer).get(url)

    assert sealed.status_code == 404
    assert opened.status_code == 200
    assert opened.json()["vendor"] == "acme-flash"


def test_the_buyer_never_sees_rejected_bundles(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, evaluator: Any
) -> None:
    good = _uploaded(vendor_a, rfp, build_bundle(tmp_path / "good"))
    bad = _uploaded(vendor_a, rfp, build_bundle(tmp_path / "bad", key="stranger"))
    _open(rfp)

    listed = _api(evaluator).get(f"/api/v1/rfps/{rfp.public_id}/bundles/").json()

    assert [b["id"] for b in listed["results"]] == [good]
    assert _api(evaluator).get(f"/api/v1/bundles/{bad}/").status_code == 404


@pytest.mark.parametrize("persona", ["outsider", "labops", "auditor"])
def test_everyone_else_gets_404_even_after_opening(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, persona: str, request: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))
    _open(rfp)

    response = _api(request.getfixturevalue(persona)).get(
        f"/api/v1/bundles/{bundle_id}/"
    )

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/v1/bundles/{bundle}/"),
        ("get", "/api/v1/bundles/{bundle}/download/"),
        ("get", "/api/v1/rfps/{rfp}/bundles/"),
        ("post", "/api/v1/rfps/{rfp}/bundles/"),
    ],
)
def test_unauthenticated_requests_get_401(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, method: str, url: str
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))

    response = getattr(_api(), method)(url.format(bundle=bundle_id, rfp=rfp.public_id))

    assert response.status_code == 401


# --- download -----------------------------------------------------------------------


def test_the_vendor_downloads_its_archive_byte_for_byte(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    path = build_bundle(tmp_path)
    bundle_id = _uploaded(vendor_a, rfp, path)

    response = _api(vendor_a).get(f"/api/v1/bundles/{bundle_id}/download/")

    assert response.status_code == 200
    assert response.getvalue() == path.read_bytes()
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert 'filename="RFP-DEMO-1-acme-flash-' in disposition
    assert disposition.endswith('.tar.gz"')


def test_a_rejected_bundle_has_no_download(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path, key="stranger"))

    response = _api(vendor_a).get(f"/api/v1/bundles/{bundle_id}/download/")

    assert response.status_code == 404


def test_the_list_shows_the_vendors_bundles_newest_first(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    first = _uploaded(vendor_a, rfp, build_bundle(tmp_path / "1", key="stranger"))
    second = _uploaded(vendor_a, rfp, build_bundle(tmp_path / "2"))

    body = _api(vendor_a).get(f"/api/v1/rfps/{rfp.public_id}/bundles/").json()

    assert [b["id"] for b in body["results"]] == [second, first]
    assert [b["status"] for b in body["results"]] == ["accepted", "rejected"]
    assert body["count"] == 2


def test_only_the_file_field_is_received(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    path = build_bundle(tmp_path)
    (tmp_path / "notes.txt").write_bytes(b"not a bundle")
    url = f"/api/v1/rfps/{rfp.public_id}/bundles/"

    with path.open("rb") as bundle, (tmp_path / "notes.txt").open("rb") as notes:
        data = {"notes": notes, "file": bundle}
        response = _api(vendor_a).post(url, data, format="multipart")

    assert response.status_code == 201
    assert response.json()["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def _downloads() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="bundle.downloaded"))


def test_a_vendors_download_is_audited_in_its_own_trail(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))

    _api(vendor_a).get(f"/api/v1/bundles/{bundle_id}/download/")

    [event] = _downloads()
    bundle = Bundle.objects.get(public_id=bundle_id)
    assert (event.actor, event.organisation) == (vendor_a, vendor_a_org)
    assert event.target_id == str(bundle.pk)
    assert event.data["sha256"] == bundle.sha256
    assert event.data["via"] == "web"  # no API token: a browser session


def test_a_download_with_an_api_token_is_marked_api(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))
    _, raw = api_token_issue(user=vendor_a, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    response = client.get(f"/api/v1/bundles/{bundle_id}/download/")

    assert response.status_code == 200
    assert [e.data["via"] for e in _downloads()] == ["api"]


def test_a_buyers_download_after_opening_is_audited_in_the_buyers_trail(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, buyer: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))
    _open(rfp)

    response = _api(buyer).get(f"/api/v1/bundles/{bundle_id}/download/")

    assert response.status_code == 200
    [event] = _downloads()
    assert (event.actor, event.organisation) == (buyer, rfp.buyer_organisation)


def test_refused_downloads_are_not_recorded_as_downloads(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_b: Any, buyer: Any
) -> None:
    bundle_id = _uploaded(vendor_a, rfp, build_bundle(tmp_path))

    other_vendor = _api(vendor_b).get(f"/api/v1/bundles/{bundle_id}/download/")
    sealed = _api(buyer).get(f"/api/v1/bundles/{bundle_id}/download/")

    assert other_vendor.status_code == sealed.status_code == 404
    assert _downloads() == []
