"""Write a self-signed TLS certificate and key for nginx (tests, a first start).

    python deploy/nginx/selfsigned.py DIR reprogate.example.com [more names …]

writes DIR/tls.crt and DIR/tls.key (mode 0600) unless both exist already (then it
leaves them: a real certificate put there is never replaced). The names go in the
subject alternative name; an IP address is written as one. Clients trust it with
REPROGATE_CA_FILE=DIR/tls.crt. Needs only the ``cryptography`` package.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def write_selfsigned(directory: Path, names: list[str], *, days: int = 825) -> bool:
    """Make DIR/tls.crt and DIR/tls.key; False when both were there already."""
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    if cert_path.exists() and key_path.exists():
        return False
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names = [_general_name(name) for name in names]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        # its own CA (a client's CA file is this certificate), with what strict
        # verifiers (Python 3.13's VERIFY_X509_STRICT) look for
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_bytes)
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    made = write_selfsigned(Path(args[0]), args[1:])
    print(f"{'wrote' if made else 'kept'} {args[0]}/tls.crt and tls.key")
    return 0


if __name__ == "__main__":
    sys.exit(main())
