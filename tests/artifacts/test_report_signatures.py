"""The signed-report checks with no database: a report PDF's PAdES signature
(signer, integrity, time stamp, whole-document coverage, trust), hostile PDFs
turned into named problems in a limited child process, and the in-toto
statement beside the PDF checked with DSSE against the vendor's keys. Poppler's
``pdfsig`` cross-checks the verdicts on the good and the flipped file."""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import pytest
from pyhanko.pdf_utils import generic
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

from artifacts.lib.reports.bounded import PdfLimits, check_pdf_bounded
from artifacts.lib.reports.pades import check_pdf
from artifacts.lib.reports.statement import check_statement, statement_paths
from gates.lib.signing.pki import ReportSigner, signer_load_or_create
from tests.artifacts.corpus.build import corpus_key
from tests.artifacts.signed_report_support import (
    CLAIMS,
    PREDICATE_TYPE,
    envelope,
    flipped,
    public_keys,
    render_pdf,
    signed,
)
from tests.reports.pdfsig import nss_db, pdfsig
from tests.reports.tsa import local_tsa


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return render_pdf()


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> ReportSigner:
    return signer_load_or_create(tmp_path_factory.mktemp("keys"), create=True)


@pytest.fixture(scope="module")
def good(pdf: bytes, signer: ReportSigner) -> bytes:
    return signed(pdf, signer)


def test_a_signed_pdf_is_valid_and_names_its_signer(good: bytes) -> None:
    verdict = check_pdf(good)

    assert verdict["status"] == "valid", verdict
    (signature,) = verdict["signatures"]
    assert signature["signer"]["common_name"] == "ReproGate report signing"
    assert signature["signer"]["organisation"] == "ReproGate"
    assert "report signing CA" in signature["signer"]["issuer"]
    assert signature["signer"]["serial"]
    assert signature["whole_document"] is True
    assert signature["coverage"] == "entire_file"
    assert signature["trusted"] is False  # no trust roots: shown, not refused
    assert signature["timestamp"]["kind"] == "claimed"
    assert "problem" not in verdict


def test_the_installation_root_makes_the_signer_trusted(
    good: bytes, signer: ReportSigner
) -> None:
    assert signer.ca_pem is not None

    verdict = check_pdf(good, trust_roots_pem=signer.ca_pem)

    assert verdict["signatures"][0]["trusted"] is True


def test_an_rfc3161_token_is_reported_with_its_authority(
    pdf: bytes, signer: ReportSigner
) -> None:
    with local_tsa() as (url, _ca):
        data = signed(pdf, signer, timestamp_url=url)

    stamp = check_pdf(data)["signatures"][0]["timestamp"]

    assert stamp["kind"] == "rfc3161"
    assert stamp["intact"]
    assert stamp["valid"]
    assert stamp["tsa"] == "Common Name: Test TSA"
    assert stamp["time"]


def test_a_flipped_signed_byte_is_an_invalid_signature(good: bytes) -> None:
    verdict = check_pdf(flipped(good))

    assert verdict["status"] == "invalid"
    assert verdict["problem"]["code"] == "report_signature_invalid"
    assert verdict["problem"]["message"].startswith("invalid signature: ")
    assert "digest mismatch" in verdict["problem"]["message"]
    assert verdict["signatures"][0]["intact"] is False


def test_a_corrupted_signature_value_is_an_invalid_signature(good: bytes) -> None:
    start = good.index(b"/Contents <") + len(b"/Contents <")
    broken = good[:start] + b"00" * 64 + good[start + 128 :]

    verdict = check_pdf(broken)

    assert verdict["status"] == "invalid"
    assert verdict["problem"]["code"] == "report_signature_invalid"
    assert verdict["problem"]["message"].startswith("invalid signature: ")


def test_a_change_appended_after_signing_is_not_the_whole_document(
    good: bytes,
) -> None:
    writer = IncrementalPdfFileWriter(io.BytesIO(good))
    writer.root["/Lang"] = generic.TextStringObject("xx")
    writer.update_root()
    out = io.BytesIO()
    writer.write(out)

    verdict = check_pdf(out.getvalue())

    assert verdict["status"] == "invalid"
    assert verdict["signatures"][0]["intact"] is True  # the signed bytes are intact
    assert verdict["signatures"][0]["whole_document"] is False
    assert verdict["problem"]["message"].startswith("invalid signature: ")


def test_an_unsigned_pdf_is_named_unsigned(pdf: bytes) -> None:
    verdict = check_pdf(pdf)

    assert verdict["status"] == "unsigned"
    assert verdict["problem"]["code"] == "report_unsigned"


@pytest.mark.parametrize(
    "data",
    [b"", b"not a pdf at all", b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF\n",
     b"%PDF-1.7\n" + b"\xff" * 4096, b"%PDF-1.4\ntrailer<</Root 1 0 R>>\n%%EOF"],
)  # fmt: skip
def test_garbage_is_a_named_problem_never_an_exception(data: bytes) -> None:
    verdict = check_pdf(data)

    assert verdict["status"] in ("unreadable", "unsigned")
    assert verdict["problem"]["code"] in ("report_unreadable", "report_unsigned")


