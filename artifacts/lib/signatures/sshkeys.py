"""OpenSSH keys: public key lines (``ssh-ed25519 AAAA… comment``), the SSH wire
encoding (RFC 4251 ``string``/``mpint``), ``ssh-keygen -l`` fingerprints, and
unencrypted private key files for signing."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from artifacts.lib.signatures import SignatureError

PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

ED25519 = "ssh-ed25519"
RSA = "ssh-rsa"
# key type -> (curve name inside the blob, curve)
ECDSA_CURVES: dict[str, tuple[str, ec.EllipticCurve]] = {
    "ecdsa-sha2-nistp256": ("nistp256", ec.SECP256R1()),
    "ecdsa-sha2-nistp384": ("nistp384", ec.SECP384R1()),
    "ecdsa-sha2-nistp521": ("nistp521", ec.SECP521R1()),
}
KEY_TYPES = (ED25519, *ECDSA_CURVES, RSA)
MIN_RSA_BITS = 2048
MAX_RSA_BITS = 16384  # OpenSSH's SSHBUF_MAX_BIGNUM
MAX_KEY_LINE = 16 * 1024
MAX_COMMENT = 200
OPENSSH_PRIVATE_BEGIN = b"-----BEGIN OPENSSH PRIVATE KEY-----"
OPENSSH_PRIVATE_END = b"-----END OPENSSH PRIVATE KEY-----"


# --- wire encoding ------------------------------------------------------------------


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def ssh_mpint(value: int) -> bytes:
    """A non-negative integer as an SSH ``mpint`` (zero byte first if the top
    bit is set)."""
    if value < 0:
        raise ValueError("mpint values here are never negative")
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if raw and raw[0] & 0x80:
        raw = b"\x00" + raw
    return ssh_string(raw)


class WireReader:
    """Reads SSH wire fields; a short read raises ``SignatureError(code, …)``."""

    def __init__(self, data: bytes, *, code: str, what: str) -> None:
        self.data = data
        self.offset = 0
        self.code = code
        self.what = what

    def fail(self, detail: str) -> SignatureError:
        return SignatureError(self.code, f"The {self.what} is malformed: {detail}.")

    def raw(self, length: int) -> bytes:
        if length > len(self.data) - self.offset:
            raise self.fail("it ends early")
        chunk = self.data[self.offset : self.offset + length]
        self.offset += length
        return chunk

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.raw(4))[0]
        return value

    def string(self) -> bytes:
        return self.raw(self.uint32())

    def text(self) -> str:
        try:
            return self.string().decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a name is not UTF-8") from None

    def mpint(self) -> int:
        raw = self.string()
        if raw and raw[0] & 0x80:
            raise self.fail("a number is negative")
        if len(raw) > MAX_RSA_BITS // 8 + 1:
            raise self.fail("a number is too large")
        return int.from_bytes(raw, "big")

    @property
    def remaining(self) -> int:
        return len(self.data) - self.offset

    def expect_end(self) -> None:
        if self.remaining:
            raise self.fail(f"{self.remaining} unexpected trailing bytes")


# --- public keys --------------------------------------------------------------------


@dataclass(frozen=True)
class SshPublicKey:
    """A parsed OpenSSH public key: its type, wire blob and ``cryptography`` key."""

    key_type: str
    blob: bytes
    key: PublicKey
    comment: str = ""

    @property
    def fingerprint(self) -> str:
        """``SHA256:…`` exactly as ``ssh-keygen -l -E sha256`` prints it."""
        digest = hashlib.sha256(self.blob).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")

    @property
    def openssh(self) -> str:
        """``<type> <base64>`` without the comment."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode('ascii')}"

    @property
    def bits(self) -> int:
        if isinstance(self.key, ed25519.Ed25519PublicKey):
            return 256
        return self.key.key_size

    @classmethod
    def from_cryptography(cls, key: PublicKey, comment: str = "") -> SshPublicKey:
        try:
            line = key.public_bytes(
                serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
            )
        except ValueError:  # a curve OpenSSH does not define
            raise _unsupported(type(key).__name__) from None
        return parse_public_key_line(f"{line.decode('ascii')} {comment}")


def _unsupported(key_type: str) -> SignatureError:
    return SignatureError(
        "key_type_unsupported",
        f"Key type {key_type[:60]!r} is not accepted; use ssh-ed25519, "
        "ecdsa-sha2-nistp256/384/521 or ssh-rsa (at least 2048 bits).",
    )


def _ed25519(reader: WireReader) -> PublicKey:
    raw = reader.string()
    if len(raw) != 32:
        raise reader.fail("an Ed25519 key has 32 bytes")
    return ed25519.Ed25519PublicKey.from_public_bytes(raw)


def _ecdsa(reader: WireReader, key_type: str) -> PublicKey:
    curve_name, curve = ECDSA_CURVES[key_type]
    if reader.text() != curve_name:
        raise reader.fail(f"the curve name does not match {key_type}")
    point = reader.string()
    if not point.startswith(b"\x04"):
        raise reader.fail("the curve point is not uncompressed")
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
    except ValueError:
        raise reader.fail("the point is not on the curve") from None


