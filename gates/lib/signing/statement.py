"""The in-toto Statement v1 beside every report, with the test-result predicate,
in a DSSE envelope signed with the installation's Ed25519 key (docs/reports.md,
"The in-toto statement").

The statement is serialised as canonical JSON (``artifacts.lib.canonical``); the
envelope is DSSE's JSON envelope (payload in standard base64, one signature over
``PAE(payloadType, payload)``, ``keyid`` the hex SHA-256 of the public key's DER
SubjectPublicKeyInfo, a hint only). Ed25519 signatures are deterministic, so the
same statement and key always give the same envelope bytes.

``statement_open`` verifies in the order DSSE prescribes: a signature by the
given key over PAE first, then the payload type, and only then the payload.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
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
PREDICATE_TYPE: Final = "https://in-toto.io/attestation/test-result/v0.1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
RESULTS: Final = ("PASSED", "WARNED", "FAILED")
SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")


class StatementError(ValueError):
    """A statement envelope was refused; the message names what is wrong."""


def statement_result(verdict: str) -> str:
    """The test-result ``result`` of a gate verdict: PASS → PASSED, WARN →
    WARNED, anything else (FAIL, INCONCLUSIVE, …) → FAILED."""
    return {"PASS": "PASSED", "WARN": "WARNED"}.get(verdict, "FAILED")


def test_result_statement(
    *,
    subjects: Sequence[tuple[str, str]],
    result: str,
    configuration: Sequence[tuple[str, str]],
    passed: Sequence[str],
    warned: Sequence[str],
    failed: Sequence[str],
    url: str = "",  # noqa: PT028 (not a test: see the end of the module)
) -> dict[str, Any]:
    """An in-toto Statement v1 with the test-result v0.1 predicate; ``subjects``
    and ``configuration`` are (name, SHA-256 hex) pairs. ``ValueError`` for no
    subject, a digest that is not SHA-256 hex or an unknown ``result``."""
    if not subjects:
        raise ValueError("An in-toto statement needs at least one subject.")
    if result not in RESULTS:
        raise ValueError(f"result is {result!r}, not one of {', '.join(RESULTS)}.")
    predicate: dict[str, Any] = {
        "result": result,
        "configuration": _descriptors(configuration),
        "passedTests": [str(name) for name in passed],
        "warnedTests": [str(name) for name in warned],
        "failedTests": [str(name) for name in failed],
    }
    if url:
        predicate["url"] = url
    return {
        "_type": STATEMENT_TYPE,
        "subject": _descriptors(subjects),
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def _descriptors(pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """in-toto ResourceDescriptors with a name and a sha256 digest."""
    descriptors = []
    for name, digest in pairs:
        if not SHA256_HEX.fullmatch(digest):
            raise ValueError(f"The digest of {name!r} is not lowercase SHA-256 hex.")
        descriptors.append({"name": name, "digest": {"sha256": digest}})
    return descriptors


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


def statement_sign(statement: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The DSSE JSON envelope (canonical JSON bytes) of ``statement``."""
    payload = canonical_json(statement)
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [
            {"keyid": key_id(key), "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }
    return canonical_json(envelope)


def statement_open(envelope: bytes, public_key_pem: bytes) -> dict[str, Any]:
    """The statement in ``envelope`` once a signature by the key in
    ``public_key_pem`` verifies and it is an in-toto Statement v1 with the
    test-result predicate; ``StatementError`` otherwise."""
    public = _public_key(public_key_pem)
    try:
        parsed = dsse_parse(envelope)
    except SignatureError as error:
        raise StatementError(error.message) from None
    message = pae(parsed.payload_type, parsed.payload)
    if not any(_verifies(public, sig, message) for _keyid, sig in parsed.signatures):
        raise StatementError(
            "No signature of the statement envelope verifies with the statement key "
            "(the payload or payloadType was altered, or another key signed it)."
        )
    if parsed.payload_type != PAYLOAD_TYPE:
        raise StatementError(
            f"payloadType is {parsed.payload_type[:80]!r}, not {PAYLOAD_TYPE!r}."
        )
    try:
        statement = json.loads(parsed.payload)
    except (UnicodeDecodeError, ValueError):
        raise StatementError("The signed payload is not UTF-8 JSON.") from None
    if not isinstance(statement, dict):
        raise StatementError("The signed payload is not a JSON object.")
    if statement.get("_type") != STATEMENT_TYPE:
        raise StatementError(
            f"The payload's _type is {statement.get('_type')!r}, "
            f"not {STATEMENT_TYPE!r}."
        )
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise StatementError(
            f"The payload's predicateType is {statement.get('predicateType')!r}, "
            f"not {PREDICATE_TYPE!r}."
        )
    return statement


def _public_key(pem: bytes) -> Ed25519PublicKey:
    try:
        public = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError):
        raise StatementError("The statement key is not a PEM public key.") from None
    if not isinstance(public, Ed25519PublicKey):
        raise StatementError("The statement key is not an Ed25519 key.")
    return public


def _verifies(public: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
    try:
        public.verify(sig, message)
    except InvalidSignature:
        return False
    return True


# Not a test, whatever its name: pytest collects functions named test_* that a
# test module imports.
test_result_statement.__test__ = False  # type: ignore[attr-defined]
