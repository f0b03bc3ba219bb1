"""Poppler's ``pdfsig`` on every kind of PDF the product signs, as the report
task makes it: a benchmark report and an acceptance certificate, each without a
timestamp and with one from a local TSA. Each is valid, trusted once the
installation's report CA is in the NSS database, and signed as a whole; the
timestamp is there exactly when a TSA is configured; one byte changed in the
signed range makes the signature invalid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from artifacts.storage.blobs import blob_open
from gates.lib.signing.pki import signer_load_or_create
from gates.models import Decision, Evaluation, Report
from gates.services.reports import report_generate
from tests.reports.pdfsig import has_timestamp, nss_db, pdfsig
from tests.reports.tsa import tsa as tsa  # the fixture, for getfixturevalue

pytestmark = pytest.mark.django_db


def _pdf(report: Report) -> bytes:
    done = report_generate(report_id=report.pk)
    assert done is not None
    assert done.status == Report.Status.READY, done.error
    with blob_open(done.pdf_blob) as handle:
        data: bytes = handle.read()
    return data


def _changed_in_the_signed_range(data: bytes) -> bytes:
    found = re.search(rb"/ByteRange\s*\[\s*(\d+) (\d+) (\d+) (\d+)\s*\]", data)
    assert found, "no /ByteRange"
    first_length = int(found.group(2))  # bytes 0 .. first_length-1 are signed
    offset = data.index(b"stream") + 20  # inside the first page's content
    assert offset < first_length
    changed = bytearray(data)
    changed[offset] ^= 0x01
    return bytes(changed)


@pytest.mark.parametrize("timestamped", [False, True], ids=["no-tsa", "tsa"])
@pytest.mark.parametrize("kind", ["report", "certificate"])
def test_pdfsig_accepts_every_signed_pdf_and_refuses_a_changed_byte(
    kind: str,
    timestamped: bool,
    passed: Evaluation,
    promoted: Decision,
    chromium: None,
    report_keys: Path,
    settings: Any,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    if timestamped:
        settings.REPROGATE_REPORT_TSA_URL = request.getfixturevalue("tsa").url
    report = (
        Report.objects.get(evaluation=passed, kind=Report.Kind.EVALUATION)
        if kind == "report"
        else Report.objects.get(decision=promoted)
    )

    signed = _pdf(report)

    signer = signer_load_or_create(report_keys, create=False)
    assert signer.ca_pem is not None
    nssdb = nss_db(tmp_path, [signer.ca_pem])
    path = tmp_path / f"{kind}.pdf"
    path.write_bytes(signed)
    checked = pdfsig(path, nssdb)
    assert checked["signatures"] == 1, checked["output"]
    assert checked["valid"], checked["output"]
    assert checked["trusted"], checked["output"]
    assert checked["total_document_signed"], checked["output"]
    assert has_timestamp(path) is timestamped

    changed = tmp_path / f"{kind}-changed.pdf"
    changed.write_bytes(_changed_in_the_signed_range(signed))
    refused = pdfsig(changed, nssdb)
    assert not refused["valid"]
    assert "Digest Mismatch" in refused["signature_validation"], refused["output"]
