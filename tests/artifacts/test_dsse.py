from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from artifacts.lib.signatures import SignatureError, dsse
from artifacts.lib.signatures.sshkeys import SshPrivateKey
from tests.artifacts.keys import private_key

MANIFEST = b'{"schema": "reprogate.bundle/v1", "vendor": "acme-flash"}\n'
DSSE_KINDS = ("ed25519", "ecdsa-256", "ecdsa-384", "ecdsa-521")


def _verify(
    envelope: bytes, key: SshPrivateKey, manifest: bytes = MANIFEST
) -> dsse.Verified:
    return dsse.verify(envelope, public_keys=[key.public], expected_payload=manifest)


def _refused(envelope: bytes, key: SshPrivateKey, manifest: bytes = MANIFEST) -> str:
    with pytest.raises(SignatureError) as caught:
        _verify(envelope, key, manifest)
    return caught.value.code


def _edit(envelope: bytes, **fields: object) -> bytes:
    return json.dumps({**json.loads(envelope), **fields}).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- PAE ----------------------------------------------------------------------------


def test_pae_matches_the_spec_example() -> None:
    encoded = dsse.pae("http://example.com/HelloWorld", b"hello world")

    assert encoded == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_pae_counts_bytes_not_characters() -> None:
    assert dsse.pae("application/é", b"") == "DSSEv1 14 application/é 0 ".encode()


# --- round trips --------------------------------------------------------------------


@pytest.mark.parametrize("kind", DSSE_KINDS)
def test_envelope_round_trips(kind: str) -> None:
    key = private_key(kind)

    verified = _verify(dsse.sign(MANIFEST, key, keyid="ci"), key)

    assert verified.payload == MANIFEST
    assert verified.public_key.fingerprint == key.public.fingerprint


def test_envelope_shape() -> None:
    envelope = json.loads(dsse.sign(MANIFEST, private_key("ed25519"), keyid="ci"))

    assert set(envelope) == {"payload", "payloadType", "signatures"}
    assert base64.b64decode(envelope["payload"]) == MANIFEST
    assert envelope["payloadType"] == dsse.PAYLOAD_TYPE
    assert envelope["signatures"][0]["keyid"] == "ci"


def test_url_safe_base64_is_accepted() -> None:
    key = private_key("ecdsa-256")
    envelope = json.loads(dsse.sign(MANIFEST, key))
    sig = envelope["signatures"][0]["sig"]
    urlsafe = sig.replace("+", "-").replace("/", "_").rstrip("=")
    envelope["signatures"][0]["sig"] = urlsafe

    assert _verify(json.dumps(envelope).encode(), key)


def test_raw_r_s_ecdsa_signature_is_accepted() -> None:
    key = private_key("ecdsa-384")
    assert isinstance(key.key, ec.EllipticCurvePrivateKey)
    der = key.key.sign(
        dsse.pae(dsse.PAYLOAD_TYPE, MANIFEST), ec.ECDSA(dsse.CURVE_HASHES["secp384r1"])
    )
    r, s = decode_dss_signature(der)
    raw = r.to_bytes(48, "big") + s.to_bytes(48, "big")
    envelope = _edit(dsse.sign(MANIFEST, key), signatures=[{"sig": _b64(raw)}])

    assert _verify(envelope, key)


def test_keyid_is_only_a_hint() -> None:
    key = private_key("ed25519")
    envelope = dsse.sign(MANIFEST, key, keyid="someone-else")

    assert _verify(envelope, key).public_key == key.public


def test_one_trusted_signature_among_others_suffices() -> None:
    key, other = private_key("ed25519"), private_key("ed25519", 1)
    theirs = json.loads(dsse.sign(MANIFEST, other))["signatures"]
    ours = json.loads(dsse.sign(MANIFEST, key))["signatures"]
    envelope = _edit(dsse.sign(MANIFEST, key), signatures=theirs + ours)

    assert _verify(envelope, key).public_key == key.public


# --- refusals -----------------------------------------------------------------------


def test_tampered_payload_is_refused() -> None:
    key = private_key("ed25519")
    tampered = MANIFEST.replace(b"acme", b"bolt")
    envelope = _edit(dsse.sign(MANIFEST, key), payload=_b64(tampered))

    assert _refused(envelope, key, tampered) == "dsse_signature_invalid"


def test_changed_payload_type_breaks_the_pae() -> None:
    key = private_key("ecdsa-256")
    envelope = _edit(dsse.sign(MANIFEST, key), payloadType="application/json")

    assert _refused(envelope, key) == "dsse_signature_invalid"


def test_signed_payload_other_than_the_manifest_is_refused() -> None:
    key = private_key("ed25519")
    envelope = dsse.sign(MANIFEST + b" ", key)

    assert _refused(envelope, key) == "dsse_payload_mismatch"


def test_validly_signed_other_payload_type_is_refused() -> None:
    key = private_key("ed25519")
    envelope = dsse.sign(MANIFEST, key, payload_type="application/vnd.in-toto+json")

    assert _refused(envelope, key) == "dsse_payload_type_mismatch"


def test_untrusted_key_is_refused() -> None:
    envelope = dsse.sign(MANIFEST, private_key("ecdsa-521", 1))

    assert _refused(envelope, private_key("ecdsa-521")) == "dsse_signature_invalid"


def test_rsa_keys_never_verify_envelopes() -> None:
    with pytest.raises(SignatureError) as caught:
        dsse.sign(MANIFEST, private_key("rsa-3072"))

    assert caught.value.code == "key_type_unsupported"
    envelope = dsse.sign(MANIFEST, private_key("ed25519"))
    assert _refused(envelope, private_key("rsa-3072")) == "dsse_signature_invalid"


@pytest.mark.parametrize(
    "envelope",
    [
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"payload": "", "signatures": [{"sig": ""}]}',
        b'{"payload": "", "payloadType": "t", "signatures": []}',
        b'{"payload": "", "payloadType": "t", "signatures": ["sig"]}',
        b'{"payload": 1, "payloadType": "t", "signatures": [{"sig": ""}]}',
    ],
)
def test_malformed_envelopes_are_refused(envelope: bytes) -> None:
    assert _refused(envelope, private_key("ed25519")) == "dsse_malformed"


@pytest.mark.parametrize("field", ["payload", "sig"])
def test_malformed_base64_is_refused(field: str) -> None:
    key = private_key("ed25519")
    envelope = json.loads(dsse.sign(MANIFEST, key))
    if field == "payload":
        envelope["payload"] = "!!not base64!!"
    else:
        envelope["signatures"][0]["sig"] = "a"

    assert _refused(json.dumps(envelope).encode(), key) == "dsse_base64_invalid"


def test_too_many_signatures_are_refused() -> None:
    key = private_key("ed25519")
    signatures = json.loads(dsse.sign(MANIFEST, key))["signatures"] * 17
    envelope = _edit(dsse.sign(MANIFEST, key), signatures=signatures)

    assert _refused(envelope, key) == "dsse_malformed"
