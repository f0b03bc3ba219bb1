"""Signed report PDFs in bundles, end to end: the bundle is accepted, its page
and API show the signer, time stamp, coverage and trust; one flipped signed
byte makes an "invalid signature" problem and the completeness lower, never a
rejection; an unsigned PDF is not counted; garbage is a named problem; the
statement beside the PDF shows what the report claims."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.test import APIClient

from artifacts.conf import bundle_report_trust_roots_pem
from artifacts.models import Bundle
from artifacts.selectors.procurement_hooks import evidence_summary
from artifacts.services import report_signatures
from gates.lib.signing.pki import ReportSigner, signer_load_or_create
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.artifacts.signed_report_support import (
    envelope,
    flipped,
    render_pdf,
    signed,
)
from tests.procurement.factories_evaluation import RequiredArtifactFactory

pytestmark = pytest.mark.django_db
PDF_PATH = "reports/bench.pdf"


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> ReportSigner:
    return signer_load_or_create(tmp_path_factory.mktemp("keys"), create=True)


@pytest.fixture(scope="module")
def good(signer: ReportSigner) -> bytes:
    return signed(render_pdf(), signer)


@pytest.fixture
def report_rfp(rfp: Rfp) -> Rfp:
    RequiredArtifactFactory.create(rfp=rfp, kind="report", title="Signed reports")
    return rfp


def _bundle(
    rfp: Rfp, org: Any, user: Any, directory: Path, extra: dict[str, bytes]
) -> Bundle:
    path = build_bundle(directory, good_files() | extra)
    bundle = ingest(Rfp.objects.get(pk=rfp.pk), org, user, path)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return bundle


def _report_item(bundle: Bundle) -> dict[str, Any]:
    items = bundle.completeness["artifacts"]["required"]
    (item,) = [i for i in items if i["kind"] == "report"]
    return dict(item)


def test_a_signed_report_counts_and_the_page_shows_its_signer(
    client_for: Any, vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    extra = {PDF_PATH: good, f"{PDF_PATH}.intoto.json": envelope(good)}
    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, extra)

    html = client_for(vendor_a).get(f"/artifacts/bundles/{bundle.public_id}/")

    item = _report_item(bundle)
    assert item["present"] is True
    assert item["signature"] == "valid"
    assert bundle.completeness["artifacts"]["complete"] is True
    page = html.content.decode()
    assert "ReproGate report signing (ReproGate)" in page
    assert "signature intact, signer not in the installation's trust list" in page
    assert "the whole document" in page
    assert "signing time claimed by the signer only" in page
    assert "ttft_ms_p99" in page  # the statement's claims
    assert 'data-testid="signed-report-statement-problem"' not in page


def test_a_flipped_byte_is_an_invalid_signature_and_lowers_completeness(
    client_for: Any, vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    before = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path / "a", {PDF_PATH: good}
    )
    after = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path / "b", {PDF_PATH: flipped(good)}
    )

    html = client_for(vendor_a).get(f"/artifacts/bundles/{after.public_id}/")

    assert after.status == Bundle.Status.ACCEPTED  # a named problem, no rejection
    assert _report_item(after)["present"] is False
    assert _report_item(after)["signature"] == "invalid"
    passed = [b.completeness["score"]["passed"] for b in (before, after)]
    assert passed[1] == passed[0] - 1
    mandatory = [
        b.completeness["artifacts"]["mandatory_present"] for b in (before, after)
    ]
    assert mandatory[1] == mandatory[0] - 1
    (problem,) = after.completeness["signed_reports"]["problems"]
    assert problem["message"].startswith("invalid signature: ")
    assert problem["path"] == PDF_PATH
    assert "invalid signature: the signed bytes" in html.content.decode()


def test_the_bid_checklist_counts_only_a_valid_signed_report(
    vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp, tmp_path: Path, good: bytes
) -> None:
    valid = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path / "a", {PDF_PATH: good}
    )
    broken = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path / "b", {PDF_PATH: flipped(good)}
    )

    counted, refused = evidence_summary(valid), evidence_summary(broken)

    assert "report" in counted.kinds_present
    assert counted.signed_kinds_verified == ("report",)
    assert "report" not in refused.kinds_present
    assert refused.signed_kinds_verified == ()


def test_an_unsigned_pdf_is_not_counted(
    vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp, tmp_path: Path
) -> None:
    bundle = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path, {PDF_PATH: render_pdf()}
    )

    item = _report_item(bundle)
    assert item["present"] is False
    assert item["supplied"] is True
    assert item["signature"] == "unsigned"
    assert "report" not in bundle.completeness["artifacts"]["kinds_counted"]
    assert "report" in bundle.completeness["artifacts"]["kinds_present"]


def test_a_markdown_report_alone_is_not_a_signed_report(
    vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp, tmp_path: Path
) -> None:
    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, {})

    assert _report_item(bundle)["signature"] == "no_pdf"
    assert _report_item(bundle)["present"] is False


@pytest.mark.parametrize(
    "data", [b"%PDF-1.7\n" + b"\x00garbage" * 500, b"<html>not a pdf</html>"]
)
def test_a_garbage_pdf_is_a_named_problem_not_a_crash(
    vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp, tmp_path: Path, data: bytes
) -> None:
    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, {PDF_PATH: data})

    (problem,) = bundle.completeness["signed_reports"]["problems"]
    assert problem["code"] == "report_unreadable"
    assert _report_item(bundle)["present"] is False


def test_a_check_past_its_time_is_a_named_problem(
    settings: Any, vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    settings.BUNDLE_REPORT_CHECK_SECONDS = 0.01

    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, {PDF_PATH: good})

    (problem,) = bundle.completeness["signed_reports"]["problems"]
    assert problem["code"] == "report_check_timeout"
    assert _report_item(bundle)["present"] is False


def test_pdfs_past_the_cap_are_named_not_checked(
    monkeypatch: pytest.MonkeyPatch, vendor_a: Any, vendor_a_org: Any,
    report_rfp: Rfp, tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    monkeypatch.setattr(report_signatures, "MAX_CHECKED_PDFS", 1)
    extra = {"reports/a.pdf": good, "reports/b.pdf": good}

    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, extra)

    files = bundle.completeness["signed_reports"]["files"]
    assert [f["status"] for f in files] == ["valid", "unreadable"]
    assert files[1]["problem"]["code"] == "report_not_checked"
    assert _report_item(bundle)["present"] is True  # one valid report counts


def test_a_statement_by_another_vendor_is_an_invalid_statement(
    client_for: Any, vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    extra = {PDF_PATH: good, f"{PDF_PATH}.dsse": envelope(good, key="vendor_b")}
    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, extra)

    html = client_for(vendor_a).get(f"/artifacts/bundles/{bundle.public_id}/")

    (checked,) = bundle.completeness["signed_reports"]["files"]
    assert checked["status"] == "valid"  # the PDF itself is fine
    assert checked["statement"]["status"] == "invalid"
    (problem,) = bundle.completeness["signed_reports"]["problems"]
    assert problem["path"] == f"{PDF_PATH}.dsse"
    assert 'data-testid="signed-report-statement-problem"' in html.content.decode()
    assert 'data-testid="signed-report-claims"' not in html.content.decode()


def test_the_api_shows_the_signer_and_hides_it_from_other_vendors(
    vendor_a: Any, vendor_b: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes,
) -> None:  # fmt: skip
    bundle = _bundle(report_rfp, vendor_a_org, vendor_a, tmp_path, {PDF_PATH: good})
    url = f"/api/v1/bundles/{bundle.public_id}/"
    own, other = APIClient(), APIClient()
    own.force_authenticate(vendor_a)
    other.force_authenticate(vendor_b)

    body = own.get(url).json()

    reports = body["completeness"]["signed_reports"]
    assert reports["valid"] == 1
    signer = reports["files"][0]["signatures"][0]["signer"]
    assert signer["common_name"] == "ReproGate report signing"
    assert other.get(url).status_code == 404


def test_the_trust_roots_setting_makes_the_signer_trusted(
    settings: Any, vendor_a: Any, vendor_a_org: Any, report_rfp: Rfp,
    tmp_path: Path, good: bytes, signer: ReportSigner,
) -> None:  # fmt: skip
    assert signer.ca_pem is not None
    roots = tmp_path / "roots.pem"
    roots.write_bytes(signer.ca_pem)
    settings.BUNDLE_REPORT_TRUST_ROOTS_FILE = str(roots)

    bundle = _bundle(
        report_rfp, vendor_a_org, vendor_a, tmp_path / "b", {PDF_PATH: good}
    )

    (checked,) = bundle.completeness["signed_reports"]["files"]
    assert checked["signatures"][0]["trusted"] is True


@pytest.mark.parametrize("content", [None, b"", b"not a certificate"])
def test_an_unusable_trust_roots_file_is_a_configuration_error(
    settings: Any, tmp_path: Path, content: bytes | None
) -> None:
    roots = tmp_path / "roots.pem"
    if content is not None:
        roots.write_bytes(content)
    settings.BUNDLE_REPORT_TRUST_ROOTS_FILE = str(roots)

    with pytest.raises(ImproperlyConfigured, match="BUNDLE_REPORT_TRUST_ROOTS_FILE"):
        bundle_report_trust_roots_pem()


def test_the_check_never_runs_without_a_pdf(
    vendor_a: Any, vendor_a_org: Any, rfp: Rfp, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, vendor_a, tmp_path, {})

    assert bundle.completeness["signed_reports"] == {
        "files": [],
        "valid": 0,
        "problems": [],
    }
