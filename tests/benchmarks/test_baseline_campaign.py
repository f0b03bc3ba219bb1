"""The buyer's baseline: the buyer organisation registers a signing key of its
own, uploads a bundle of its own harness to its RFP (no bid, sealed or not), and
the lab's campaign of it is a ``baseline`` campaign. The buyer side and the lab
see it; vendors and other buyers never see the bundle, the campaign or its
runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import Campaign
from benchmarks.services.common import RunnerConflict
from procurement.models import Rfp
from tests.artifacts.corpus.build import corpus_key
from tests.artifacts.ingest_support import (
    build_bundle,
    open_rfp,
    register_corpus_keys,
)
from tests.benchmarks.runner.support import (
    accepted_bundle,
    bundle_files,
    make_pool,
    runner_manifest,
    start,
)

pytestmark = pytest.mark.django_db

BUYER_KEY = "org-northwind-ai"


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _register_buyer_key(buyer: Any) -> Any:
    return _api(buyer).post(
        "/api/v1/signing-keys/",
        {"public_key": corpus_key(BUYER_KEY).public_line},
        format="json",
    )


def _upload(user: Any, rfp: Rfp, path: Path) -> Any:
    with path.open("rb") as handle:
        return _api(user).post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/", {"file": handle},
            format="multipart",
        )  # fmt: skip


def _baseline_archive(tmp_path: Path, rfp: Rfp, buyer_org: Organisation) -> Path:
    files = bundle_files()
    manifest = runner_manifest(files, rfp, buyer_org)
    return build_bundle(tmp_path / "baseline", files, key=BUYER_KEY, manifest=manifest)


@pytest.fixture
def rfp(vendor_a_org: Organisation, buyer_org: Organisation) -> Rfp:
    return open_rfp(vendor_a_org, buyer=buyer_org)


@pytest.fixture
def baseline_bundle(
    tmp_path: Path, rfp: Rfp, buyer: Any, buyer_org: Organisation
) -> Bundle:
    assert _register_buyer_key(buyer).status_code == 201
    response = _upload(buyer, rfp, _baseline_archive(tmp_path, rfp, buyer_org))
    assert response.status_code == 201, response.content
    return Bundle.objects.get(public_id=response.json()["id"])


@pytest.fixture
def baseline(baseline_bundle: Bundle, buyer_org: Organisation, labops: Any) -> Campaign:
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    return start(baseline_bundle, pool, labops, repetitions=2)


def test_a_buyer_registers_a_signing_key_of_its_organisation(
    buyer: Any, evaluator: Any
) -> None:
    response = _register_buyer_key(buyer)

    assert response.status_code == 201
    assert response.json()["organisation"] == "northwind-ai"
    assert _api(evaluator).post(
        "/api/v1/signing-keys/", {"public_key": corpus_key("org-x").public_line},
        format="json",
    ).status_code == 403  # fmt: skip


def test_the_buyer_uploads_a_baseline_bundle_signed_by_its_organisation(
    baseline_bundle: Bundle, buyer_org: Organisation
) -> None:
    assert baseline_bundle.status == Bundle.Status.ACCEPTED
    assert baseline_bundle.organisation == buyer_org


def test_a_baseline_bundle_is_taken_after_the_bids_are_opened(
    tmp_path: Path, rfp: Rfp, buyer: Any, buyer_org: Organisation
) -> None:
    _register_buyer_key(buyer)
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)

    response = _upload(buyer, rfp, _baseline_archive(tmp_path, rfp, buyer_org))

    assert response.status_code == 201, response.content


def test_a_baseline_signed_with_a_vendors_key_is_rejected(
    tmp_path: Path, rfp: Rfp, buyer: Any, buyer_org: Organisation
) -> None:
    files = bundle_files()
    manifest = runner_manifest(files, rfp, buyer_org)
    archive = build_bundle(tmp_path / "b", files, key="vendor_a", manifest=manifest)

    response = _upload(buyer, rfp, archive)

    assert response.status_code == 422


@pytest.mark.parametrize("persona", ["evaluator", "labops", "auditor", "outsider"])
def test_only_the_rfps_buyers_upload_a_baseline(
    persona: str, request: pytest.FixtureRequest, tmp_path: Path, rfp: Rfp,
    buyer_org: Organisation,
) -> None:  # fmt: skip
    user = request.getfixturevalue(persona)

    response = _upload(user, rfp, _baseline_archive(tmp_path, rfp, buyer_org))

    assert response.status_code in (403, 404)
    assert not Bundle.objects.exists()


def test_the_lab_runs_a_baseline_while_the_bids_are_sealed(
    baseline: Campaign, rfp: Rfp
) -> None:
    assert rfp.status == Rfp.Status.PUBLISHED
    assert baseline.role == Campaign.Role.BASELINE
    assert baseline.runs.count() == 4


def test_a_vendors_bundle_still_waits_for_the_opening(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    buyer_org: Organisation, labops: Any,
) -> None:  # fmt: skip
    register_corpus_keys([vendor_a_org], vendor_a)
    bundle = accepted_bundle(tmp_path / "v", rfp, vendor_a_org, vendor_a)
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    assert start(bundle, pool, labops).role == Campaign.Role.VENDOR
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.PUBLISHED)
    bundle.rfp.refresh_from_db()

    with pytest.raises(RunnerConflict):
        start(bundle, pool, labops)


@pytest.mark.parametrize(
    ("persona", "status"),
    [("buyer", 200), ("evaluator", 200), ("labops", 200), ("auditor", 200),
     ("vendor_a", 404), ("vendor_b", 404), ("outsider", 404)],
)  # fmt: skip
def test_who_sees_the_baseline_campaign_its_runs_and_bundle(
    persona: str, status: int, request: pytest.FixtureRequest, baseline: Campaign
) -> None:
    client = _api(request.getfixturevalue(persona))
    run = baseline.runs.first()
    assert run is not None

    got = [
        client.get(f"/api/v1/campaigns/{baseline.public_id}/").status_code,
        client.get(f"/api/v1/runs/{run.public_id}/").status_code,
    ]

    assert got == [status, status]
    bundle = client.get(f"/api/v1/bundles/{baseline.bundle.public_id}/")
    assert bundle.status_code == (404 if persona != "buyer" and
                                  persona != "evaluator" else 200)  # fmt: skip


def test_the_campaign_api_names_the_role(buyer: Any, baseline: Campaign) -> None:
    body = _api(buyer).get(f"/api/v1/campaigns/{baseline.public_id}/").json()

    assert (body["role"], body["vendor"]) == ("baseline", "northwind-ai")


def test_the_buyer_uploads_a_baseline_from_the_upload_page(
    client_for: Any, tmp_path: Path, rfp: Rfp, buyer: Any, buyer_org: Organisation
) -> None:
    _register_buyer_key(buyer)
    url = f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    page = client_for(buyer).get(url)
    with _baseline_archive(tmp_path, rfp, buyer_org).open("rb") as handle:
        client_for(buyer).post(url, {"file": handle})

    assert 'data-testid="upload-baseline"' in page.content.decode()
    bundle = Bundle.objects.get()
    assert (bundle.status, bundle.organisation) == (Bundle.Status.ACCEPTED, buyer_org)


def test_an_evaluator_cannot_open_the_upload_page(
    client_for: Any, rfp: Rfp, evaluator: Any
) -> None:
    response = client_for(evaluator).get(
        f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    )

    assert response.status_code == 403


def test_the_lab_pages_mark_the_baseline_campaign(
    client_for: Any, labops: Any, baseline: Campaign
) -> None:
    client = client_for(labops)

    listed = client.get("/lab/campaigns/").content.decode()
    page = client.get(f"/lab/campaigns/{baseline.public_id}/").content.decode()

    assert 'data-testid="campaign-baseline"' in listed
    assert 'data-testid="campaign-baseline"' in page
