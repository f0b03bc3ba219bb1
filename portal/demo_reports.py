"""The example bundles' signed benchmark reports, made when the demo seeds them.

A vendor's report is a PDF the vendor signs itself (PAdES), and an in-toto
statement beside it (``<pdf>.dsse``, a DSSE envelope signed with the vendor's
registered bundle key) saying what the report claims. Neither can live in the
repository: the certificate and the key are the vendor's, made here for the demo
(a self-signed certificate naming the vendor, valid for a year, thrown away
after signing), and the statement is signed with the vendor's throwaway demo key
(``portal.demo.demo_key``). The page lists the bundle's claims as
``examples/<vendor>/bundle.json`` states them; ``examples/<vendor>/reports/
README.md`` says what the real report would hold.

Bundles take them as any report: ingest checks the PDF's signature (the signer
is shown, "not in the installation's trust list") and the statement, and the
RFP's "Signed benchmark reports" item counts only a report that validates."""

from __future__ import annotations

import datetime
import hashlib
import html
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures import dsse
from artifacts.lib.signatures.sshkeys import SshPrivateKey
from artifacts.lib.signatures.statement import PAYLOAD_TYPE, statement
from gates.lib.signing.pades import sign_pdf
from gates.lib.signing.pki import DOCUMENT_SIGNING, ReportSigner

REPORT_PATH: Final = "reports/benchmark-report.pdf"
STATEMENT_PATH: Final = REPORT_PATH + ".dsse"
PREDICATE_TYPE: Final = "https://reprogate.dev/benchmark-report-claims/v1"
VALIDITY: Final = datetime.timedelta(days=365)
BACKDATE: Final = datetime.timedelta(minutes=5)
EMAIL_PROTECTION: Final = ExtendedKeyUsageOID.EMAIL_PROTECTION
KEY_USAGE: Final = x509.KeyUsage(
    digital_signature=True, content_commitment=True, key_encipherment=False,
    data_encipherment=False, key_agreement=False, key_cert_sign=False,
    crl_sign=False, encipher_only=False, decipher_only=False,
)  # fmt: skip


def vendor_signer(name: str, slug: str) -> ReportSigner:
    """A self-signed document-signing certificate naming the vendor."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, f"{name} benchmark lab"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [DOCUMENT_SIGNING, ExtendedKeyUsageOID.EMAIL_PROTECTION]
            ),
            False,
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(f"{slug}.example")]), False
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    return ReportSigner(key_pem=key_pem, cert_pem=cert_pem, chain_pems=(), ca_pem=None)


def _claims(template: dict[str, Any]) -> list[dict[str, Any]]:
    claims = template.get("claims")
    return (
        [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else []
    )


def report_html(name: str, template: dict[str, Any]) -> str:
    """The report's one page: who measured what, and the claims."""
    rows = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td></tr>".format(
            *(html.escape(str(c.get(k, ""))) for k in ("metric", "stat", "scenario")),
            html.escape(str(c.get("value", ""))),
            html.escape(str(c.get("unit", ""))),
        )
        for c in _claims(template)
    )
    about = html.escape(str(template.get("x-description", "")))
    return (
        '<!doctype html><html><head><meta charset="utf-8"><style>'
        "body{font-family:sans-serif;font-size:10pt}td,th{padding:2pt 6pt;"
        "border-bottom:1px solid #ccc;text-align:left}</style></head><body>"
        f"<h1>{html.escape(name)}: benchmark report</h1><p>{about}</p>"
        "<p>Measured with the harness, workloads and environment of the bundle "
        "this report travels in; every figure below is re-run by the buyer's lab."
        "</p><table><tr><th>Metric</th><th>Stat</th><th>Scenario</th>"
        f"<th>Claimed</th></tr>{rows}</table></body></html>"
    )


def signed_report_files(
    source: Path, *, name: str, slug: str, key: SshPrivateKey
) -> dict[str, bytes]:
    """The signed PDF and its statement for the example at ``source`` (its
    ``bundle.json``), by path in the bundle."""
    import weasyprint  # type: ignore[import-untyped]  # slow to import: here only

    template = json.loads((source / "bundle.json").read_text(encoding="utf-8"))
    pdf = bytes(weasyprint.HTML(string=report_html(name, template)).write_pdf())
    # pyHanko signs through asyncio.run(): in a thread of its own, so that a
    # caller already in an event loop (a browser test's seed) can seed too.
    with ThreadPoolExecutor(max_workers=1) as pool:
        signed = pool.submit(
            sign_pdf, pdf, vendor_signer(name, slug), reason=f"{name} benchmark report"
        ).result()
    claims = {
        f"{c.get('metric')} {c.get('stat')} {c.get('scenario')}": c.get("value")
        for c in _claims(template)
    }
    document = statement(
        subjects=[(REPORT_PATH, hashlib.sha256(signed).hexdigest())],
        predicate_type=PREDICATE_TYPE,
        predicate={"vendor": slug, **claims},
    )
    envelope = dsse.sign(canonical_json(document), key, payload_type=PAYLOAD_TYPE)
    return {REPORT_PATH: signed, STATEMENT_PATH: envelope}
