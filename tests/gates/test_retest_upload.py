"""A vendor that owes a re-test uploads its revised bundle after the RFP has
stopped taking submissions; nobody else can, and the upload page says why it is
open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.exceptions import ApplicationError
from artifacts.models import Bundle
from gates.models import GatePlan, RetestObligation
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.artifacts.ingest_support import ingest
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    bundle_files,
    runner_manifest,
)
from tests.gates.support import finish_runs

pytestmark = pytest.mark.django_db


def revised_archive(tmp_path: Path, rfp: Rfp, vendor: Any) -> Path:
    from tests.artifacts.ingest_support import build_bundle

    files = bundle_files(GOOD_HARNESS + b"\n# revised\n")
    return build_bundle(
        tmp_path / "revised", files, manifest=runner_manifest(files, rfp, vendor)
    )


@pytest.fixture
def owed(frozen_plan: GatePlan, gate_campaign: Any, buyer: Any) -> RetestObligation:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [236.5, 240.1, 231.0]})  # claimed 180 ms
    gate_judge(plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer)
    return RetestObligation.objects.get()


def test_the_vendor_owing_a_retest_uploads_its_revised_bundle_after_opening(
    tmp_path: Path, owed: RetestObligation, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.OPENED

    bundle = ingest(
        rfp, vendor_a_org, vendor_a, revised_archive(tmp_path, rfp, vendor_a_org)
    )

    assert bundle.status == Bundle.Status.ACCEPTED


def test_without_an_open_obligation_the_upload_is_refused_after_opening(
    tmp_path: Path, gate_bundle: Bundle, rfp: Rfp, vendor_a_org: Any, vendor_a: Any
) -> None:
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.OPENED
    archive = revised_archive(tmp_path, rfp, vendor_a_org)

    with pytest.raises(
        ApplicationError, match="submitted or changed only while it is published"
    ):
        ingest(rfp, vendor_a_org, vendor_a, archive)


def test_an_expired_obligation_no_longer_opens_the_upload(
    tmp_path: Path,
    owed: RetestObligation,
    rfp: Rfp,
    vendor_a_org: Any,
    vendor_a: Any,
    clock: Any,
) -> None:
    clock.travel_to(owed.deadline)
    archive = revised_archive(tmp_path, rfp, vendor_a_org)

    with pytest.raises(ApplicationError, match="can no longer be submitted or changed"):
        ingest(rfp, vendor_a_org, vendor_a, archive)


def test_the_upload_page_says_the_upload_is_for_the_retest(
    owed: RetestObligation, rfp: Rfp, client_for: Any, vendor_a: Any, vendor_b: Any
) -> None:
    url = reverse("artifacts:bundle_upload", args=[rfp.public_id])

    page = client_for(vendor_a).get(url).content.decode()
    assert 'data-testid="upload-retest"' in page
    assert 'data-testid="upload-closed"' not in page
    assert 'data-testid="bundle-upload"' in page

    other = client_for(vendor_b).get(url).content.decode()
    assert 'data-testid="upload-closed"' in other
    assert "re-test" not in other
