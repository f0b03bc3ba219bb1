"""PAdES signatures of a WeasyPrint PDF, checked by Poppler's ``pdfsig`` against
an NSS database that trusts only the local report CA: valid, trusted, covering
the whole document; with an RFC 3161 token from the local TSA when a URL is
given and none without; a byte changed in the signed range is a digest
mismatch. pyHanko's own validator confirms the certification (no changes)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import weasyprint  # type: ignore[import-untyped]
from pyhanko.keys import load_certs_from_pemder_data
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign import fields
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko.sign.validation.status import SignatureCoverageLevel
from pyhanko_certvalidator import ValidationContext

from gates.lib.signing.pades import PdfSigningError, sign_pdf
from gates.lib.signing.pki import ReportSigner, signer_load_or_create
from tests.reports.pdfsig import has_timestamp, nss_db, pdfsig
from tests.reports.tsa import LocalTsa, local_tsa, tsa  # noqa: F401 (fixture)

HTML = """<!doctype html><html><head><meta charset="utf-8"><style>
body { font-family: "DejaVu Sans"; }</style></head><body>
<h1>Benchmark report</h1><p>Gate “G1”: PASS — 3 criteria, ±2 %.</p></body></html>"""


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return weasyprint.HTML(string=HTML).write_pdf()


@pytest.fixture
def signer(tmp_path: Path) -> ReportSigner:
    return signer_load_or_create(tmp_path / "keys", create=True)


def _write(tmp_path: Path, data: bytes, name: str = "signed.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _byte_range(data: bytes) -> tuple[int, int, int, int]:
    found = re.search(rb"/ByteRange\s*\[\s*(\d+) (\d+) (\d+) (\d+)\s*\]", data)
    assert found, "no /ByteRange"
    a, b, c, d = (int(x) for x in found.groups())
    return a, b, c, d


def test_the_signed_pdf_is_valid_trusted_and_whole(
    tmp_path: Path, pdf: bytes, signer: ReportSigner
) -> None:
    signed = sign_pdf(pdf, signer, reason="Benchmark report", location="Lab")

    result = pdfsig(_write(tmp_path, signed), nss_db(tmp_path, [signer.ca_pem]))

    assert result["signatures"] == 1
    assert result["signature_validation"] == "Signature is Valid."
    assert result["certificate_validation"] == "Certificate is Trusted."
    assert result["total_document_signed"], result["output"]
    assert "ETSI.CAdES.detached" in result["output"]
    assert "ReproGate report signing" in result["output"]
    assert signed.startswith(pdf)  # an incremental update of the rendered file


def test_the_signature_covers_every_byte_but_its_own(
    pdf: bytes, signer: ReportSigner
) -> None:
    signed = sign_pdf(pdf, signer, reason="Benchmark report")

    start, first, second, length = _byte_range(signed)

    assert start == 0
    assert second + length == len(signed)
    hole = signed[first:second]
    assert hole.startswith(b"<")
    assert hole.endswith(b">")


def test_an_unknown_issuer_is_not_trusted(
    tmp_path: Path, pdf: bytes, signer: ReportSigner
) -> None:
    """The check can fail: a database without the report CA does not trust it."""
    other = signer_load_or_create(tmp_path / "other", create=True)
    signed = sign_pdf(pdf, signer, reason="Benchmark report")

    result = pdfsig(_write(tmp_path, signed), nss_db(tmp_path, [other.ca_pem]))

    assert result["valid"]
    assert not result["trusted"]


def test_a_changed_byte_in_the_signed_range_is_a_digest_mismatch(
    tmp_path: Path, pdf: bytes, signer: ReportSigner
) -> None:
    signed = bytearray(sign_pdf(pdf, signer, reason="Benchmark report"))
    _, first, _, _ = _byte_range(bytes(signed))
    offset = signed.index(b"stream") + 20  # inside the first page's content
    assert offset < first  # in the signed range, not in /Contents
    signed[offset] ^= 0x01
    nssdb = nss_db(tmp_path, [signer.ca_pem])

    result = pdfsig(_write(tmp_path, bytes(signed)), nssdb)

    assert not result["valid"]
    assert "Digest Mismatch" in result["signature_validation"], result["output"]


def test_without_a_tsa_there_is_no_timestamp(
    tmp_path: Path, pdf: bytes, signer: ReportSigner
) -> None:
    signed = sign_pdf(pdf, signer, reason="Benchmark report")

    assert not has_timestamp(_write(tmp_path, signed))


def test_with_the_tsa_the_signature_carries_a_timestamp(
    tmp_path: Path,
    pdf: bytes,
    signer: ReportSigner,
    tsa: LocalTsa,  # noqa: F811
) -> None:
    signed = sign_pdf(pdf, signer, reason="Benchmark report", timestamp_url=tsa.url)
    path = _write(tmp_path, signed)

    result = pdfsig(path, nss_db(tmp_path, [signer.ca_pem, tsa.ca_pem]))

    assert has_timestamp(path)
    assert result["valid"], result["output"]
    assert result["trusted"], result["output"]
    assert result["total_document_signed"]


def test_pyhanko_sees_a_certification_that_permits_no_change(
    pdf: bytes, signer: ReportSigner
) -> None:
    with local_tsa() as (url, tsa_ca):
        signed = sign_pdf(pdf, signer, reason="Benchmark report", timestamp_url=url)
    roots = [*load_certs_from_pemder_data(signer.ca_pem)]
    roots += load_certs_from_pemder_data(tsa_ca)
    context = ValidationContext(trust_roots=roots, allow_fetching=False)

    (embedded,) = PdfFileReader(io.BytesIO(signed)).embedded_signatures
    status = validate_pdf_signature(
        embedded, signer_validation_context=context, ts_validation_context=context
    )

    assert embedded.docmdp_level == fields.MDPPerm.NO_CHANGES
    assert status.bottom_line, status.pretty_print_details()
    assert status.coverage == SignatureCoverageLevel.ENTIRE_FILE
    assert status.timestamp_validity is not None
    assert status.timestamp_validity.trusted


def test_an_unreachable_tsa_is_a_readable_error(
    pdf: bytes, signer: ReportSigner
) -> None:
    with local_tsa() as (url, _ca):
        pass  # the port is free again: nothing listens there now

    with pytest.raises(PdfSigningError, match=r"time-stamping authority .* did not"):
        sign_pdf(pdf, signer, reason="Benchmark report", timestamp_url=url)


@pytest.mark.parametrize(
    "data", [b"", b"not a pdf", b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF\n"]
)
def test_bad_pdfs_are_a_readable_error(data: bytes, signer: ReportSigner) -> None:
    with pytest.raises(PdfSigningError, match=r"not a readable PDF|could not be"):
        sign_pdf(data, signer, reason="Benchmark report")


def test_a_broken_signer_is_a_readable_error(pdf: bytes, signer: ReportSigner) -> None:
    broken = ReportSigner(b"nope", signer.cert_pem, (), None)

    with pytest.raises(PdfSigningError, match="signing key cannot be used"):
        sign_pdf(pdf, broken, reason="Benchmark report")
