"""The local report CA and signer: made once in the key directory (0700, files
0600), the same on every later load, never made when ``create`` is off, and
fit to sign documents (key usage, extended key usage, ten years)."""

from __future__ import annotations

import datetime
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from gates.lib.signing.pki import (
    CA_FILE,
    DOCUMENT_SIGNING,
    KEY_FILE,
    SIGNER_FILE,
    ReportKeyError,
    signer_load_or_create,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_made_once_and_loaded_the_same(tmp_path: Path) -> None:
    keys = tmp_path / "var" / "keys" / "reports"

    first = signer_load_or_create(keys, create=True)
    again = signer_load_or_create(keys, create=True)
    without_create = signer_load_or_create(keys, create=False)

    assert len(first.fingerprint) == 64
    assert again.fingerprint == first.fingerprint == without_create.fingerprint
    assert again == first
    assert first.ca_pem == (keys / CA_FILE).read_bytes()
    assert first.chain_pems == (first.ca_pem,)


def test_the_files_are_private(tmp_path: Path) -> None:
    keys = tmp_path / "reports"

    signer_load_or_create(keys, create=True)

    assert _mode(keys) == 0o700
    for name in (CA_FILE, SIGNER_FILE, KEY_FILE):
        assert _mode(keys / name) == 0o600, name
    assert b"PRIVATE KEY" in (keys / KEY_FILE).read_bytes()
    leftovers = [p.name for p in keys.iterdir() if p.name.startswith(".new-")]
    assert leftovers == []


def test_an_empty_directory_without_create_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ReportKeyError, match=r"signer\.key\.pem is missing"):
        signer_load_or_create(tmp_path, create=False)

    assert list(tmp_path.iterdir()) == []


def test_a_missing_certificate_beside_the_key_is_an_error(tmp_path: Path) -> None:
    signer_load_or_create(tmp_path, create=True)
    (tmp_path / SIGNER_FILE).unlink()

    with pytest.raises(ReportKeyError, match=r"signer\.pem cannot be read"):
        signer_load_or_create(tmp_path, create=True)


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    signer_load_or_create(tmp_path, create=True)
    (tmp_path / KEY_FILE).chmod(0o644)

    with pytest.raises(ReportKeyError, match="chmod 600"):
        signer_load_or_create(tmp_path, create=False)


def test_a_key_of_another_signer_is_refused(tmp_path: Path) -> None:
    signer_load_or_create(tmp_path / "a", create=True)
    signer_load_or_create(tmp_path / "b", create=True)
    (tmp_path / "a" / KEY_FILE).write_bytes((tmp_path / "b" / KEY_FILE).read_bytes())

    with pytest.raises(ReportKeyError, match="does not match"):
        signer_load_or_create(tmp_path / "a", create=False)


def test_a_garbled_key_is_refused(tmp_path: Path) -> None:
    signer_load_or_create(tmp_path, create=True)
    (tmp_path / KEY_FILE).write_bytes(b"-----BEGIN PRIVATE KEY-----\nnope\n")

    with pytest.raises(ReportKeyError, match="cannot be read"):
        signer_load_or_create(tmp_path, create=False)


def test_a_crash_before_the_key_was_written_starts_again(tmp_path: Path) -> None:
    """Certificates without a key (a crash mid-creation) are replaced whole."""
    (tmp_path / CA_FILE).write_bytes(b"half")
    (tmp_path / SIGNER_FILE).write_bytes(b"half")

    signer = signer_load_or_create(tmp_path, create=True)

    assert signer.ca_pem == (tmp_path / CA_FILE).read_bytes()
    assert b"BEGIN CERTIFICATE" in signer.cert_pem


def test_two_creators_at_once_end_with_one_signer(tmp_path: Path) -> None:
    found: list[str] = []
    start = threading.Barrier(4)

    def create() -> None:
        start.wait()
        found.append(signer_load_or_create(tmp_path, create=True).fingerprint)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(found) == 4
    assert len(set(found)) == 1


def test_the_certificates_are_fit_to_sign_documents(tmp_path: Path) -> None:
    signer = signer_load_or_create(tmp_path, create=True)
    cert = x509.load_pem_x509_certificate(signer.cert_pem)
    ca = x509.load_pem_x509_certificate(signer.ca_pem)
    ext = cert.extensions

    usage = ext.get_extension_for_class(x509.KeyUsage)
    assert usage.critical
    assert usage.value.digital_signature
    assert usage.value.content_commitment
    assert not usage.value.key_cert_sign
    extended = ext.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(extended) == {DOCUMENT_SIGNING, ExtendedKeyUsageOID.EMAIL_PROTECTION}
    assert DOCUMENT_SIGNING.dotted_string == "1.3.6.1.5.5.7.3.36"
    assert not ext.get_extension_for_class(x509.BasicConstraints).value.ca
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime >= datetime.timedelta(days=3650)
    assert signer.subject == "O=ReproGate,CN=ReproGate report signing"

    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca
    ca_usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert ca_usage.critical
    assert ca_usage.value.key_cert_sign
    assert ca_usage.value.crl_sign


def test_each_directory_gets_its_own_signer(tmp_path: Path) -> None:
    one = signer_load_or_create(tmp_path / "one", create=True)
    two = signer_load_or_create(tmp_path / "two", create=True)

    assert one.fingerprint != two.fingerprint
    assert one.ca_pem != two.ca_pem
