"""The installation's own signer instead of the local CA: a PKCS#12 file (with its
password) or a PEM chain with a PEM key (encrypted or not), made here with
``cryptography``, load and sign PDFs that ``pdfsig`` finds valid and trusted by
their own root; every way of getting them wrong is a clear ``ReportKeyError``."""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import weasyprint  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from gates.lib.signing.pades import sign_pdf
from gates.lib.signing.pki import ReportKeyError, ReportSigner, SigningKey, signer_load
from tests.reports.pdfsig import nss_db, pdfsig

PEM = serialization.Encoding.PEM
NOW = datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class Issued:
    key: SigningKey
    cert: x509.Certificate


def _usage(*, ca: bool, signs: bool = True) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=signs and not ca,
        content_commitment=signs and not ca,
        key_encipherment=not signs,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def issue(
    name: str,
    key: SigningKey,
    issuer: Issued | None = None,
    *,
    ca: bool = False,
    signs: bool = True,
    days: int = 365,
) -> Issued:
    """A certificate for ``key``, self-signed when there is no ``issuer``."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = NOW - datetime.timedelta(days=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.cert.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start + datetime.timedelta(days=min(0, 2 * days)))
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), True)
        .add_extension(_usage(ca=ca, signs=signs), critical=True)
        .sign(issuer.key if issuer else key, hashes.SHA256())
    )
    return Issued(key, cert)


def _ec() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def root() -> Issued:
    return issue("Example Corp Root", _ec(), ca=True, days=3650)


@pytest.fixture(scope="module")
def intermediate(root: Issued) -> Issued:
    return issue("Example Corp Documents CA", _ec(), root, ca=True, days=1825)


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return weasyprint.HTML(string="<h1>Acceptance certificate</h1>").write_pdf()


def _p12(path: Path, leaf: Issued, chain: list[Issued], password: str) -> Path:
    encryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"reports", leaf.key, leaf.cert, [c.cert for c in chain], encryption
        )
    )
    return path


def _pem_files(
    tmp_path: Path, leaf: Issued, chain: list[Issued], password: str
) -> tuple[Path, Path]:
    certs = tmp_path / "chain.pem"
    certs.write_bytes(b"".join(c.cert.public_bytes(PEM) for c in [leaf, *chain]))
    encryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    key = tmp_path / "key.pem"
    key.write_bytes(
        leaf.key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return certs, key


def _assert_signs_and_verifies(
    tmp_path: Path, signer: ReportSigner, pdf: bytes, root: Issued
) -> None:
    signed = tmp_path / "signed.pdf"
    signed.write_bytes(sign_pdf(pdf, signer, reason="Acceptance certificate"))

    result = pdfsig(signed, nss_db(tmp_path, [root.cert.public_bytes(PEM)]))

    assert result["valid"], result["output"]
    assert result["trusted"], result["output"]
    assert result["total_document_signed"]


@pytest.mark.parametrize("password", ["s3cret pass", ""])
def test_a_pkcs12_signer_signs_and_verifies(
    tmp_path: Path, pdf: bytes, root: Issued, password: str
) -> None:
    leaf = issue("Example Corp reports", rsa.generate_private_key(65537, 2048), root)
    path = _p12(tmp_path / "signer.p12", leaf, [root], password)

    signer = signer_load(path, None, password)

    der = leaf.cert.public_bytes(serialization.Encoding.DER)
    assert signer.fingerprint == hashlib.sha256(der).hexdigest()
    assert signer.subject == "CN=Example Corp reports"
    assert signer.ca_pem == root.cert.public_bytes(PEM)
    _assert_signs_and_verifies(tmp_path, signer, pdf, root)


@pytest.mark.parametrize("password", ["key password", ""])
def test_a_pem_chain_and_key_sign_and_verify(
    tmp_path: Path, pdf: bytes, root: Issued, intermediate: Issued, password: str
) -> None:
    """Trusting only the root works: the intermediate travels in the signature."""
    leaf = issue("Example Corp reports", _ec(), intermediate)
    certs, key = _pem_files(tmp_path, leaf, [intermediate, root], password)

    signer = signer_load(certs, key, password)

    assert signer.cert_pem == leaf.cert.public_bytes(PEM)
    assert signer.chain_pems == (
        intermediate.cert.public_bytes(PEM),
        root.cert.public_bytes(PEM),
    )
    _assert_signs_and_verifies(tmp_path, signer, pdf, root)


def test_a_pem_chain_without_its_root_has_no_ca(
    tmp_path: Path, intermediate: Issued
) -> None:
    leaf = issue("Example Corp reports", _ec(), intermediate)
    certs, key = _pem_files(tmp_path, leaf, [intermediate], "")

    assert signer_load(certs, key, "").ca_pem is None


def test_a_wrong_pkcs12_password_is_refused(tmp_path: Path, root: Issued) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    path = _p12(tmp_path / "signer.p12", leaf, [root], "right")

    with pytest.raises(ReportKeyError, match="password is wrong"):
        signer_load(path, None, "wrong")


def test_a_wrong_key_password_is_refused(tmp_path: Path, root: Issued) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    certs, key = _pem_files(tmp_path, leaf, [root], "right")

    with pytest.raises(ReportKeyError, match="password is wrong"):
        signer_load(certs, key, "wrong")


def test_an_encrypted_key_without_a_password_is_refused(
    tmp_path: Path, root: Issued
) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    certs, key = _pem_files(tmp_path, leaf, [root], "right")

    with pytest.raises(ReportKeyError, match="encrypted and no password"):
        signer_load(certs, key, "")


@pytest.mark.parametrize("which", ["certificate", "key", "pkcs12"])
def test_a_missing_file_is_refused(tmp_path: Path, root: Issued, which: str) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    certs, key = _pem_files(tmp_path, leaf, [root], "")
    missing = tmp_path / "missing.pem"
    arguments = {
        "certificate": (missing, key),
        "key": (certs, missing),
        "pkcs12": (missing, None),
    }[which]

    with pytest.raises(ReportKeyError, match=r"missing\.pem cannot be read"):
        signer_load(*arguments, "")


def test_a_key_that_is_not_the_certificates_is_refused(
    tmp_path: Path, root: Issued
) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    certs, _ = _pem_files(tmp_path, leaf, [root], "")
    (tmp_path / "other").mkdir()
    other = issue("Other", _ec(), root)
    _, other_key = _pem_files(tmp_path / "other", other, [], "")

    with pytest.raises(ReportKeyError, match="does not match"):
        signer_load(certs, other_key, "")


def test_a_certificate_that_may_not_sign_is_refused(
    tmp_path: Path, root: Issued
) -> None:
    leaf = issue("Example Corp encryption", _ec(), root, signs=False)
    path = _p12(tmp_path / "signer.p12", leaf, [root], "pw")

    with pytest.raises(ReportKeyError, match="lacks digitalSignature"):
        signer_load(path, None, "pw")


def test_an_expired_certificate_is_refused(tmp_path: Path, root: Issued) -> None:
    leaf = issue("Example Corp reports", _ec(), root, days=-10)
    certs, key = _pem_files(tmp_path, leaf, [root], "")

    with pytest.raises(ReportKeyError, match="not valid now"):
        signer_load(certs, key, "")


@pytest.mark.parametrize(
    "content", [b"", b"not a certificate", b"-----BEGIN CERTIFICATE-----\nAA\n"]
)
def test_a_file_without_a_certificate_is_refused(
    tmp_path: Path, root: Issued, content: bytes
) -> None:
    leaf = issue("Example Corp reports", _ec(), root)
    _, key = _pem_files(tmp_path, leaf, [root], "")
    certs = tmp_path / "garbage.pem"
    certs.write_bytes(content)

    with pytest.raises(ReportKeyError, match="no PEM certificate"):
        signer_load(certs, key, "")


def test_a_pkcs12_file_that_is_not_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "signer.p12"
    path.write_bytes(b"\x30\x03\x02\x01\x03")

    with pytest.raises(ReportKeyError, match="cannot be opened as PKCS#12"):
        signer_load(path, None, "")
