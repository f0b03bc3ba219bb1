from __future__ import annotations

import base64
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from artifacts.lib.signatures import SignatureError
from artifacts.lib.signatures.sshkeys import (
    SshPublicKey,
    load_private_key,
    parse_public_key_line,
    ssh_string,
)
from tests.artifacts.keys import (
    KINDS,
    private_key,
    public_line,
    ssh_keygen,
    ssh_keygen_key,
)


def _code(line: str) -> str:
    with pytest.raises(SignatureError) as caught:
        parse_public_key_line(line)
    return caught.value.code


def _line(blob: bytes, key_type: str = "ssh-ed25519") -> str:
    return f"{key_type} {base64.b64encode(blob).decode()}"


def _ed25519_blob() -> bytes:
    return private_key("ed25519").public.blob


# --- public keys made by the real ssh-keygen ------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_fingerprint_equals_ssh_keygen_l(kind: str, tmp_path: Path) -> None:
    pub = Path(f"{ssh_keygen_key(tmp_path, kind)}.pub")

    key = parse_public_key_line(pub.read_text())

    printed = ssh_keygen("-l", "-E", "sha256", "-f", str(pub)).stdout.decode()
    assert printed.split()[1] == key.fingerprint
    assert key.fingerprint.startswith("SHA256:")
    assert not key.fingerprint.endswith("=")


@pytest.mark.parametrize(
    ("kind", "key_type", "bits"),
    [
        ("ed25519", "ssh-ed25519", 256),
        ("ecdsa-256", "ecdsa-sha2-nistp256", 256),
        ("ecdsa-384", "ecdsa-sha2-nistp384", 384),
        ("ecdsa-521", "ecdsa-sha2-nistp521", 521),
        ("rsa-3072", "ssh-rsa", 3072),
    ],
)
def test_parse_reads_type_size_and_comment(
    kind: str, key_type: str, bits: int, tmp_path: Path
) -> None:
    pub = Path(f"{ssh_keygen_key(tmp_path, kind, comment='ci@acme flash')}.pub")

    key = parse_public_key_line(pub.read_text())

    assert (key.key_type, key.bits, key.comment) == (key_type, bits, "ci@acme flash")
    assert pub.read_text().startswith(key.openssh + " ")


def test_openssh_form_round_trips_without_the_comment() -> None:
    key = parse_public_key_line(public_line("ecdsa-384"))

    again = parse_public_key_line(key.openssh)

    assert again.blob == key.blob
    assert again.comment == ""


def test_comment_control_characters_are_blanked() -> None:
    key = parse_public_key_line(f"{private_key('ed25519').public.openssh} a\tb\x07c")

    assert key.comment == "a b c"


# --- refused public keys ------------------------------------------------------------


def test_rsa_under_2048_bits_is_too_small() -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505
    line = small.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )

    assert _code(line.decode()) == "key_too_small"


def test_rsa_of_exactly_2048_bits_is_accepted() -> None:
    assert parse_public_key_line(public_line("rsa-2048")).bits == 2048


@pytest.mark.parametrize(
    "key_type",
    [
        "ssh-dss",
        "sk-ssh-ed25519@openssh.com",
        "ssh-ed25519-cert-v01@openssh.com",
        'command="x"',
    ],
)
def test_other_key_types_are_unsupported(key_type: str) -> None:
    assert _code(f"{key_type} AAAA comment") == "key_type_unsupported"


def test_blob_of_another_unsupported_type_is_refused() -> None:
    blob = ssh_string(b"ssh-dss") + ssh_string(b"\x01" * 20)

    assert _code(_line(blob)) == "key_type_unsupported"


def test_type_outside_must_match_type_inside() -> None:
    assert _code(_line(_ed25519_blob(), "ssh-rsa")) == "key_type_mismatch"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "ssh-ed25519",
        "ssh-ed25519 not*base64",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG",  # bad padding
        f"{_line(b'')}",
    ],
)
def test_malformed_lines_are_refused(line: str) -> None:
    assert _code(line) == "key_malformed"


def test_two_lines_are_refused() -> None:
    line = public_line("ed25519")

    assert _code(f"{line}\n{line}") == "key_malformed"


def test_truncated_blob_is_refused() -> None:
    assert _code(_line(_ed25519_blob()[:-1])) == "key_malformed"


def test_trailing_bytes_in_the_blob_are_refused() -> None:
    assert _code(_line(_ed25519_blob() + b"\x00")) == "key_malformed"


