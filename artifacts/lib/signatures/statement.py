"""in-toto Statements v1 in DSSE envelopes signed with Ed25519, whatever their
predicate: the signed reports' test-result statements
(``gates.lib.signing.statement``) and the lab hosts' run statements
(``benchmarks.lib.signing``) are both made and opened here.

The statement is serialised as canonical JSON (``artifacts.lib.canonical``); the
envelope is DSSE's JSON envelope (payload in standard base64, one signature over
``PAE(payloadType, payload)``, ``keyid`` the hex SHA-256 of the public key's DER
SubjectPublicKeyInfo, a hint only). Ed25519 signatures are deterministic, so the
same statement and key always give the same envelope bytes.

``envelope_open`` verifies in the order DSSE prescribes: a signature by the
given key over PAE first, then the payload type, and only then the payload.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures import SignatureError
from artifacts.lib.signatures.dsse import pae
from artifacts.lib.signatures.dsse import parse as dsse_parse

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")
MAX_KEY_PEM: Final = 16 * 1024


class StatementError(ValueError):
    """A statement envelope or key was refused; the message names what is wrong."""


def descriptors(pairs: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """in-toto ResourceDescriptors with a name and a sha256 digest;
    ``ValueError`` for a digest that is not lowercase SHA-256 hex."""
    found = []
    for name, digest in pairs:
        if not SHA256_HEX.fullmatch(digest):
            raise ValueError(f"The digest of {name!r} is not lowercase SHA-256 hex.")
        found.append({"name": name, "digest": {"sha256": digest}})
    return found


def descriptor_digests(values: Any) -> dict[str, str]:
    """name → sha256 of in-toto ResourceDescriptors (malformed ones left out)."""
    found: dict[str, str] = {}
    for value in values if isinstance(values, list) else []:
        if isinstance(value, dict) and isinstance(value.get("digest"), dict):
            found[str(value.get("name"))] = str(value["digest"].get("sha256"))
    return found


def statement(
    *,
    subjects: Iterable[tuple[str, str]],
    predicate_type: str,
    predicate: dict[str, Any],
) -> dict[str, Any]:
    """An in-toto Statement v1; ``subjects`` are (name, SHA-256 hex) pairs.
    ``ValueError`` for no subject or a malformed digest."""
    subject = descriptors(subjects)
    if not subject:
        raise ValueError("An in-toto statement needs at least one subject.")
    return {
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": predicate_type,
        "predicate": predicate,
    }


def public_key_pem(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    """The public key as PEM SubjectPublicKeyInfo."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """Hex SHA-256 of the public key's DER SubjectPublicKeyInfo."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def fingerprint(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """``SHA256:`` and the unpadded base64 SHA-256 of the raw 32-byte public
    key: short enough to read aloud and compare on the pools page."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


def load_public_key(pem: bytes | str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM SubjectPublicKeyInfo; ``StatementError``
    for anything else."""
    data = pem.encode("ascii", "replace") if isinstance(pem, str) else pem
    if len(data) > MAX_KEY_PEM:
        raise StatementError("The key is too large to be an Ed25519 PEM key.")
    try:
        public = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise StatementError("The key is not a PEM public key.") from None
    if not isinstance(public, Ed25519PublicKey):
        raise StatementError("The key is not an Ed25519 key.")
    return public


def envelope_sign(document: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The DSSE JSON envelope (canonical JSON bytes) of the statement ``document``."""
    payload = canonical_json(document)
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [
            {"keyid": key_id(key), "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }
    return canonical_json(envelope)


def envelope_open(
    envelope: bytes,
    public_key: bytes | Ed25519PublicKey,
    *,
    predicate_type: str,
    what: str = "statement key",
) -> dict[str, Any]:
    """The statement in ``envelope`` once a signature by ``public_key`` (PEM or
    a key) verifies and it is an in-toto Statement v1 with ``predicate_type``;
    ``StatementError`` otherwise (``what`` names the key in the message)."""
    public = (
        public_key
        if isinstance(public_key, Ed25519PublicKey)
        else load_public_key(public_key)
    )
    try:
        parsed = dsse_parse(envelope)
    except SignatureError as error:
        raise StatementError(error.message) from None
    message = pae(parsed.payload_type, parsed.payload)
    if not any(_verifies(public, sig, message) for _keyid, sig in parsed.signatures):
        raise StatementError(
            f"No signature of the statement envelope verifies with the {what} "
            "(the payload or payloadType was altered, or another key signed it)."
        )
    if parsed.payload_type != PAYLOAD_TYPE:
        raise StatementError(
            f"payloadType is {parsed.payload_type[:80]!r}, not {PAYLOAD_TYPE!r}."
        )
    try:
        document = json.loads(parsed.payload)
    except (UnicodeDecodeError, ValueError):
        raise StatementError("The signed payload is not UTF-8 JSON.") from None
    if not isinstance(document, dict):
        raise StatementError("The signed payload is not a JSON object.")
    if document.get("_type") != STATEMENT_TYPE:
        raise StatementError(
            f"The payload's _type is {document.get('_type')!r}, not {STATEMENT_TYPE!r}."
        )
    if document.get("predicateType") != predicate_type:
        raise StatementError(
            f"The payload's predicateType is {document.get('predicateType')!r}, "
            f"not {predicate_type!r}."
        )
    return document


def _verifies(public: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
    try:
        public.verify(sig, message)
    except InvalidSignature:
        return False
    return True
