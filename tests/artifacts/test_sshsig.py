from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from artifacts.lib.signatures import SignatureError, sshsig
from artifacts.lib.signatures.sshkeys import SshPrivateKey, load_private_key, ssh_string
from tests.artifacts.keys import (
    KINDS,
    NAMESPACE,
    private_key,
    ssh_keygen,
    ssh_keygen_key,
    ssh_keygen_sign,
    ssh_keygen_verify,
)

MESSAGE = b'{"schema": "reprogate.bundle/v1", "vendor": "acme-flash"}\n'


def _message_file(tmp_path: Path) -> Path:
    path = tmp_path / "manifest.json"
    path.write_bytes(MESSAGE)
    return path


def _refused(
    signature: str | bytes, key: SshPrivateKey, message: bytes = MESSAGE
) -> SignatureError:
    with pytest.raises(SignatureError) as caught:
        sshsig.verify(message, signature, public_keys=[key.public])
    return caught.value


def _blob(key: SshPrivateKey, **changes: object) -> bytes:
    """A correctly signed SSHSIG blob, re-encoded with ``changes``."""
    parsed = sshsig.parse(sshsig.sign(MESSAGE, key))
    fields: dict[str, object] = {
        "public_key": key.public.blob,
        "namespace": parsed.namespace,
        "hash_algorithm": parsed.hash_algorithm,
        "signature": ssh_string(parsed.signature_algorithm.encode())
        + ssh_string(parsed.signature),
    }
    return sshsig.encode(**{**fields, **changes})  # type: ignore[arg-type]


# --- interoperability with the real ssh-keygen ------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_ssh_keygen_signature_verifies(kind: str, tmp_path: Path) -> None:
    key_path = ssh_keygen_key(tmp_path, kind)
    armored = ssh_keygen_sign(key_path, _message_file(tmp_path))
    key = load_private_key(key_path.read_bytes())

    parsed = sshsig.verify(MESSAGE, armored, public_keys=[key.public])

    assert parsed.fingerprint == key.public.fingerprint
    assert (parsed.namespace, parsed.hash_algorithm) == (NAMESPACE, "sha512")


def test_ssh_keygen_sha256_signature_verifies(tmp_path: Path) -> None:
    key_path = ssh_keygen_key(tmp_path, "rsa-3072")
    message = _message_file(tmp_path)
    args = ["-Y", "sign", "-O", "hashalg=sha256", "-f", str(key_path), "-n", NAMESPACE]
    assert ssh_keygen(*args, str(message)).returncode == 0
    key = load_private_key(key_path.read_bytes())

    parsed = sshsig.verify(
        MESSAGE, Path(f"{message}.sig").read_text(), public_keys=[key.public]
    )

    assert parsed.hash_algorithm == "sha256"
    assert parsed.signature_algorithm == "rsa-sha2-512"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hash_algorithm", ["sha256", "sha512"])
def test_our_signature_verifies_with_ssh_keygen(
    kind: str, hash_algorithm: str, tmp_path: Path
) -> None:
    key = load_private_key(ssh_keygen_key(tmp_path, kind).read_bytes())
    signature = tmp_path / "manifest.json.sig"
    signature.write_text(sshsig.sign(MESSAGE, key, hash_algorithm=hash_algorithm))
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'acme-flash namespaces="{NAMESPACE}" {key.public.openssh}\n')

    verified = ssh_keygen_verify(allowed, "acme-flash", signature, MESSAGE)
    checked = ssh_keygen(
        "-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(signature), stdin=MESSAGE
    )

    assert verified.returncode == 0, verified.stderr
    assert b"Good" in verified.stdout
    assert checked.returncode == 0, checked.stderr


def test_ssh_keygen_refuses_our_signature_over_other_bytes(tmp_path: Path) -> None:
    key = private_key("ed25519")
    signature = tmp_path / "manifest.json.sig"
    signature.write_text(sshsig.sign(MESSAGE, key))
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"acme-flash {key.public.openssh}\n")

    result = ssh_keygen_verify(allowed, "acme-flash", signature, MESSAGE + b" ")

    assert result.returncode != 0


def test_message_may_be_a_stream() -> None:
    key = private_key("ecdsa-256")

    signature = sshsig.sign(io.BytesIO(MESSAGE), key)

    assert sshsig.verify(io.BytesIO(MESSAGE), signature, public_keys=[key.public])