def test_huge_declared_length_is_refused_without_reading_it() -> None:
    blob = ssh_string(b"ssh-ed25519") + struct.pack(">I", 2**32 - 1) + b"x" * 32

    assert _code(_line(blob)) == "key_malformed"


def _ecdsa_blob(key_type: bytes, curve: bytes, point: bytes) -> bytes:
    return ssh_string(key_type) + ssh_string(curve) + ssh_string(point)


def test_ecdsa_curve_name_must_match_the_type() -> None:
    point = private_key("ecdsa-384").public.key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    blob = _ecdsa_blob(b"ecdsa-sha2-nistp256", b"nistp384", point)

    assert _code(_line(blob, "ecdsa-sha2-nistp256")) == "key_malformed"


def test_ecdsa_point_off_the_curve_is_refused() -> None:
    blob = _ecdsa_blob(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" + b"\x01" * 64)

    assert _code(_line(blob, "ecdsa-sha2-nistp256")) == "key_malformed"


def test_ecdsa_compressed_point_is_refused() -> None:
    point = private_key("ecdsa-256").public.key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
    )
    blob = _ecdsa_blob(b"ecdsa-sha2-nistp256", b"nistp256", point)

    assert _code(_line(blob, "ecdsa-sha2-nistp256")) == "key_malformed"


def test_rsa_negative_modulus_is_refused() -> None:
    blob = (
        ssh_string(b"ssh-rsa") + ssh_string(b"\x01\x00\x01") + ssh_string(b"\xff" * 256)
    )

    assert _code(_line(blob, "ssh-rsa")) == "key_malformed"


def test_from_cryptography_matches_public_bytes() -> None:
    raw = ed25519.Ed25519PrivateKey.generate().public_key()

    key = SshPublicKey.from_cryptography(raw, "me")

    assert key.openssh.encode() == raw.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )


# --- private keys -------------------------------------------------------------------

_OPENSSH_BEGIN = b"-----BEGIN OPENSSH PRIVATE KEY-----\n"
_OPENSSH_END = b"-----END OPENSSH PRIVATE KEY-----\n"


@pytest.mark.parametrize("kind", KINDS)
def test_ssh_keygen_private_key_loads_with_its_public_half(
    kind: str, tmp_path: Path
) -> None:
    path = ssh_keygen_key(tmp_path, kind)

    loaded = load_private_key(path.read_bytes())

    assert (
        loaded.public.blob
        == parse_public_key_line(Path(f"{path}.pub").read_text()).blob
    )


def test_pem_private_key_loads(tmp_path: Path) -> None:
    path = tmp_path / "pem_key"
    args = ["-q", "-t", "ecdsa", "-m", "PEM", "-N", "", "-f", str(path)]
    assert ssh_keygen(*args).returncode == 0

    loaded = load_private_key(path.read_bytes())

    assert loaded.public.key_type == "ecdsa-sha2-nistp256"


def test_encrypted_openssh_private_key_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "locked"
    args = ["-q", "-t", "ed25519", "-N", "secret passphrase", "-f", str(path)]
    assert ssh_keygen(*args).returncode == 0

    with pytest.raises(SignatureError) as caught:
        load_private_key(path.read_bytes())

    assert caught.value.code == "private_key_encrypted"
    assert "passphrase" in caught.value.message


def test_encrypted_pem_private_key_is_refused_clearly() -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )

    with pytest.raises(SignatureError) as caught:
        load_private_key(pem)

    assert caught.value.code == "private_key_encrypted"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"ssh-ed25519 AAAA",
        _OPENSSH_BEGIN + b"!!!!\n" + _OPENSSH_END,
        _OPENSSH_BEGIN + b"AAAA\n",
        _OPENSSH_BEGIN + b"AAAA\n" + _OPENSSH_END,
    ],
)
def test_malformed_private_keys_are_refused(data: bytes) -> None:
    with pytest.raises(SignatureError) as caught:
        load_private_key(data)

    assert caught.value.code == "private_key_malformed"


def test_private_key_on_an_unsupported_curve_is_refused() -> None:
    pem = ec.generate_private_key(ec.SECP256K1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )

    with pytest.raises(SignatureError) as caught:
        load_private_key(pem)

    assert caught.value.code == "key_type_unsupported"


def test_signatures_package_imports_no_django() -> None:
    code = (
        "import sys, artifacts.lib.signatures.sshsig, artifacts.lib.signatures.dsse; "
        "print(any(m.split('.')[0] == 'django' for m in sys.modules))"
    )

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )

    assert result.stdout.strip() == "False"
