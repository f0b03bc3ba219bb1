"""HTTPS with a private CA (``REPROGATE_CA_FILE``): the server's certificate is
checked against it; without it the certificate is refused at once (a wrong
certificate is not retried)."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from reprogate_agent.client import ClientError, RunnerClient, Unreachable
from tests.agent.fake_server import FakeServer, Reply

TOKEN = "rgh_" + "t" * 43


def _self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "server.pem", folder / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[FakeServer, Path]]:
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with FakeServer(tls=context) as server:
        server.script("heartbeat", Reply(200, {"ok": True}))
        yield server, cert


def test_the_ca_file_lets_the_agent_trust_a_private_certificate(
    tls_server: tuple[FakeServer, Path],
) -> None:
    server, cert = tls_server

    RunnerClient(server.url, TOKEN, ca_file=str(cert)).heartbeat("w")

    assert len(server.calls("heartbeat")) == 1


def test_without_it_the_certificate_is_refused_at_once(
    tls_server: tuple[FakeServer, Path],
) -> None:
    server, _ = tls_server
    pauses: list[float] = []
    client = RunnerClient(server.url, TOKEN, retries=3, sleep=pauses.append)

    with pytest.raises(ClientError, match="TLS") as caught:
        client.heartbeat("w")

    assert not isinstance(caught.value, Unreachable)
    assert pauses == []
    assert server.calls("heartbeat") == []
