"""Ingest runs the content checks: an accepted bundle records them in its
completeness report; a failing one is a completeness problem, not a rejection;
the SBOM's component count and licences show on the bundle page and API, to
its own vendor only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.procurement.factories_bids import tender
from tests.procurement.factories_bundles import accepted_bundle
from tests.procurement.factories_evaluation import RequiredArtifactFactory
from tests.procurement.test_bid_conditions import RUNBOOK, SBOM

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Organisation, clock: Any) -> Rfp:
    rfp = tender(buyer_org, vendor_a_org)
    RequiredArtifactFactory.create(rfp=rfp, kind="runbook", title="Runbook")
    return rfp


def _bundle(
    rfp: Rfp, org: Organisation, tmp_path: Path, extra: dict[str, bytes] | None = None
) -> Bundle:
    return accepted_bundle(rfp, org, tmp_path, files={**good_files(), **(extra or {})})


def test_a_failing_content_check_is_a_completeness_problem(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, {"runbooks/ops.md": b"todo"})

    report = bundle.completeness
    assert bundle.status == Bundle.Status.ACCEPTED
    assert report["content"]["failed"] == ["runbook"]
    assert report["artifacts"]["content_failed"] == ["runbook"]
    assert report["artifacts"]["required"][0]["content"] == "failed"
    assert report["artifacts"]["complete"] is False


def test_a_passing_content_check_completes_the_artifact(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, {"runbooks/ops.md": RUNBOOK})

    item = bundle.completeness["artifacts"]["required"][0]
    assert item["content"] == "passed"
    assert bundle.completeness["artifacts"]["content_failed"] == []


def test_sbom_counts_show_on_the_bundle_api_and_page(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path, client_for: Any
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, {"sbom/bom.json": SBOM})
    api = APIClient()
    api.force_authenticate(vendor_a)

    body = api.get(f"/api/v1/bundles/{bundle.public_id}/").json()
    page = (
        client_for(vendor_a)
        .get(f"/artifacts/bundles/{bundle.public_id}/")
        .content.decode()
    )

    assert body["sbom"]["components"] == 1
    assert body["sbom"]["licences"] == ["MIT"]
    assert body["sbom"]["documents"][0]["format"] == "cyclonedx"
    assert 'data-testid="sbom-components">1<' in page
    assert "<code>MIT</code>" in page


def test_another_vendor_sees_no_bundle_nor_its_sbom(
    rfp: Rfp,
    vendor_a_org: Organisation,
    vendor_b: Any,
    tmp_path: Path,
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, {"sbom/bom.json": SBOM})
    api = APIClient()
    api.force_authenticate(vendor_b)

    response = api.get(f"/api/v1/bundles/{bundle.public_id}/")

    assert response.status_code == 404


def test_a_bundle_without_an_sbom_answers_null(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path)
    api = APIClient()
    api.force_authenticate(vendor_a)

    assert api.get(f"/api/v1/bundles/{bundle.public_id}/").json()["sbom"] is None
