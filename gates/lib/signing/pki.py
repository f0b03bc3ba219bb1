"""The installation's report-signing certificate and key (docs/reports.md, "Keys
and certificates").

Either a local CA and signer made on first use in the key directory (``ca.pem``,
``signer.pem``, ``signer.key.pem``; files 0600, directory 0700; the CA's own key
is thrown away once the signer is issued), or the installation's own signer read
from a PKCS#12 file or a PEM chain with its PEM key. Either way the result is a
``ReportSigner`` held in memory: the key as unencrypted PKCS#8 PEM, the signer's
certificate, the rest of its chain and the root to trust, if known.

Every file appears complete or not at all (written to a temporary file, synced,
then renamed), the key last, so the key's presence means the other two are
there; two processes creating at once are serialised by a lock file.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE: Final = "ca.pem"
SIGNER_FILE: Final = "signer.pem"
KEY_FILE: Final = "signer.key.pem"
LOCK_FILE: Final = ".signer.lock"
SUBJECT: Final = "ReproGate report signing"
ORGANISATION: Final = "ReproGate"
VALIDITY: Final = datetime.timedelta(days=3652)  # ten years
BACKDATE: Final = datetime.timedelta(minutes=5)  # readers with a slow clock
DOCUMENT_SIGNING: Final = x509.ObjectIdentifier("1.3.6.1.5.5.7.3.36")
MAX_FILE_BYTES: Final = 1024 * 1024

SigningKey: TypeAlias = (
    rsa.RSAPrivateKey
    | ec.EllipticCurvePrivateKey
    | ed25519.Ed25519PrivateKey
    | ed448.Ed448PrivateKey
)


class ReportKeyError(RuntimeError):
    """The report-signing certificate or key is missing, unreadable, protected
    by another password, mismatched or not fit to sign documents."""


@dataclass(frozen=True)
class ReportSigner:
    key_pem: bytes  # PKCS#8 PEM, unencrypted
    cert_pem: bytes
    chain_pems: tuple[bytes, ...]  # the other certificates, issuer first
    ca_pem: bytes | None  # the root to trust, when known

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def fingerprint(self) -> str:
        """Hex SHA-256 of the signing certificate's DER."""
        der = self.certificate.public_bytes(serialization.Encoding.DER)
        return hashlib.sha256(der).hexdigest()

    @property
    def subject(self) -> str:
        return self.certificate.subject.rfc4514_string()


# --- the local CA and signer ------------------------------------------------------


def signer_load_or_create(keys_dir: Path, *, create: bool) -> ReportSigner:
    """The local signer in ``keys_dir``; if there is none and ``create``, a new
    CA and signer made there first."""
    keys_dir = Path(keys_dir)
    if not (keys_dir / KEY_FILE).exists():
        if not create:
            raise ReportKeyError(
                f"There is no report-signing key in {keys_dir} ({KEY_FILE} is "
                "missing); restore the key directory from the backup."
            )
        _create_locked(keys_dir)
    return _load_local(keys_dir)


def _load_local(keys_dir: Path) -> ReportSigner:
    key_path = keys_dir / KEY_FILE
    _refuse_open_mode(key_path)
    certificates = _pem_certificates(_read(keys_dir / SIGNER_FILE))
    roots = _pem_certificates(_read(keys_dir / CA_FILE))
    key = _pem_key(_read(key_path), "", key_path)
    return _signer(key, certificates[0], [*certificates[1:], *roots], keys_dir)


