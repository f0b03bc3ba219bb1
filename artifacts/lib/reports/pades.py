"""A report PDF's PAdES signatures, validated with pyHanko in this process
(``bounded`` runs this in a child process with limits; call that on vendor
bytes).

``check_pdf(data, trust_roots_pem=…)`` returns a JSON-able dict::

    {"status": "valid" | "invalid" | "unsigned" | "unreadable",
     "signatures": [{"field", "signer": {"common_name", "organisation", "subject",
                     "issuer", "serial", "not_before", "not_after", "sha256"},
                     "intact", "valid", "trusted", "coverage", "modification_level",
                     "whole_document", "docmdp_ok", "signing_time",
                     "timestamp": {"kind": "rfc3161" | "claimed" | "none", "time", …},
                     "certificate_valid_at_signing"}],
     "problem": {"code", "message"}  # absent when valid
    }

A document is ``valid`` when every signature is intact and cryptographically
sound, no DocMDP rule is broken, every RFC 3161 token present verifies, each
signer's certificate was within its validity at the signing time (the token's
time, else the time the signer claims), and the newest signature covers the
whole document: the entire file, or its own revision followed only by
signature-preserving updates (pyHanko's diff analysis: ``NONE`` or
``LTA_UPDATES``). Earlier signatures may be followed by later signatures
(``FORM_FILLING``) but nothing else. "Signature intact" is never enough on its
own: an incremental update after signing can change what the pages show.

Trust is reported, never required: ``trusted`` says whether the signer chains to
one of ``trust_roots_pem`` (the installation's list, usually empty). Nothing is
fetched: no OCSP, CRL or AIA look-ups.
"""

from __future__ import annotations

import io
import logging
from datetime import datetime
from typing import Any, Final

from asn1crypto import x509 as asn1_x509  # type: ignore[import-untyped]
from pyhanko.keys import load_certs_from_pemder_data
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign.diff_analysis import ModificationLevel
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko.sign.validation.pdf_embedded import EmbeddedPdfSignature
from pyhanko.sign.validation.status import (
    PdfSignatureStatus,
    SignatureCoverageLevel,
)
from pyhanko_certvalidator import ValidationContext

MAX_SIGNATURES: Final = 8
WHOLE_LEVELS: Final = frozenset({ModificationLevel.NONE, ModificationLevel.LTA_UPDATES})
EARLIER_LEVELS: Final = WHOLE_LEVELS | {ModificationLevel.FORM_FILLING}
MAX_TEXT: Final = 200


class TrustRootsError(ValueError):
    """The installation's trust roots are not PEM or DER certificates."""


def trust_roots(pem: bytes) -> list[asn1_x509.Certificate]:
    """The certificates of a PEM (or DER) bundle; [] for empty input."""
    if not pem.strip():
        return []
    try:
        return list(load_certs_from_pemder_data(pem))
    except (ValueError, TypeError, KeyError) as error:
        raise TrustRootsError(
            f"The trust roots are not certificates: {error}"
        ) from None


