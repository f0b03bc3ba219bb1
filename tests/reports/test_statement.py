"""The in-toto statements: an independent DSSE verifier written here from the
spec (its own PAE and base64, Ed25519 with only the PEM public key) accepts what
``statement_sign`` makes, and it and ``statement_open`` both refuse a changed
payloadType or payload byte; the payload is an in-toto Statement v1 with the
test-result predicate; bad envelopes and keys are refused by name."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from artifacts.lib.signatures.statement import (
    PAYLOAD_TYPE,
    STATEMENT_TYPE,
    StatementError,
    public_key_pem,
)
from gates.lib.signing.statement import (
    PREDICATE_TYPE,
    statement_open,
    statement_result,
    statement_sign,
    test_result_statement,
)

PDF_SHA = hashlib.sha256(b"report").hexdigest()
EVALUATION_SHA = hashlib.sha256(b"evaluation").hexdigest()
PLAN_SHA = hashlib.sha256(b"plan").hexdigest()
BUNDLE_SHA = hashlib.sha256(b"bundle").hexdigest()


# --- an outsider's verifier, from secure-systems-lab/dsse protocol.md ----------------


def outsider_pae(payload_type: bytes, body: bytes) -> bytes:
    parts = [b"DSSEv1", b"%d" % len(payload_type), payload_type, b"%d" % len(body)]
    return b" ".join([*parts, body])


def outsider_verify(envelope: bytes, pem: bytes) -> dict[str, Any]:
    """The statement, or ``InvalidSignature`` / ``ValueError``."""
    key = serialization.load_pem_public_key(pem)
    assert isinstance(key, Ed25519PublicKey)
    document = json.loads(envelope)
    body = base64.standard_b64decode(document["payload"])
    payload_type = document["payloadType"].encode("utf-8")
    message = outsider_pae(payload_type, body)
    for signature in document["signatures"]:
        try:
            key.verify(base64.standard_b64decode(signature["sig"]), message)
        except InvalidSignature:
            continue
        break
    else:
        raise InvalidSignature("no signature verifies")
    if payload_type != b"application/vnd.in-toto+json":
        raise ValueError("not an in-toto payload")
    return json.loads(body)


def test_the_outsider_pae_matches_the_spec_vector() -> None:
    assert (
        outsider_pae(b"http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


# --- fixtures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture
def statement() -> dict[str, Any]:
    return test_result_statement(
        subjects=[("report.pdf", PDF_SHA), ("evaluation.json", EVALUATION_SHA)],
        result=statement_result("WARN"),
        configuration=[("plan.json", PLAN_SHA), ("bundle", BUNDLE_SHA)],
        passed=["latency-p99", "throughput"],
        warned=["energy"],
        failed=["cold-start"],
    )


def _envelope(envelope: bytes) -> dict[str, Any]:
    return json.loads(envelope)


def _dump(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


# --- the statement -------------------------------------------------------------------


def test_the_statement_is_an_in_toto_test_result(statement: dict[str, Any]) -> None:
    assert statement == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [
            {"name": "report.pdf", "digest": {"sha256": PDF_SHA}},
            {"name": "evaluation.json", "digest": {"sha256": EVALUATION_SHA}},
        ],
        "predicateType": "https://in-toto.io/attestation/test-result/v0.1",
        "predicate": {
            "result": "WARNED",
            "configuration": [
                {"name": "plan.json", "digest": {"sha256": PLAN_SHA}},
                {"name": "bundle", "digest": {"sha256": BUNDLE_SHA}},
            ],
            "passedTests": ["latency-p99", "throughput"],
            "warnedTests": ["energy"],
            "failedTests": ["cold-start"],
        },
    }
    assert (
        statement["_type"],
        statement["predicateType"],
    ) == (STATEMENT_TYPE, PREDICATE_TYPE)


def test_a_url_is_in_the_predicate_when_given() -> None:
    made = test_result_statement(
        subjects=[("report.pdf", PDF_SHA)], result="PASSED", configuration=[],
        passed=[], warned=[], failed=[], url="https://gates.example/e/1",
    )  # fmt: skip

    assert made["predicate"]["url"] == "https://gates.example/e/1"


@pytest.mark.parametrize(
    ("verdict", "result"),
    [
        ("PASS", "PASSED"),
        ("WARN", "WARNED"),
        ("FAIL", "FAILED"),
        ("INCONCLUSIVE", "FAILED"),
        ("", "FAILED"),
        ("pass", "FAILED"),
    ],
)
def test_verdicts_map_to_results(verdict: str, result: str) -> None:
    assert statement_result(verdict) == result


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"subjects": []}, "at least one subject"),
        ({"result": "PASS"}, "not one of"),
        ({"subjects": [("report.pdf", "ABC")]}, "not lowercase SHA-256"),
        ({"subjects": [("report.pdf", PDF_SHA.upper())]}, "not lowercase SHA-256"),
        ({"configuration": [("plan.json", PDF_SHA + "0")]}, "not lowercase SHA-256"),
    ],
)
def test_a_bad_statement_is_refused(changes: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "subjects": [("report.pdf", PDF_SHA)],
        "result": "PASSED",
        "configuration": [],
        "passed": [],
        "warned": [],
        "failed": [],
    }

    with pytest.raises(ValueError, match=message):
        test_result_statement(**(arguments | changes))


# --- signing and verifying -----------------------------------------------------------


def test_the_outsider_accepts_the_envelope(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    envelope = statement_sign(statement, key)

    assert outsider_verify(envelope, public_key_pem(key)) == statement
    assert statement_open(envelope, public_key_pem(key)) == statement


def test_the_envelope_has_the_dsse_fields(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    document = _envelope(statement_sign(statement, key))

    assert set(document) == {"payload", "payloadType", "signatures"}
    assert document["payloadType"] == PAYLOAD_TYPE == "application/vnd.in-toto+json"
    assert "-" not in document["payload"]
    assert "_" not in document["payload"]
    spki = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (signature,) = document["signatures"]
    assert signature["keyid"] == hashlib.sha256(spki).hexdigest()
    assert len(base64.standard_b64decode(signature["sig"])) == 64


def test_the_same_statement_gives_the_same_bytes(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    assert statement_sign(statement, key) == statement_sign(dict(statement), key)


def test_the_public_key_pem_is_the_same_from_either_half(
    key: Ed25519PrivateKey,
) -> None:
    pem = public_key_pem(key)

    assert pem.startswith(b"-----BEGIN PUBLIC KEY-----")
    assert public_key_pem(key.public_key()) == pem


def test_a_changed_payload_type_fails_both_verifiers(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    document = _envelope(statement_sign(statement, key))
    document["payloadType"] = "application/vnd.in-toto.test-result+json"
    changed = _dump(document)

    with pytest.raises(InvalidSignature):
        outsider_verify(changed, public_key_pem(key))
    with pytest.raises(StatementError, match="No signature"):
        statement_open(changed, public_key_pem(key))


def test_a_changed_payload_byte_fails_both_verifiers(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    document = _envelope(statement_sign(statement, key))
    payload = bytearray(base64.standard_b64decode(document["payload"]))
    at = payload.index(b"WARNED")
    payload[at : at + 6] = b"PASSED"
    document["payload"] = base64.standard_b64encode(bytes(payload)).decode()
    changed = _dump(document)

    with pytest.raises(InvalidSignature):
        outsider_verify(changed, public_key_pem(key))
    with pytest.raises(StatementError, match="No signature"):
        statement_open(changed, public_key_pem(key))


def test_another_key_is_refused(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    envelope = statement_sign(statement, key)
    other = public_key_pem(Ed25519PrivateKey.generate())

    with pytest.raises(StatementError, match="No signature"):
        statement_open(envelope, other)


def test_one_good_signature_among_others_is_enough(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    document = _envelope(statement_sign(statement, key))
    stranger = _envelope(statement_sign(statement, Ed25519PrivateKey.generate()))
    document["signatures"] = stranger["signatures"] + document["signatures"]

    assert statement_open(_dump(document), public_key_pem(key)) == statement


def test_url_safe_base64_is_accepted(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    """DSSE verifiers accept either alphabet."""
    document = _envelope(statement_sign(statement, key))
    document["payload"] = base64.urlsafe_b64encode(
        base64.standard_b64decode(document["payload"])
    ).decode()

    assert statement_open(_dump(document), public_key_pem(key)) == statement


def _signed(payload: bytes, key: Ed25519PrivateKey, payload_type: str) -> bytes:
    sig = key.sign(outsider_pae(payload_type.encode(), payload))
    return _dump(
        {
            "payloadType": payload_type,
            "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": "", "sig": base64.b64encode(sig).decode()}],
        }
    )


@pytest.mark.parametrize(
    ("payload", "payload_type", "message"),
    [
        (b'{"_type": "x"}', "application/json", "payloadType is 'application/json'"),
        (b"not json", PAYLOAD_TYPE, "not UTF-8 JSON"),
        (b"[1, 2]", PAYLOAD_TYPE, "not a JSON object"),
        (b'{"predicateType": "p"}', PAYLOAD_TYPE, "_type is None"),
        (
            b'{"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "p"}',
            PAYLOAD_TYPE,
            "_type is 'https://in-toto.io/Statement/v0.1'",
        ),
        (
            b'{"_type": "https://in-toto.io/Statement/v1",'
            b' "predicateType": "https://slsa.dev/provenance/v1"}',
            PAYLOAD_TYPE,
            "predicateType is 'https://slsa.dev/provenance/v1'",
        ),
    ],
)
def test_a_signed_payload_that_is_not_our_statement_is_refused(
    key: Ed25519PrivateKey, payload: bytes, payload_type: str, message: str
) -> None:
    envelope = _signed(payload, key, payload_type)

    with pytest.raises(StatementError, match=message):
        statement_open(envelope, public_key_pem(key))


@pytest.mark.parametrize(
    ("envelope", "message"),
    [
        (b"not json", "not UTF-8 JSON"),
        (b"[]", "not a JSON object"),
        (b'{"payloadType": 1}', "payloadType is not a string"),
        (b'{"payloadType": "t", "payload": "%%%"}', "not valid base64"),
        (
            b'{"payloadType": "t", "payload": "", "signatures": []}',
            "signatures is not a non-empty list",
        ),
        (
            b'{"payloadType": "t", "payload": "", "signatures": ["x"]}',
            "a signature is not an object",
        ),
    ],
)
def test_a_malformed_envelope_is_refused(
    key: Ed25519PrivateKey, envelope: bytes, message: str
) -> None:
    with pytest.raises(StatementError, match=message):
        statement_open(envelope, public_key_pem(key))


def test_a_key_that_is_not_ed25519_is_refused(
    key: Ed25519PrivateKey, statement: dict[str, Any]
) -> None:
    envelope = statement_sign(statement, key)
    ecdsa = generate_private_key(SECP256R1()).public_key()
    pem = ecdsa.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )

    with pytest.raises(StatementError, match="not an Ed25519 key"):
        statement_open(envelope, pem)
    with pytest.raises(StatementError, match="not a PEM public key"):
        statement_open(envelope, b"-----BEGIN PUBLIC KEY-----\n")