def _refuse_open_mode(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise ReportKeyError(f"The key {path} cannot be read: {error}.") from None
    if mode & 0o077:
        raise ReportKeyError(
            f"The key {path} is readable or writable by others "
            f"(mode {stat.S_IMODE(mode):o}); chmod 600 it."
        )


@contextlib.contextmanager
def _locked(keys_dir: Path) -> Iterator[None]:
    try:
        keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = os.open(keys_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise ReportKeyError(
            f"The key directory {keys_dir} cannot be written: {error}."
        ) from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock


def _create_locked(keys_dir: Path) -> None:
    with _locked(keys_dir):
        if (keys_dir / KEY_FILE).exists():  # another process made it meanwhile
            return
        ca_pem, signer_pem, key_pem = _new_local_pki()
        try:
            _write_atomically(keys_dir / CA_FILE, ca_pem)
            _write_atomically(keys_dir / SIGNER_FILE, signer_pem)
            _write_atomically(keys_dir / KEY_FILE, key_pem)  # last: the commit
        except OSError as error:
            raise ReportKeyError(
                f"The report-signing key cannot be written to {keys_dir}: {error}."
            ) from None


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".new-{path.name}-")
    try:
        os.fchmod(handle, 0o600)
        os.write(handle, data)
        os.fsync(handle)
        os.close(handle)
        handle = -1
        os.replace(temporary, path)
    except BaseException:
        if handle >= 0:
            os.close(handle)
        os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _new_local_pki() -> tuple[bytes, bytes, bytes]:
    """PEM of a new CA certificate, signer certificate and signer key."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - BACKDATE, now + VALIDITY
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{SUBJECT} CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    signer_key = ec.generate_private_key(ec.SECP256R1())
    signer = (
        x509.CertificateBuilder()
        .subject_name(_name(SUBJECT))
        .issuer_name(ca_name)
        .public_key(signer_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [DOCUMENT_SIGNING, ExtendedKeyUsageOID.EMAIL_PROTECTION]
            ),
            critical=False,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(signer_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ca.public_bytes(pem), signer.public_bytes(pem), _pkcs8(signer_key)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANISATION),
        ]
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=not cert_sign,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


# --- the installation's own signer ------------------------------------------------


def signer_load(path: Path, key_path: Path | None, password: str) -> ReportSigner:
    """The signer in the PKCS#12 file ``path`` (``key_path`` None), or the PEM
    chain in ``path`` (the signer's certificate first) with the PEM key in
    ``key_path``; ``password`` decrypts the PKCS#12 file or the key ("" for none)."""
    path = Path(path)
    if key_path is None:
        key, certificate, others = _pkcs12(_read(path), password, path)
        return _signer(key, certificate, others, path)
    certificates = _pem_certificates(_read(path), path)
    key = _pem_key(_read(Path(key_path)), password, Path(key_path))
    return _signer(key, certificates[0], certificates[1:], path)


def _pkcs12(
    data: bytes, password: str, path: Path
) -> tuple[SigningKey, x509.Certificate, list[x509.Certificate]]:
    try:
        key, certificate, others = pkcs12.load_key_and_certificates(
            data, password.encode("utf-8") if password else None
        )
    except (ValueError, TypeError):
        raise ReportKeyError(
            f"{path} cannot be opened as PKCS#12: the password is wrong "
            "(REPROGATE_REPORT_SIGNER_PASSWORD) or it is not a PKCS#12 file."
        ) from None
    if key is None or certificate is None:
        raise ReportKeyError(f"{path} does not hold both a key and its certificate.")
    return _signing_key(key, path), certificate, list(others)


def _pem_key(data: bytes, password: str, path: Path) -> SigningKey:
    try:
        key = serialization.load_pem_private_key(
            data, password.encode("utf-8") if password else None
        )
    except TypeError:  # encrypted without a password, or a password for none
        raise ReportKeyError(
            f"The key {path} is encrypted and no password was given, or a password "
            "was given for a key that has none (REPROGATE_REPORT_SIGNER_PASSWORD)."
        ) from None
    except ValueError:
        raise ReportKeyError(
            f"The key {path} cannot be read: the password is wrong or it is not a "
            "PEM private key."
        ) from None
    return _signing_key(key, path)


def _signing_key(key: object, path: Path) -> SigningKey:
    if not isinstance(
        key,
        rsa.RSAPrivateKey
        | ec.EllipticCurvePrivateKey
        | ed25519.Ed25519PrivateKey
        | ed448.Ed448PrivateKey,
    ):
        raise ReportKeyError(
            f"The key in {path} is not an RSA, ECDSA, Ed25519 or Ed448 key."
        )
    return key


def _pem_certificates(data: bytes, path: Path | None = None) -> list[x509.Certificate]:
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        certificates = []
    if not certificates:
        where = f" in {path}" if path else ""
        raise ReportKeyError(f"There is no PEM certificate{where}.")
    return certificates


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ReportKeyError(f"{path} cannot be read: {error.strerror}.") from None
    if len(data) > MAX_FILE_BYTES:
        raise ReportKeyError(f"{path} is too large for a certificate or key file.")
    return data


def _signer(
    key: SigningKey,
    certificate: x509.Certificate,
    others: Sequence[x509.Certificate],
    where: Path,
) -> ReportSigner:
    """Checks that the key is the certificate's and the certificate may sign."""
    der = serialization.Encoding.DER
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    certified = certificate.public_key().public_bytes(der, spki)
    if key.public_key().public_bytes(der, spki) != certified:
        raise ReportKeyError(
            f"The key does not match the signing certificate in {where} "
            f"({certificate.subject.rfc4514_string()})."
        )
    _check_usable(certificate, where)
    chain = [c for c in others if c != certificate]
    roots = [c for c in chain if c.subject == c.issuer]
    pem = serialization.Encoding.PEM
    return ReportSigner(
        key_pem=_pkcs8(key),
        cert_pem=certificate.public_bytes(pem),
        chain_pems=tuple(c.public_bytes(pem) for c in chain),
        ca_pem=roots[0].public_bytes(pem) if roots else None,
    )


def _check_usable(certificate: x509.Certificate, where: Path) -> None:
    subject = certificate.subject.rfc4514_string()
    try:
        usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        usage = None  # no restriction (RFC 5280, 4.2.1.3)
    if usage is not None and not usage.digital_signature:
        raise ReportKeyError(
            f"The certificate in {where} ({subject}) may not make digital signatures "
            "(its key usage lacks digitalSignature)."
        )
    now = datetime.datetime.now(datetime.UTC)
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise ReportKeyError(
            f"The certificate in {where} ({subject}) is not valid now (valid "
            f"{certificate.not_valid_before_utc:%Y-%m-%d} to "
            f"{certificate.not_valid_after_utc:%Y-%m-%d})."
        )


def _pkcs8(key: SigningKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
