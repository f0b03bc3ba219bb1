"""Test keys: made with ``cryptography`` (fast, cached) or with the real
``ssh-keygen -N ''`` into a test's ``tmp_path``; plus ``ssh-keygen -Y`` wrappers."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from artifacts.lib.signatures.sshkeys import PrivateKey, SshPrivateKey, SshPublicKey

SSH_KEYGEN = "/usr/bin/ssh-keygen"
NAMESPACE = "reprogate-bundle"
KINDS = ("ed25519", "ecdsa-256", "ecdsa-384", "ecdsa-521", "rsa-3072")
KEYGEN_ARGS = {
    "ed25519": ["-t", "ed25519"],
    "ecdsa-256": ["-t", "ecdsa", "-b", "256"],
    "ecdsa-384": ["-t", "ecdsa", "-b", "384"],
    "ecdsa-521": ["-t", "ecdsa", "-b", "521"],
    "rsa-2048": ["-t", "rsa", "-b", "2048"],
    "rsa-3072": ["-t", "rsa", "-b", "3072"],
}
CURVES = {"256": ec.SECP256R1(), "384": ec.SECP384R1(), "521": ec.SECP521R1()}


def _generate(kind: str) -> PrivateKey:
    family, _, size = kind.partition("-")
    if family == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if family == "ecdsa":
        return ec.generate_private_key(CURVES[size])
    return rsa.generate_private_key(public_exponent=65537, key_size=int(size))


@functools.cache
def _cached_key(kind: str, number: int) -> SshPrivateKey:
    key = _generate(kind)
    public = SshPublicKey.from_cryptography(key.public_key(), f"{kind}-{number}@test")
    return SshPrivateKey(key, public)


def private_key(kind: str, number: int = 0) -> SshPrivateKey:
    """A fresh key per (kind, number), generated once per test session."""
    return _cached_key(kind, number)


def public_line(kind: str, number: int = 0) -> str:
    key = private_key(kind, number).public
    return f"{key.openssh} {key.comment}"


def ssh_keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SSH_KEYGEN, *args], input=stdin, capture_output=True, check=False
    )


def ssh_keygen_key(directory: Path, kind: str, comment: str = "ci@acme") -> Path:
    """A real key pair: returns the private key path; ``.pub`` sits beside it."""
    path = directory / f"id_{kind}"
    args = [*KEYGEN_ARGS[kind], "-N", "", "-C", comment, "-f", str(path)]
    result = ssh_keygen("-q", *args)
    assert result.returncode == 0, result.stderr
    return path


def ssh_keygen_sign(key: Path, message: Path, namespace: str = NAMESPACE) -> str:
    result = ssh_keygen("-Y", "sign", "-f", str(key), "-n", namespace, str(message))
    assert result.returncode == 0, result.stderr
    return Path(f"{message}.sig").read_text()


def ssh_keygen_verify(
    allowed_signers: Path, principal: str, signature: Path, message: bytes
) -> subprocess.CompletedProcess:
    return ssh_keygen(
        "-Y", "verify", "-f", str(allowed_signers), "-I", principal,
        "-n", NAMESPACE, "-s", str(signature), stdin=message,
    )  # fmt: skip
