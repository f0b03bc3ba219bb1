"""DSSE envelopes (secure-systems-lab/dsse protocol.md v1.0.0) carrying a
bundle manifest: ``{"payload", "payloadType", "signatures": [{"keyid", "sig"}]}``.

The signature covers ``PAE(payloadType, payload)``; ``keyid`` is an unauthenticated
hint and is ignored. Ed25519 and ECDSA keys (DER or raw ``r‖s``; SHA-256/384/512
for P-256/384/521) are accepted. Verification order follows the spec: signature
over PAE first, then the payload type, then the payload."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from artifacts.lib.signatures import SignatureError
from artifacts.lib.signatures.sshkeys import SshPrivateKey, SshPublicKey

PAYLOAD_TYPE = "application/vnd.reprogate.bundle-manifest+json"
MAX_ENVELOPE_BYTES = 32 * 1024 * 1024
MAX_SIGNATURES = 16
CURVE_HASHES: dict[str, hashes.HashAlgorithm] = {
    "secp256r1": hashes.SHA256(),
    "secp384r1": hashes.SHA384(),
    "secp521r1": hashes.SHA512(),
}


def pae(payload_type: str, payload: bytes) -> bytes:
    """``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`` with byte lengths."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


@dataclass(frozen=True)
class Envelope:
    payload: bytes
    payload_type: str
    signatures: tuple[tuple[str, bytes], ...]  # (keyid, sig)


@dataclass(frozen=True)
class Verified:
    payload: bytes
    payload_type: str
    public_key: SshPublicKey  # the trusted key that verified


def _malformed(detail: str) -> SignatureError:
    message = f"The DSSE envelope is malformed: {detail}."
    return SignatureError("dsse_malformed", message)


def _b64(value: Any, field: str) -> bytes:
    """Standard or URL-safe base64, as DSSE verifiers must accept either."""
    if not isinstance(value, str):
        raise _malformed(f"{field} is not a string")
    text = value.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError(
            "dsse_base64_invalid", f"The envelope's {field} is not valid base64."
        ) from None


def _signatures(value: Any) -> tuple[tuple[str, bytes], ...]:
    if not isinstance(value, list) or not value:
        raise _malformed("signatures is not a non-empty list")
    if len(value) > MAX_SIGNATURES:
        raise _malformed(f"more than {MAX_SIGNATURES} signatures")
    if not all(isinstance(item, dict) for item in value):
        raise _malformed("a signature is not an object")
    return tuple(
        (str(item.get("keyid", "")), _b64(item.get("sig"), f"signatures[{index}].sig"))
        for index, item in enumerate(value)
    )


def parse(data: bytes | str) -> Envelope:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_ENVELOPE_BYTES:
        raise _malformed(f"it exceeds {MAX_ENVELOPE_BYTES} bytes")
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise _malformed("it is not UTF-8 JSON") from None
    if not isinstance(document, dict):
        raise _malformed("it is not a JSON object")
    payload_type = document.get("payloadType")
    if not isinstance(payload_type, str):
        raise _malformed("payloadType is not a string")
    payload = _b64(document.get("payload"), "payload")
    return Envelope(payload, payload_type, _signatures(document.get("signatures")))


def _ecdsa_encodings(key: ec.EllipticCurvePublicKey, sig: bytes) -> list[bytes]:
    """DER, and a raw ``r‖s`` of twice the coordinate size re-encoded as DER."""
    size = (key.curve.key_size + 7) // 8
    if len(sig) != 2 * size:
        return [sig]
    r, s = int.from_bytes(sig[:size], "big"), int.from_bytes(sig[size:], "big")
    return [sig, encode_dss_signature(r, s)]


def _verify_one(public: object, sig: bytes, message: bytes) -> None:
    """Raise ``InvalidSignature`` unless ``sig`` verifies; RSA never does here."""
    if isinstance(public, ed25519.Ed25519PublicKey):
        public.verify(sig, message)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        public.verify(sig, message, ec.ECDSA(CURVE_HASHES[public.curve.name]))
    else:
        raise InvalidSignature


def _verifies(key: SshPublicKey, sig: bytes, message: bytes) -> bool:
    public = key.key
    candidates = (
        _ecdsa_encodings(public, sig)
        if isinstance(public, ec.EllipticCurvePublicKey)
        else [sig]
    )
    for candidate in candidates:
        try:
            _verify_one(public, candidate, message)
        except (InvalidSignature, ValueError):
            continue
        return True
    return False


def _trusted_signer(
    envelope: Envelope, public_keys: Iterable[SshPublicKey]
) -> SshPublicKey:
    message = pae(envelope.payload_type, envelope.payload)
    keys = list(public_keys)
    for _keyid, sig in envelope.signatures:
        for key in keys:
            if _verifies(key, sig, message):
                return key
    raise SignatureError(
        "dsse_signature_invalid",
        "No envelope signature verifies with an allowed Ed25519 or ECDSA key "
        "(altered payload or payloadType, or an unknown key).",
    )


def verify(
    data: bytes | str | Envelope,
    *,
    public_keys: Iterable[SshPublicKey],
    expected_payload: bytes,
    payload_type: str = PAYLOAD_TYPE,
) -> Verified:
    """One signature by one of ``public_keys`` over PAE, the expected payload
    type, and a payload byte-identical to ``expected_payload`` (the manifest)."""
    envelope = data if isinstance(data, Envelope) else parse(data)
    key = _trusted_signer(envelope, public_keys)
    if envelope.payload_type != payload_type:
        raise SignatureError(
            "dsse_payload_type_mismatch",
            f"payloadType is {envelope.payload_type[:80]!r}, not {payload_type!r}.",
        )
    if envelope.payload != expected_payload:
        raise SignatureError(
            "dsse_payload_mismatch",
            "The signed payload is not byte-identical to manifest.json.",
        )
    return Verified(envelope.payload, envelope.payload_type, key)


def sign(
    payload: bytes,
    private_key: SshPrivateKey,
    *,
    payload_type: str = PAYLOAD_TYPE,
    keyid: str = "",
) -> bytes:
    """A one-signature envelope (ECDSA signatures DER-encoded)."""
    message, key = pae(payload_type, payload), private_key.key
    if isinstance(key, ed25519.Ed25519PrivateKey):
        sig = key.sign(message)
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        sig = key.sign(message, ec.ECDSA(CURVE_HASHES[key.curve.name]))
    else:
        raise SignatureError(
            "key_type_unsupported", "DSSE envelopes take Ed25519 or ECDSA keys."
        )
    envelope = {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode("ascii")}],
    }
    return json.dumps(envelope, indent=2).encode("utf-8") + b"\n"
