"""Real signed reports in an evaluation's evidence package: the benchmark report
and the acceptance certificate of its promotion, rendered, signed and deposited
by the report task, are in the package and ``reprogate evidence verify`` checks
both (PDF digests, statements signed with the installation's key, their
subjects and result); a changed byte of the certificate's PDF is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gates.models import Decision, Report
from gates.services.reports import report_generate
from tests.escrow.package_support import flip, members, replaced
from tests.escrow.test_evidence_evaluation import download_to, verify

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _log_key(settings: Any, tmp_path: Path) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    settings.REPROGATE_LOG_ORIGIN = "escrow.test/log"


def test_the_report_and_the_certificate_are_checked(
    promoted: Decision, chromium: None, buyer: Any, client_for: Any, tmp_path: Path
) -> None:
    evaluation = promoted.evaluation
    reports = list(Report.objects.filter(evaluation=evaluation))
    assert {r.kind for r in reports} == {"evaluation", "certificate"}
    for report in reports:
        done = report_generate(report_id=report.pk)
        assert done is not None
        assert done.status == Report.Status.READY, done.error

    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")
    status, out = verify(package)

    assert status == 0, out
    for report in reports:
        assert f"report {report.public_id} (leaf " in out
    assert out.count("statement.json is signed by keys/reports.pub") == 2

    certificate = next(r for r in reports if r.kind == "certificate")
    certificate.refresh_from_db()
    name = f"blobs/{certificate.pdf_sha256}"
    pdf = members(package)[name]
    tampered = replaced(package, tmp_path / "t.zip", name, flip(pdf, len(pdf) // 2))
    status, out = verify(tampered)

    assert status == 1
    assert f"FAIL  report {certificate.public_id} (leaf " in out
    assert f"report.pdf ({name}) has SHA-256" in out