def test_the_bounded_check_gives_the_same_verdict(good: bytes) -> None:
    assert check_pdf_bounded(good)["status"] == "valid"
    assert check_pdf_bounded(flipped(good))["status"] == "invalid"
    assert check_pdf_bounded(b"junk")["problem"]["code"] == "report_unreadable"


def test_a_pdf_over_the_size_cap_is_not_parsed(good: bytes) -> None:
    verdict = check_pdf_bounded(good, limits=PdfLimits(max_bytes=len(good) - 1))

    assert verdict["problem"]["code"] == "report_too_large"


def test_a_check_that_runs_too_long_is_stopped(good: bytes) -> None:
    verdict = check_pdf_bounded(good, limits=PdfLimits(timeout_seconds=0.01))

    assert verdict["problem"]["code"] == "report_check_timeout"


def test_a_check_that_runs_out_of_memory_is_a_named_problem(good: bytes) -> None:
    limits = PdfLimits(memory_bytes=32 * 1024 * 1024)  # below what pyHanko holds

    verdict = check_pdf_bounded(good * 4, limits=limits)

    assert verdict["status"] == "unreadable"
    assert verdict["problem"]["code"] in ("report_check_failed", "report_unreadable")


# --- the statement beside the PDF ----------------------------------------------------


def _check(data: bytes, pdf: bytes, *keys: str) -> dict[str, object]:
    return check_statement(
        data,
        path="reports/bench.pdf.intoto.json",
        pdf_sha256=hashlib.sha256(pdf).hexdigest(),
        public_keys=public_keys(*(keys or ("vendor_a",))),
    )


def test_a_statement_signed_with_a_vendor_key_is_valid(good: bytes) -> None:
    verdict = _check(envelope(good), good)

    assert verdict["status"] == "valid", verdict
    assert verdict["predicate_type"] == PREDICATE_TYPE
    assert verdict["predicate"] == CLAIMS
    assert ["users", "32"] in verdict["claims"]  # type: ignore[operator]
    assert verdict["key"] == public_keys("vendor_a")[0].fingerprint


def test_nested_claims_are_shown_as_json(good: bytes) -> None:
    predicate = {"latency": {"p99_ms": 180}, "note": "x" * 500}

    verdict = _check(envelope(good, predicate=predicate), good)

    assert verdict["claims"] == [["latency", '{"p99_ms": 180}'], ["note", "x" * 200]]


def test_a_statement_about_other_bytes_is_invalid(good: bytes) -> None:
    verdict = _check(envelope(good, digest="0" * 64), good)

    assert verdict["status"] == "invalid"
    assert "no subject has the PDF's SHA-256" in verdict["problem"]["message"]  # type: ignore[index]


def test_a_statement_signed_by_another_key_is_invalid(good: bytes) -> None:
    verdict = _check(envelope(good, key="vendor_b"), good, "vendor_a")

    assert verdict["status"] == "invalid"
    assert verdict["problem"]["code"] == "report_statement_invalid"  # type: ignore[index]
    assert "signature" in verdict["problem"]["message"]  # type: ignore[index]


def test_a_statement_with_another_payload_type_is_invalid(good: bytes) -> None:
    data = envelope(good, payload_type="application/json")

    verdict = _check(data, good)

    assert verdict["status"] == "invalid"
    assert "payloadType" in verdict["problem"]["message"]  # type: ignore[index]


@pytest.mark.parametrize("data", [b"", b"{}", b"[1]", b'{"payload": 3}', b"\xff" * 10])
def test_a_malformed_statement_is_invalid(good: bytes, data: bytes) -> None:
    assert _check(data, good)["status"] == "invalid"


def test_statements_are_looked_for_beside_the_pdf() -> None:
    assert statement_paths("reports/x.pdf") == (
        "reports/x.pdf.intoto.json",
        "reports/x.pdf.dsse",
    )
    assert corpus_key("vendor_a").organisation == "acme-flash"


# --- Poppler agrees ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("pdfsig") is None, reason="poppler-utils missing")
def test_pdfsig_agrees_on_the_good_and_the_flipped_file(
    tmp_path: Path, good: bytes, signer: ReportSigner
) -> None:
    assert signer.ca_pem is not None
    nssdb = nss_db(tmp_path, [signer.ca_pem])
    (tmp_path / "good.pdf").write_bytes(good)
    (tmp_path / "bad.pdf").write_bytes(flipped(good))

    ours_good, ours_bad = check_pdf(good), check_pdf(flipped(good))
    theirs_good = pdfsig(tmp_path / "good.pdf", nssdb)
    theirs_bad = pdfsig(tmp_path / "bad.pdf", nssdb)

    assert ours_good["status"] == "valid"
    assert theirs_good["valid"]
    assert theirs_good["total_document_signed"]
    assert ours_bad["status"] == "invalid"
    assert "Digest Mismatch" in theirs_bad["signature_validation"]