def problem(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def _text(value: Any) -> str:
    text = str(value) if value is not None else ""
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _name_part(name: asn1_x509.Name, key: str) -> str:
    value = name.native.get(key, "") if isinstance(name.native, dict) else ""
    return _text(", ".join(value) if isinstance(value, list) else value)


def signer_facts(certificate: asn1_x509.Certificate) -> dict[str, Any]:
    validity = certificate["tbs_certificate"]["validity"]
    return {
        "common_name": _name_part(certificate.subject, "common_name"),
        "organisation": _name_part(certificate.subject, "organization_name"),
        "subject": _text(certificate.subject.human_friendly),
        "issuer": _text(certificate.issuer.human_friendly),
        "serial": format(certificate.serial_number, "x"),
        "not_before": _iso(validity["not_before"].native),
        "not_after": _iso(validity["not_after"].native),
        "sha256": certificate.sha256.hex(),
    }


def _timestamp(status: PdfSignatureStatus) -> dict[str, Any]:
    token = status.timestamp_validity
    if token is not None:
        return {
            "kind": "rfc3161",
            "time": _iso(token.timestamp),
            "intact": bool(token.intact),
            "valid": bool(token.valid),
            "trusted": bool(token.trusted),
            "tsa": _text(token.signing_cert.subject.human_friendly),
        }
    claimed = status.signer_reported_dt
    if claimed is not None:
        return {"kind": "claimed", "time": _iso(claimed)}
    return {"kind": "none", "time": None}


def _signing_moment(status: PdfSignatureStatus) -> datetime | None:
    token = status.timestamp_validity
    if token is not None and token.intact and token.valid:
        return token.timestamp
    return status.signer_reported_dt


def _valid_at(certificate: asn1_x509.Certificate, moment: datetime | None) -> bool:
    if moment is None:
        return True  # nothing claimed: nothing to contradict
    validity = certificate["tbs_certificate"]["validity"]
    start, end = validity["not_before"].native, validity["not_after"].native
    return bool(start <= moment <= end)


def _whole(status: PdfSignatureStatus) -> bool:
    if status.coverage == SignatureCoverageLevel.ENTIRE_FILE:
        return True
    return (
        status.coverage == SignatureCoverageLevel.ENTIRE_REVISION
        and status.modification_level in WHOLE_LEVELS
    )


def _facts(field: str, status: PdfSignatureStatus) -> dict[str, Any]:
    certificate = status.signing_cert
    return {
        "field": _text(field),
        "signer": signer_facts(certificate),
        "intact": bool(status.intact),
        "valid": bool(status.valid),
        "trusted": bool(status.trusted),
        "coverage": status.coverage.name.lower() if status.coverage else None,
        "modification_level": (
            status.modification_level.name.lower()
            if status.modification_level is not None
            else None
        ),
        "whole_document": _whole(status),
        "docmdp_ok": status.docmdp_ok,
        "signing_time": _iso(status.signer_reported_dt),
        "timestamp": _timestamp(status),
        "certificate_valid_at_signing": _valid_at(certificate, _signing_moment(status)),
    }


def _signature_problem(facts: dict[str, Any], newest: bool) -> str | None:
    """Why one signature makes the document invalid, or None."""
    field = facts["field"]
    if not facts["intact"]:
        return f"the signed bytes of {field!r} were changed (digest mismatch)"
    if not facts["valid"]:
        return f"the signature {field!r} does not verify with its certificate"
    if facts["docmdp_ok"] is False:
        return f"the document was changed in a way {field!r} forbids (DocMDP)"
    stamp = facts["timestamp"]
    if stamp["kind"] == "rfc3161" and not (stamp["intact"] and stamp["valid"]):
        return f"the RFC 3161 time stamp of {field!r} does not verify"
    if not facts["certificate_valid_at_signing"]:
        return (
            f"the signer's certificate of {field!r} was not valid at the signing "
            f"time ({stamp['time']})"
        )
    if newest and not facts["whole_document"]:
        return (
            f"the signature {field!r} does not cover the whole document (coverage "
            f"{facts['coverage']}, later changes: {facts['modification_level']})"
        )
    level = facts["modification_level"]
    if not newest and level not in {lv.name.lower() for lv in EARLIER_LEVELS}:
        return f"the document was changed after {field!r} beyond adding signatures"
    return None


def _verdict(
    status: str, code: str, message: str, signatures: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "status": status,
        "signatures": signatures or [],
        "problem": problem(code, message),
    }


def _invalid(
    message: str, signatures: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return _verdict("invalid", "report_signature_invalid", message, signatures)


def _why(error: BaseException) -> str:
    return _text(error) or type(error).__name__


def _embedded(data: bytes) -> list[EmbeddedPdfSignature] | dict[str, Any]:
    """The signatures, oldest first; a verdict when one is present but unreadable."""
    reader = PdfFileReader(io.BytesIO(data), strict=False)
    try:
        embedded = list(reader.embedded_signatures)
    except MemoryError:
        raise
    except Exception as error:  # the document reads, a signature field does not
        if b"/ByteRange" not in data:
            raise
        return _invalid(
            f"invalid signature: one is present but unreadable: {_why(error)}."
        )
    return sorted(embedded, key=lambda sig: sig.signed_revision)


def _validate(data: bytes, roots: list[asn1_x509.Certificate]) -> dict[str, Any]:
    embedded = _embedded(data)
    if isinstance(embedded, dict):
        return embedded
    if not embedded:
        message = "The PDF carries no signature: it is not counted as a signed report."
        return _verdict("unsigned", "report_unsigned", message)
    if len(embedded) > MAX_SIGNATURES:
        return _invalid(f"invalid signature: more than {MAX_SIGNATURES} signatures.")
    context = ValidationContext(trust_roots=roots, allow_fetching=False)
    signatures: list[dict[str, Any]] = []
    for sig in embedded:
        try:
            status = validate_pdf_signature(
                sig, signer_validation_context=context, ts_validation_context=context
            )
        except MemoryError:
            raise
        except Exception as error:  # a malformed signature: pyHanko's any failure
            message = f"{sig.field_name!r} cannot be validated: {_why(error)}"
            return _invalid(f"invalid signature: {message}.", signatures)
        signatures.append(_facts(sig.field_name, status))
    for index, facts in enumerate(signatures):
        why = _signature_problem(facts, newest=index == len(signatures) - 1)
        if why is not None:
            return _invalid(f"invalid signature: {why}.", signatures)
    return {"status": "valid", "signatures": signatures}


def check_pdf(data: bytes, *, trust_roots_pem: bytes = b"") -> dict[str, Any]:
    """The verdict on ``data`` (see the module docstring). Never raises for bad
    input: an unreadable PDF or a pyHanko failure is a named problem."""
    roots = trust_roots(trust_roots_pem)
    if b"%PDF-" not in data[:1024]:  # readers accept a header within 1 KiB
        message = "The file is not a PDF (no %PDF- header)."
        return _verdict("unreadable", "report_unreadable", message)
    logging.disable(logging.CRITICAL)  # pyHanko logs tracebacks of hostile input
    try:
        return _validate(data, roots)
    except MemoryError:
        message = "Checking the PDF's signature needed more memory than it may use."
        return _verdict("unreadable", "report_unreadable", message)
    except Exception as error:  # hostile input: any failure of pyHanko's
        message = f"The PDF could not be read or its signature checked: {_why(error)}."
        return _verdict("unreadable", "report_unreadable", message)
    finally:
        logging.disable(logging.NOTSET)