def _rsa(reader: WireReader) -> PublicKey:
    exponent, modulus = reader.mpint(), reader.mpint()
    bits = modulus.bit_length()
    if bits < MIN_RSA_BITS:
        raise SignatureError(
            "key_too_small",
            f"This RSA key has {bits} bits; at least {MIN_RSA_BITS} are required.",
        )
    try:
        return rsa.RSAPublicNumbers(exponent, modulus).public_key()
    except ValueError:
        raise reader.fail("the RSA exponent is invalid") from None


def public_key_from_blob(
    blob: bytes, *, code: str = "key_malformed", comment: str = ""
) -> SshPublicKey:
    """Parse an SSH wire-encoded public key; malformed blobs raise ``code``."""
    reader = WireReader(blob, code=code, what="public key")
    key_type = reader.text()
    if key_type == ED25519:
        key = _ed25519(reader)
    elif key_type in ECDSA_CURVES:
        key = _ecdsa(reader, key_type)
    elif key_type == RSA:
        key = _rsa(reader)
    else:
        raise _unsupported(key_type)
    reader.expect_end()
    return SshPublicKey(key_type=key_type, blob=blob, key=key, comment=comment)


def _clean_comment(comment: str) -> str:
    printable = "".join(c if c.isprintable() else " " for c in comment)
    return printable.strip()[:MAX_COMMENT]


def parse_public_key_line(line: str) -> SshPublicKey:
    """``<type> <base64> [comment]``, as in ``id_ed25519.pub``: one line, the
    type named outside the blob must match the one inside it."""
    line = line.strip()
    if not line:
        raise SignatureError("key_malformed", "The public key is empty.")
    if len(line) > MAX_KEY_LINE or "\n" in line or "\r" in line:
        raise SignatureError(
            "key_malformed", "Paste exactly one public key line (the .pub file)."
        )
    fields = line.split(None, 2)
    if fields[0] not in KEY_TYPES:
        raise _unsupported(fields[0])
    if len(fields) < 2:
        raise SignatureError("key_malformed", "The key line has no base64 key.")
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("key_malformed", "The key is not valid base64.") from None
    comment = _clean_comment(fields[2]) if len(fields) == 3 else ""
    key = public_key_from_blob(blob, comment=comment)
    if key.key_type != fields[0]:
        raise SignatureError(
            "key_type_mismatch",
            f"The line says {fields[0]} but the key inside is {key.key_type}.",
        )
    return key


# --- private keys -------------------------------------------------------------------


@dataclass(frozen=True)
class SshPrivateKey:
    """A private key to sign with, and its public half."""

    key: PrivateKey
    public: SshPublicKey


def _openssh_cipher(data: bytes) -> bytes:
    """The cipher name in an ``openssh-key-v1`` file (``none`` if unencrypted)."""
    body = data.strip()[len(OPENSSH_PRIVATE_BEGIN) : -len(OPENSSH_PRIVATE_END)]
    try:
        blob = base64.b64decode(b"".join(body.split()), validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError(
            "private_key_malformed", "The private key is not valid base64."
        ) from None
    magic = b"openssh-key-v1\x00"
    reader = WireReader(blob, code="private_key_malformed", what="private key")
    if reader.raw(len(magic)) != magic:
        raise reader.fail("it is not an openssh-key-v1 file")
    return reader.string()


def _encrypted() -> SignatureError:
    return SignatureError(
        "private_key_encrypted",
        "The private key is protected by a passphrase; sign with an unencrypted "
        "copy, or sign with `ssh-keygen -Y sign` and add the .sig yourself.",
    )


def _load_private(data: bytes) -> object:
    stripped = data.strip()
    if stripped.startswith(OPENSSH_PRIVATE_BEGIN):
        if not stripped.endswith(OPENSSH_PRIVATE_END):
            raise SignatureError("private_key_malformed", "The key file is truncated.")
        if _openssh_cipher(stripped) != b"none":
            raise _encrypted()
        return serialization.load_ssh_private_key(stripped, password=None)
    if stripped.startswith(b"-----BEGIN ") and b"PRIVATE KEY-----" in stripped:
        if b"ENCRYPTED" in stripped:
            raise _encrypted()
        return serialization.load_pem_private_key(stripped, password=None)
    raise SignatureError(
        "private_key_malformed", "This is not an OpenSSH or PEM private key file."
    )


def load_private_key(data: bytes, *, comment: str = "") -> SshPrivateKey:
    """An unencrypted OpenSSH (``ssh-keygen``) or PEM private key."""
    try:
        key = _load_private(data)
    except TypeError:  # cryptography: encrypted but no password given
        raise _encrypted() from None
    except UnsupportedAlgorithm:
        raise _unsupported("this private key's type") from None
    except ValueError as error:
        raise SignatureError(
            "private_key_malformed", f"The private key cannot be read: {error}"
        ) from None
    if not isinstance(
        key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    ):
        raise _unsupported(type(key).__name__)
    return SshPrivateKey(key, SshPublicKey.from_cryptography(key.public_key(), comment))
