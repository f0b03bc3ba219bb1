"""OpenSSH SSHSIG signatures, as ``ssh-keygen -Y sign`` writes and ``-Y verify``
checks them (openssh-portable PROTOCOL.sshsig and sshsig.c).

Blob: ``"SSHSIG" uint32(1) string(publickey) string(namespace) string(reserved)
string(hash_algorithm) string(signature)``. The key signs
``"SSHSIG" string(namespace) string(reserved) string(hash_algorithm) string(H(msg))``
with an empty ``reserved``, as OpenSSH rebuilds it when verifying."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from artifacts.lib.signatures import NAMESPACE, SignatureError
from artifacts.lib.signatures.sshkeys import (
    ECDSA_CURVES,
    ED25519,
    RSA,
    SshPrivateKey,
    SshPublicKey,
    WireReader,
    public_key_from_blob,
    ssh_mpint,
    ssh_string,
)

MAGIC = b"SSHSIG"
VERSION = 1
BEGIN = b"-----BEGIN SSH SIGNATURE-----"
END = b"-----END SSH SIGNATURE-----"
MAX_ARMORED_BYTES = 64 * 1024
HASH_ALGORITHMS: dict[str, Callable[[], hashlib._Hash]] = {
    "sha256": hashlib.sha256,
    "sha512": hashlib.sha512,
}
RSA_ALGORITHMS: dict[str, hashes.HashAlgorithm] = {
    "rsa-sha2-256": hashes.SHA256(),
    "rsa-sha2-512": hashes.SHA512(),
}
ECDSA_HASHES: dict[str, hashes.HashAlgorithm] = {
    "ecdsa-sha2-nistp256": hashes.SHA256(),
    "ecdsa-sha2-nistp384": hashes.SHA384(),
    "ecdsa-sha2-nistp521": hashes.SHA512(),
}
Message = bytes | IO[bytes]


@dataclass(frozen=True)
class SshSignature:
    """A parsed SSHSIG; ``signature`` is the raw signature after its algorithm name."""

    public_key: SshPublicKey
    namespace: str
    reserved: bytes
    hash_algorithm: str
    signature_algorithm: str
    signature: bytes

    @property
    def fingerprint(self) -> str:
        return self.public_key.fingerprint


# --- armor --------------------------------------------------------------------------


def _armor_error(detail: str) -> SignatureError:
    return SignatureError("signature_armor_invalid", f"The signature file {detail}.")


def dearmor(armored: bytes | str) -> bytes:
    """The blob inside ``-----BEGIN SSH SIGNATURE-----`` … ``-----END …-----``."""
    data = armored.encode("utf-8") if isinstance(armored, str) else armored
    if len(data) > MAX_ARMORED_BYTES:
        raise SignatureError(
            "signature_too_large", f"The signature file exceeds {MAX_ARMORED_BYTES} B."
        )
    if not data.startswith(BEGIN + b"\n") and not data.startswith(BEGIN + b"\r\n"):
        raise _armor_error("does not start with -----BEGIN SSH SIGNATURE-----")
    end = data.find(b"\n" + END, len(BEGIN))
    if end < 0:
        raise _armor_error("has no -----END SSH SIGNATURE----- line")
    if data[end + 1 + len(END) :].strip():
        raise SignatureError(
            "signature_trailing_data", "Text follows the END SSH SIGNATURE line."
        )
    body = b"".join(data[len(BEGIN) : end].split())
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError(
            "signature_base64_invalid", "The signature is not valid base64."
        ) from None


def armor(blob: bytes) -> str:
    """The text ``ssh-keygen`` writes: base64 wrapped at 70 columns."""
    body = "\n".join(textwrap.wrap(base64.b64encode(blob).decode("ascii"), 70))
    return f"{BEGIN.decode()}\n{body}\n{END.decode()}\n"


# --- parse --------------------------------------------------------------------------


def _signer_key(blob: bytes) -> SshPublicKey:
    """The key inside the signature: malformed -> ``signature_malformed``; a
    type or size that is refused -> ``signature_key_unsupported``."""
    try:
        return public_key_from_blob(blob, code="signature_malformed")
    except SignatureError as error:
        if error.code == "signature_malformed":
            raise
        raise SignatureError(
            "signature_key_unsupported", f"The signing key is refused: {error.message}"
        ) from None


def _parse_blob(blob: bytes) -> SshSignature:
    reader = WireReader(blob, code="signature_malformed", what="signature")
    if reader.raw(len(MAGIC)) != MAGIC:
        raise SignatureError("signature_magic_invalid", "This is not an SSHSIG blob.")
    version = reader.uint32()
    if version != VERSION:
        raise SignatureError(
            "signature_version_unsupported",
            f"SSHSIG version {version} is not supported (only {VERSION}).",
        )
    public_key = _signer_key(reader.string())
    namespace, reserved, hash_algorithm = reader.text(), reader.string(), reader.text()
    inner = WireReader(reader.string(), code="signature_malformed", what="signature")
    if reader.remaining:
        raise SignatureError(
            "signature_trailing_data",
            f"The signature has {reader.remaining} bytes of trailing data.",
        )
    algorithm, raw = inner.text(), inner.string()
    inner.expect_end()
    if not namespace:
        raise reader.fail("the namespace is empty")
    return SshSignature(public_key, namespace, reserved, hash_algorithm, algorithm, raw)


def _check_algorithms(parsed: SshSignature) -> None:
    if parsed.hash_algorithm not in HASH_ALGORITHMS:
        raise SignatureError(
            "signature_hash_unsupported",
            f"Hash {parsed.hash_algorithm[:40]!r} is not accepted (sha256 or sha512).",
        )
    algorithm, key_type = parsed.signature_algorithm, parsed.public_key.key_type
    if key_type == RSA and algorithm == RSA:
        raise SignatureError(
            "signature_algorithm_legacy",
            "Legacy ssh-rsa (SHA-1) signatures are refused; use rsa-sha2-256/512.",
        )
    allowed = set(RSA_ALGORITHMS) if key_type == RSA else {key_type}
    if algorithm not in allowed:
        raise SignatureError(
            "signature_algorithm_mismatch",
            f"A {key_type} key cannot make a {algorithm[:40]!r} signature.",
        )


def parse(armored: bytes | str) -> SshSignature:
    """Check the structure (not the signature): armor, magic, version, fields,
    no trailing data, accepted hash and signature algorithms."""
    parsed = _parse_blob(dearmor(armored))
    _check_algorithms(parsed)
    return parsed


# --- verify -------------------------------------------------------------------------


def _digest(message: Message, hash_algorithm: str) -> bytes:
    hasher = HASH_ALGORITHMS[hash_algorithm]()
    if isinstance(message, bytes | bytearray | memoryview):
        hasher.update(message)
    else:
        while chunk := message.read(1 << 20):
            hasher.update(chunk)
    return hasher.digest()


def signed_data(
    namespace: str, hash_algorithm: str, digest: bytes, reserved: bytes = b""
) -> bytes:
    """The bytes the key actually signs."""
    return (
        MAGIC
        + ssh_string(namespace.encode("utf-8"))
        + ssh_string(reserved)
        + ssh_string(hash_algorithm.encode("ascii"))
        + ssh_string(digest)
    )


def _malformed(detail: str) -> SignatureError:
    message = f"The signature is malformed: {detail}."
    return SignatureError("signature_malformed", message)


def _check(parsed: SshSignature, data: bytes) -> None:
    """Raise ``InvalidSignature`` unless the raw signature verifies over ``data``."""
    key, raw = parsed.public_key.key, parsed.signature
    if isinstance(key, ed25519.Ed25519PublicKey):
        if len(raw) != 64:
            raise _malformed("an Ed25519 signature has 64 bytes")
        key.verify(raw, data)
    elif isinstance(key, ec.EllipticCurvePublicKey):
        reader = WireReader(raw, code="signature_malformed", what="signature")
        r, s = reader.mpint(), reader.mpint()
        reader.expect_end()
        hash_ = ECDSA_HASHES[parsed.public_key.key_type]
        key.verify(encode_dss_signature(r, s), data, ec.ECDSA(hash_))
    elif isinstance(key, rsa.RSAPublicKey):
        size = (key.key_size + 7) // 8
        if len(raw) > size:
            raise _malformed("the RSA signature is longer than the modulus")
        hash_ = RSA_ALGORITHMS[parsed.signature_algorithm]
        key.verify(raw.rjust(size, b"\x00"), data, padding.PKCS1v15(), hash_)


def verify(
    message: Message,
    signature: bytes | str | SshSignature,
    *,
    public_keys: Iterable[SshPublicKey],
    namespace: str = NAMESPACE,
) -> SshSignature:
    """Verify ``signature`` over ``message`` in ``namespace``, made by one of
    ``public_keys`` (compared by wire blob). Returns the parsed signature."""
    parsed = signature if isinstance(signature, SshSignature) else parse(signature)
    _check_algorithms(parsed)
    if parsed.namespace != namespace:
        raise SignatureError(
            "signature_namespace_mismatch",
            f"The signature is for namespace {parsed.namespace[:60]!r}, "
            f"not {namespace!r}.",
        )
    if parsed.public_key.blob not in {key.blob for key in public_keys}:
        raise SignatureError(
            "signature_key_not_allowed",
            f"The signing key {parsed.fingerprint} is not one of the allowed keys.",
        )
    digest = _digest(message, parsed.hash_algorithm)
    try:
        _check(parsed, signed_data(namespace, parsed.hash_algorithm, digest))
    except InvalidSignature:
        raise SignatureError(
            "signature_invalid",
            "The signature does not match the signed file (altered file or signature).",
        ) from None
    return parsed


# --- sign ---------------------------------------------------------------------------


def encode(
    *,
    public_key: bytes,
    namespace: str,
    hash_algorithm: str,
    signature: bytes,
    version: int = VERSION,
    reserved: bytes = b"",
) -> bytes:
    """An SSHSIG blob; ``signature`` is ``string(algorithm) string(raw)``."""
    return (
        MAGIC
        + struct.pack(">I", version)
        + ssh_string(public_key)
        + ssh_string(namespace.encode("utf-8"))
        + ssh_string(reserved)
        + ssh_string(hash_algorithm.encode("ascii"))
        + ssh_string(signature)
    )


def _raw_signature(private: SshPrivateKey, data: bytes) -> tuple[str, bytes]:
    key, key_type = private.key, private.public.key_type
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return ED25519, key.sign(data)
    if isinstance(key, ec.EllipticCurvePrivateKey) and key_type in ECDSA_CURVES:
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(ECDSA_HASHES[key_type])))
        return key_type, ssh_mpint(r) + ssh_mpint(s)
    if isinstance(key, rsa.RSAPrivateKey):
        return "rsa-sha2-512", key.sign(data, padding.PKCS1v15(), hashes.SHA512())
    raise SignatureError("key_type_unsupported", f"Cannot sign with a {key_type} key.")


def sign(
    message: Message,
    private_key: SshPrivateKey,
    *,
    namespace: str = NAMESPACE,
    hash_algorithm: str = "sha512",
) -> str:
    """An armored SSHSIG, as ``ssh-keygen -Y sign -n NAMESPACE`` makes it."""
    if not namespace:
        raise SignatureError("signature_malformed", "The namespace must not be empty.")
    if hash_algorithm not in HASH_ALGORITHMS:
        raise SignatureError("signature_hash_unsupported", "Use sha256 or sha512.")
    digest = _digest(message, hash_algorithm)
    data = signed_data(namespace, hash_algorithm, digest)
    algorithm, raw = _raw_signature(private_key, data)
    blob = encode(
        public_key=private_key.public.blob,
        namespace=namespace,
        hash_algorithm=hash_algorithm,
        signature=ssh_string(algorithm.encode("ascii")) + ssh_string(raw),
    )
    return armor(blob)
