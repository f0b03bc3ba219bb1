"""The log key file: generated on first use with mode 0600, read back, refused
when others may read it or it is not an Ed25519 key; racing creators agree."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from artifacts.lib.transparency.keyfile import LogKeyError, load_private_key

ROOT = Path(__file__).resolve().parents[3]


def _public(key: object) -> bytes:
    return key.public_key().public_bytes_raw()  # type: ignore[attr-defined]


def test_first_use_creates_a_private_key_file(tmp_path: Path) -> None:
    path = tmp_path / "var" / "keys" / "log.pem"

    key = load_private_key(path, create=True)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert _public(load_private_key(path, create=False)) == _public(key)
    assert [p.name for p in path.parent.iterdir()] == ["log.pem"]  # no temp file


def test_a_missing_key_is_not_created_when_not_allowed(tmp_path: Path) -> None:
    with pytest.raises(LogKeyError, match="missing"):
        load_private_key(tmp_path / "log.pem", create=False)

    assert not (tmp_path / "log.pem").exists()


def test_a_key_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.pem"
    load_private_key(path, create=True)
    path.chmod(0o644)

    with pytest.raises(LogKeyError, match="chmod 600"):
        load_private_key(path, create=True)


def test_a_key_of_another_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.pem"
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)

    with pytest.raises(LogKeyError, match="not an Ed25519 key"):
        load_private_key(path, create=True)


def test_a_file_that_is_no_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.pem"
    path.write_text("not a key\n")
    path.chmod(0o600)

    with pytest.raises(LogKeyError, match="not a PEM key"):
        load_private_key(path, create=True)


def test_processes_creating_the_key_at_once_get_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "log.pem"
    script = (
        "import sys; from artifacts.lib.transparency.keyfile import load_private_key; "
        "k = load_private_key(sys.argv[1], create=True); "
        "print(k.public_key().public_bytes_raw().hex())"
    )

    command = [sys.executable, "-c", script, str(path)]
    runs = [
        subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = {run.communicate(timeout=60)[0].strip() for run in runs}

    assert len(outputs) == 1
    assert outputs == {_public(load_private_key(path, create=False)).hex()}
