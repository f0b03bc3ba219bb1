"""A local RFC 3161 time-stamping authority for the tests, on 127.0.0.1 (nothing
leaves the machine): pyHanko's ``DummyTimeStamper`` behind ``http.server`` in a
thread, with an RSA TSA certificate (EKU timeStamping, critical, as RFC 3161
wants) issued by a test CA made afresh each time::

    with local_tsa() as (url, ca_pem):
        signed = sign_pdf(pdf, signer, reason="…", timestamp_url=url)

or the ``tsa`` fixture (import it into the test module), which yields the same
pair (``tsa.url``, ``tsa.ca_pem``).
"""

from __future__ import annotations

import datetime
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import pytest
from asn1crypto import tsp  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pyhanko.keys import load_certs_from_pemder_data, load_private_key_from_pemder_data
from pyhanko.sign.timestamps import DummyTimeStamper
from pyhanko_certvalidator.registry import SimpleCertificateStore


class LocalTsa(NamedTuple):
    url: str
    ca_pem: bytes  # the root that issued the TSA's certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=not ca,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def tsa_pki() -> tuple[bytes, bytes, bytes]:
    """PEM of a new test CA, a TSA certificate it issued, and the TSA's key."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=30)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    tsa_key = rsa.generate_private_key(65537, 2048)  # pyHanko's stamper: RSA only
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Test TSA root"))
        .issuer_name(_name("Test TSA root"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(_usage(ca=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    tsa_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("Test TSA"))
        .issuer_name(ca.subject)
        .public_key(tsa_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(_usage(ca=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = tsa_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ca.public_bytes(pem), tsa_cert.public_bytes(pem), key_pem


def _handler(stamper: DummyTimeStamper) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                reply = stamper.request_tsa_response(tsp.TimeStampReq.load(body))
                data, status = reply.dump(), 200
            except Exception as error:  # the client sees an HTTP error, not a hang
                data, status = repr(error).encode(), 500
            self.send_response(status)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    return Handler


@contextmanager
def local_tsa() -> Iterator[LocalTsa]:
    """A TSA answering on ``http://127.0.0.1:<free port>/`` while the block runs."""
    ca_pem, tsa_pem, key_pem = tsa_pki()
    ca_certs = list(load_certs_from_pemder_data(ca_pem))
    (tsa_cert,) = load_certs_from_pemder_data(tsa_pem)
    stamper = DummyTimeStamper(
        tsa_cert=tsa_cert,
        tsa_key=load_private_key_from_pemder_data(key_pem, None),
        certs_to_embed=SimpleCertificateStore.from_certs(ca_certs),
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(stamper))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield LocalTsa(f"http://127.0.0.1:{port}/", ca_pem)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def tsa() -> Iterator[LocalTsa]:
    with local_tsa() as server:
        yield server