def test_armor_wraps_base64_at_70_columns() -> None:
    lines = sshsig.sign(MESSAGE, private_key("rsa-3072")).splitlines()

    assert lines[0] == "-----BEGIN SSH SIGNATURE-----"
    assert lines[-1] == "-----END SSH SIGNATURE-----"
    assert max(len(line) for line in lines[1:-1]) == 70


# --- refusals, each with its own code -----------------------------------------------


def test_wrong_namespace_is_refused(tmp_path: Path) -> None:
    key_path = ssh_keygen_key(tmp_path, "ed25519")
    armored = ssh_keygen_sign(key_path, _message_file(tmp_path), namespace="file")

    error = _refused(armored, load_private_key(key_path.read_bytes()))

    assert error.code == "signature_namespace_mismatch"
    assert "'file'" in error.message


def test_tampered_message_is_refused(tmp_path: Path) -> None:
    key_path = ssh_keygen_key(tmp_path, "ecdsa-384")
    armored = ssh_keygen_sign(key_path, _message_file(tmp_path))
    key = load_private_key(key_path.read_bytes())

    assert _refused(armored, key, MESSAGE.replace(b"acme", b"acmf")).code == (
        "signature_invalid"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_flipped_signature_bit_is_refused(kind: str) -> None:
    key = private_key(kind)
    parsed = sshsig.parse(sshsig.sign(MESSAGE, key))
    raw = bytearray(parsed.signature)
    raw[-1] ^= 0x01
    inner = ssh_string(parsed.signature_algorithm.encode()) + ssh_string(bytes(raw))

    error = _refused(sshsig.armor(_blob(key, signature=inner)), key)

    assert error.code in {"signature_invalid", "signature_malformed"}


def test_unknown_key_is_not_allowed() -> None:
    armored = sshsig.sign(MESSAGE, private_key("ed25519", 1))

    assert _refused(armored, private_key("ed25519")).code == "signature_key_not_allowed"


def test_trailing_garbage_in_the_blob_is_refused() -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(_blob(key) + b"\x00garbage"), key)

    assert error.code == "signature_trailing_data"


def test_text_after_the_armor_is_refused() -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.sign(MESSAGE, key) + "trailing garbage\n", key)

    assert error.code == "signature_trailing_data"


def test_version_2_is_refused() -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(_blob(key, version=2)), key)

    assert error.code == "signature_version_unsupported"


def _legacy_rsa_signature(key: SshPrivateKey) -> str:
    """What an old signer would make: PKCS#1 v1.5 with SHA-1, named ``ssh-rsa``."""
    digest = sshsig._digest(MESSAGE, "sha512")
    data = sshsig.signed_data(NAMESPACE, "sha512", digest)
    assert isinstance(key.key, rsa.RSAPrivateKey)
    raw = key.key.sign(data, padding.PKCS1v15(), hashes.SHA1())  # noqa: S303
    inner = ssh_string(b"ssh-rsa") + ssh_string(raw)
    return sshsig.armor(_blob(key, signature=inner))


def test_legacy_ssh_rsa_sha1_signature_is_refused(tmp_path: Path) -> None:
    key = private_key("rsa-3072")
    signature = tmp_path / "legacy.sig"
    signature.write_text(_legacy_rsa_signature(key))
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"acme-flash {key.public.openssh}\n")

    error = _refused(signature.read_text(), key)

    assert error.code == "signature_algorithm_legacy"
    assert ssh_keygen_verify(allowed, "acme-flash", signature, MESSAGE).returncode != 0


@pytest.mark.parametrize(
    "key_blob",
    [
        ssh_string(b"sk-ssh-ed25519@openssh.com") + ssh_string(b"\x01" * 32),
        ssh_string(b"ssh-rsa")
        + ssh_string(b"\x01\x00\x01")
        + ssh_string(b"\x7f" * 128),
    ],
)
def test_signing_key_of_a_refused_type_or_size_is_unsupported(key_blob: bytes) -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(_blob(key, public_key=key_blob)), key)

    assert error.code == "signature_key_unsupported"


