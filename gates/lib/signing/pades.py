"""PAdES signatures of the report PDFs with pyHanko (docs/reports.md, "How a
report is made", step 2).

One certifying signature that permits no change (DocMDP NO_CHANGES), SHA-256,
sub-filter ETSI.CAdES.detached (PAdES B-B), over the whole file as it was
rendered (the signature's byte range covers everything but its own
``/Contents``); with an RFC 3161 timestamp token from ``timestamp_url``, when
given (PAdES B-T). The signature field is invisible: the report's own pages say
who signed it. Nothing is fetched but the timestamp.
"""

from __future__ import annotations

import io
from typing import Final

from pyhanko.keys import load_certs_from_pemder_data, load_private_key_from_pemder_data
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
from pyhanko.pdf_utils.misc import PdfError
from pyhanko.sign import fields, signers
from pyhanko.sign.general import SigningError
from pyhanko.sign.timestamps import HTTPTimeStamper, TimestampRequestError
from pyhanko_certvalidator.registry import SimpleCertificateStore

from gates.lib.signing.pki import ReportSigner

FIELD_NAME: Final = "ReproGateSignature"
TIMESTAMP_TIMEOUT_SECONDS: Final = 30


class PdfSigningError(RuntimeError):
    """The PDF could not be signed (not a readable PDF, an unusable key, or the
    time-stamping authority did not answer); the message says which."""


def sign_pdf(
    pdf: bytes,
    signer: ReportSigner,
    *,
    reason: str,
    timestamp_url: str = "",
    location: str = "",
) -> bytes:
    """``pdf`` with a certifying PAdES signature by ``signer`` appended."""
    simple = _simple_signer(signer)
    meta = signers.PdfSignatureMetadata(
        field_name=FIELD_NAME,
        md_algorithm="sha256",
        subfilter=fields.SigSeedSubFilter.PADES,
        reason=reason or None,
        location=location or None,
        certify=True,
        docmdp_permissions=fields.MDPPerm.NO_CHANGES,
    )
    timestamper = (
        HTTPTimeStamper(timestamp_url, timeout=TIMESTAMP_TIMEOUT_SECONDS)
        if timestamp_url
        else None
    )
    pdf_signer = signers.PdfSigner(meta, signer=simple, timestamper=timestamper)
    try:
        writer = IncrementalPdfFileWriter(io.BytesIO(pdf))
    except (PdfError, ValueError, KeyError, TypeError, IndexError) as error:
        raise PdfSigningError(f"The document is not a readable PDF: {error}") from None
    try:
        out = pdf_signer.sign_pdf(writer)
    except TimestampRequestError as error:
        cause = error.__cause__ or error
        raise PdfSigningError(
            f"The time-stamping authority {timestamp_url} did not answer: {cause}"
        ) from None
    except (PdfError, SigningError) as error:
        raise PdfSigningError(f"The PDF could not be signed: {error}") from None
    return bytes(out.getbuffer())


def _simple_signer(signer: ReportSigner) -> signers.SimpleSigner:
    try:
        chain = [
            certificate
            for pem in signer.chain_pems
            for certificate in load_certs_from_pemder_data(pem)
        ]
        (certificate,) = load_certs_from_pemder_data(signer.cert_pem)
        return signers.SimpleSigner(
            signing_cert=certificate,
            signing_key=load_private_key_from_pemder_data(signer.key_pem, None),
            cert_registry=SimpleCertificateStore.from_certs(chain),
        )
    except (ValueError, TypeError) as error:
        raise PdfSigningError(f"The signing key cannot be used: {error}") from None
