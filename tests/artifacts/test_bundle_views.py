"""The bundle pages: upload through the browser form (the no-JS fallback of the
API upload), the bundle page with its receipt, files, completeness and problems,
and sealing (404 for other vendors, and for the buyer until the bids are opened)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from accounts.models import Organisation
from artifacts.models import Bundle
from artifacts.views.bundles import bundle_file_tree
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.artifacts.ingest_support import (
    build_bundle,
    open_rfp,
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.procurement.factories_evaluation import (
    RequiredArtifactFactory,
    RequiredMetricFactory,
)

pytestmark = pytest.mark.django_db


def _upload(client: Client, rfp: Rfp, path: Path) -> Any:
    with path.open("rb") as handle:
        return client.post(
            f"/artifacts/rfps/{rfp.public_id}/bundles/upload/",
            {"file": handle},
            follow=True,
        )


def _accepted(client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path) -> Bundle:
    _upload(client_for(vendor_a), rfp, build_bundle(tmp_path))
    return Bundle.objects.get(status=Bundle.Status.ACCEPTED)


def test_upload_page_shows_the_form_and_the_cli_alternative(
    client_for: Any, vendor_a: Any, rfp: Rfp
) -> None:
    response = client_for(vendor_a).get(
        f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert 'type="file"' in html
    assert f"--rfp {rfp.reference}" in html
    assert "reprogate submit" in html
    assert 'data-testid="bundle-cli"' in html


def test_uploading_a_good_bundle_redirects_to_its_accepted_page(
    client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path
) -> None:
    response = _upload(client_for(vendor_a), rfp, build_bundle(tmp_path))

    html = response.content.decode()
    bundle = Bundle.objects.get()
    assert response.redirect_chain[-1][0] == f"/artifacts/bundles/{bundle.public_id}/"
    assert 'data-testid="bundle-status">accepted<' in html
    assert html.count('data-testid="bundle-file"') == len(good_files())
    assert "harness/" in html
    assert bundle.sha256 in html


def test_a_hostile_bundle_page_shows_its_problem_codes(
    client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path
) -> None:
    files = {**good_files(), "../escape.sh": b"#!/bin/sh\nrm -rf /\n"}

    response = _upload(client_for(vendor_a), rfp, build_bundle(tmp_path, files))

    html = response.content.decode()
    bundle = Bundle.objects.get()
    assert bundle.status == Bundle.Status.REJECTED
    assert bundle.problems
    assert 'data-testid="bundle-status">rejected<' in html
    assert all(f"<code>{p['code']}</code>" in html for p in bundle.problems)


def test_an_upload_without_a_file_stays_on_the_form_with_an_error(
    client_for: Any, vendor_a: Any, rfp: Rfp
) -> None:
    response = client_for(vendor_a).post(
        f"/artifacts/rfps/{rfp.public_id}/bundles/upload/", {}
    )

    assert response.status_code == 400
    assert "Choose a bundle archive" in response.content.decode()
    assert not Bundle.objects.exists()


def test_uploads_over_the_limit_are_refused_before_ingest(
    client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path, settings: Any
) -> None:
    settings.BUNDLE_MAX_UPLOAD_BYTES = 1024

    response = _upload(client_for(vendor_a), rfp, build_bundle(tmp_path))

    assert response.status_code == 400
    assert "upload limit" in response.content.decode()
    assert not Bundle.objects.exists()


def test_a_vendor_not_invited_cannot_open_the_upload_page(
    client_for: Any, vendor_b: Any, vendor_a_org: Organisation, buyer_org: Any
) -> None:
    rfp = open_rfp(vendor_a_org, buyer=buyer_org, reference="RFP-OTHER")

    response = client_for(vendor_b).get(
        f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    )

    assert response.status_code in (403, 404)


def test_another_vendor_gets_404_on_the_bundle_page(
    client_for: Any, vendor_a: Any, vendor_b: Any, rfp: Rfp, tmp_path: Path
) -> None:
    bundle = _accepted(client_for, vendor_a, rfp, tmp_path)

    response = client_for(vendor_b).get(f"/artifacts/bundles/{bundle.public_id}/")

    assert response.status_code == 404


def test_the_buyer_gets_404_while_sealed_and_the_page_once_opened(
    client_for: Any, vendor_a: Any, buyer: Any, rfp: Rfp, tmp_path: Path
) -> None:
    bundle = _accepted(client_for, vendor_a, rfp, tmp_path)
    url = f"/artifacts/bundles/{bundle.public_id}/"

    sealed = client_for(buyer).get(url)
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)
    opened = client_for(buyer).get(url)

    assert sealed.status_code == 404
    assert opened.status_code == 200
    assert 'data-testid="bundle-download"' in opened.content.decode()


def test_the_upload_page_lists_the_vendors_own_bundles_only(
    client_for: Any, vendor_a: Any, vendor_b: Any, rfp: Rfp, tmp_path: Path
) -> None:
    _accepted(client_for, vendor_a, rfp, tmp_path)
    url = f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"

    own = client_for(vendor_a).get(url).content.decode()
    other = client_for(vendor_b).get(url).content.decode()

    assert own.count('data-testid="bundle-row"') == 1
    assert other.count('data-testid="bundle-row"') == 0


def test_the_file_tree_shows_each_folder_once_before_its_files() -> None:
    files = [
        type("F", (), {"path": p})()
        for p in ("traces/b/x.json", "harness/run.sh", "traces/a.csv")
    ]

    rows = [(r.name, r.depth) for r in bundle_file_tree(files)]

    assert rows == [
        ("harness/", 0), ("run.sh", 1),
        ("traces/", 0), ("a.csv", 1), ("b/", 1), ("x.json", 2),
    ]  # fmt: skip


def test_the_form_upload_checks_csrf_after_installing_the_upload_handler(
    vendor_a: Any, rfp: Rfp, tmp_path: Path
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(vendor_a)
    url = f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    token = client.get(url).context["csrf_token"]
    path = build_bundle(tmp_path)

    with path.open("rb") as handle:
        forged = client.post(url, {"file": handle})
    with path.open("rb") as handle:
        sent = client.post(url, {"csrfmiddlewaretoken": str(token), "file": handle})

    assert forged.status_code == 403
    assert sent.status_code == 302
    assert Bundle.objects.get().status == Bundle.Status.ACCEPTED


def _requiring(rfp: Rfp) -> Rfp:
    """The report among the required artifacts; ttft_ms required at p50 and p99
    while the good bundle claims p99 only (claimed, yet incomplete)."""
    RequiredArtifactFactory.create(rfp=rfp, kind="report", title="Signed reports")
    RequiredMetricFactory.create(rfp=rfp, name="ttft_ms", stats="p50,p99")
    return rfp


def test_the_bundle_page_says_a_report_without_a_pdf_is_not_counted(
    client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path
) -> None:
    """The good bundle's report is Markdown: supplied, but not a signed PDF."""
    client = client_for(vendor_a)
    html = _upload(client, _requiring(rfp), build_bundle(tmp_path)).content.decode()

    assert (
        'data-testid="report-signature-state">1 file supplied, no PDF among it: '
        "not counted</span>"
    ) in html
    assert "✓</span> Signed reports" not in html
    assert "✗</span> Signed reports" in html


def test_the_bundle_page_shows_every_check_its_score_counts(
    client_for: Any, vendor_a: Any, rfp: Rfp, tmp_path: Path
) -> None:
    client = client_for(vendor_a)
    html = _upload(client, _requiring(rfp), build_bundle(tmp_path)).content.decode()

    completeness = Bundle.objects.get().completeness
    assert completeness["metrics"]["missing"] == []  # claimed, but not at p50
    assert completeness["metrics"]["complete"] is False
    assert html.count('data-testid="check-metric"') == 1
    assert "claimed p99; not claimed: p50" in html
    failed = [
        k
        for k in ("artifacts", "environment", "claims", "metrics")
        if not completeness[k]["complete"]
    ]
    passed = completeness["score"]["passed"]
    assert f"{passed} of 4 checks pass" in html
    for part in failed:  # each failing check has a visible ✗ row
        assert {
            "metrics": "metrics ✗",
            "artifacts": "required artifacts ✗",
            "environment": "environment ✗",
            "claims": "claims ✗",
        }[part] in html