def test_malformed_signing_key_is_a_malformed_signature() -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(_blob(key, public_key=key.public.blob[:-1])), key)

    assert error.code == "signature_malformed"


def test_signature_algorithm_must_fit_the_key() -> None:
    key = private_key("ed25519")
    inner = ssh_string(b"ecdsa-sha2-nistp256") + ssh_string(b"\x00" * 64)

    error = _refused(sshsig.armor(_blob(key, signature=inner)), key)

    assert error.code == "signature_algorithm_mismatch"


@pytest.mark.parametrize("hash_algorithm", ["sha1", "md5", "SHA512", ""])
def test_other_hash_algorithms_are_refused(hash_algorithm: str) -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(_blob(key, hash_algorithm=hash_algorithm)), key)

    assert error.code == "signature_hash_unsupported"


def test_wrong_magic_is_refused() -> None:
    key = private_key("ed25519")

    error = _refused(sshsig.armor(b"SSHSIH" + _blob(key)[6:]), key)

    assert error.code == "signature_magic_invalid"


def test_truncated_blob_is_malformed() -> None:
    key = private_key("ed25519")

    assert _refused(sshsig.armor(_blob(key)[:-5]), key).code == "signature_malformed"


def test_empty_namespace_is_malformed() -> None:
    key = private_key("ed25519")

    assert _refused(sshsig.armor(_blob(key, namespace="")), key).code == (
        "signature_malformed"
    )


def test_short_ed25519_signature_is_malformed() -> None:
    key = private_key("ed25519")
    inner = ssh_string(b"ssh-ed25519") + ssh_string(b"\x01" * 63)

    error = _refused(sshsig.armor(_blob(key, signature=inner)), key)

    assert error.code == "signature_malformed"


_ARMOR_CASES: dict[str, Callable[[str], str]] = {
    "no header": lambda a: a.split("\n", 1)[1],
    "header not alone": lambda a: a.replace("-----\n", "----- x\n", 1),
    "no footer": lambda a: a.rsplit("-----END", 1)[0],
    "empty": lambda a: "",
}


@pytest.mark.parametrize("case", sorted(_ARMOR_CASES))
def test_broken_armor_is_refused(case: str) -> None:
    key = private_key("ed25519")
    armored = _ARMOR_CASES[case](sshsig.sign(MESSAGE, key))

    assert _refused(armored, key).code == "signature_armor_invalid"


@pytest.mark.parametrize("body", ["!!!!not base64!!!!", "QUJDRA", "QUJD=RA=="])
def test_malformed_base64_is_refused(body: str) -> None:
    armored = f"-----BEGIN SSH SIGNATURE-----\n{body}\n-----END SSH SIGNATURE-----\n"

    assert _refused(armored, private_key("ed25519")).code == "signature_base64_invalid"


def test_oversized_signature_file_is_refused() -> None:
    key = private_key("ed25519")
    armored = sshsig.sign(MESSAGE, key).replace("\n", "\n" + " " * 70_000, 1)

    assert _refused(armored, key).code == "signature_too_large"


def test_crlf_armor_is_accepted() -> None:
    key = private_key("ecdsa-521")
    armored = sshsig.sign(MESSAGE, key).replace("\n", "\r\n")

    assert sshsig.verify(MESSAGE, armored, public_keys=[key.public])


def test_refusal_codes_are_distinct() -> None:
    key, rsa_key = private_key("ed25519"), private_key("rsa-3072")
    armored = sshsig.sign(MESSAGE, key)
    cases = [
        (sshsig.sign(MESSAGE, key, namespace="file"), key),
        (armored, private_key("ed25519", 1)),
        (sshsig.armor(_blob(key) + b"\x00"), key),
        (sshsig.armor(_blob(key, version=2)), key),
        (_legacy_rsa_signature(rsa_key), rsa_key),
        (armored.replace("-----BEGIN", "-----BEGAN"), key),
        (armored.replace("\n", "\n*", 1), key),
    ]

    codes = {_refused(signature, signer).code for signature, signer in cases}
    codes.add(_refused(armored, key, MESSAGE + b"x").code)

    assert len(codes) == len(cases) + 1


def test_signature_error_carries_code_and_message() -> None:
    error = _refused("nonsense", private_key("ed25519"))

    assert (error.code, str(error)) == ("signature_armor_invalid", error.message)
