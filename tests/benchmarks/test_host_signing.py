"""The lab host's key and the run statement's checks, without Django
(``benchmarks.lib.signing``): the key file is made once with mode 0600 and
refused rather than replaced when it is unsafe; a statement is checked against
the outputs, environment and runner artefacts the server holds."""

from __future__ import annotations

import hashlib
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

from artifacts.lib.signatures.statement import (
    StatementError,
    fingerprint,
    public_key_pem,
)
from benchmarks.lib.signing import (
    HOST_KEY_FILE,
    HostKeyError,
    host_key_load_or_create,
    run_statement,
    run_statement_open,
    run_statement_problems,
    run_statement_sign,
    run_subjects,
)


def _public(path: Path) -> bytes:
    return public_key_pem(host_key_load_or_create(path))


def test_the_key_is_made_once_with_mode_0600_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"

    first = _public(state)

    info = (state / HOST_KEY_FILE).stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert _public(state) == first  # a restart keeps the key
    assert [p.name for p in state.iterdir()] == [HOST_KEY_FILE]  # no temporary left


def test_agents_starting_at_once_get_one_key(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: _public(tmp_path), range(16)))

    assert len(keys) == 1


def _written(tmp_path: Path, data: bytes, mode: int = 0o600) -> Path:
    path = tmp_path / HOST_KEY_FILE
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_a_key_others_may_read_is_refused_not_replaced(tmp_path: Path) -> None:
    _public(tmp_path)
    path = tmp_path / HOST_KEY_FILE
    before = path.read_bytes()
    path.chmod(0o644)

    with pytest.raises(HostKeyError, match="readable by others"):
        host_key_load_or_create(tmp_path)
    assert path.read_bytes() == before


def test_a_symlinked_key_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _public(elsewhere)
    (tmp_path / "state").mkdir()
    os.symlink(elsewhere / HOST_KEY_FILE, tmp_path / "state" / HOST_KEY_FILE)

    with pytest.raises(HostKeyError, match="cannot open"):
        host_key_load_or_create(tmp_path / "state")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"not a key\n", "not an unencrypted PEM private key"),
        (
            generate_private_key(SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "not an Ed25519 key",
        ),
    ],
)
def test_a_file_that_is_not_an_ed25519_key_is_refused(
    tmp_path: Path, data: bytes, says: str
) -> None:
    _written(tmp_path, data)

    with pytest.raises(HostKeyError, match=says):
        host_key_load_or_create(tmp_path)


# --- the statement's checks ----------------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


OUT, ENV, TELEMETRY = _sha(b"out"), _sha(b"env"), _sha(b"telemetry")


def _statement(**artefacts: str) -> dict[str, Any]:
    return run_statement(
        subjects=run_subjects(
            outputs={"a.json": OUT}, environment_sha256=ENV, artefacts=artefacts
        ),
        run="r-1",
        attempt=1,
        campaign="c-1",
        scenario={"name": "s"},
        repetition=1,
        exit_code=0,
        stop_reason="exited",
        started="2026-12-05T04:00:00.000000Z",
        ended="2026-12-05T04:00:01.000000Z",
        host="agent@lab",
    )


def test_runner_artefacts_are_subjects_the_server_must_hold() -> None:
    document = _statement(telemetry=TELEMETRY)

    def problems(artefacts: dict[str, str] | None) -> list[str]:
        return run_statement_problems(
            document,
            run="r-1",
            attempt=1,
            outputs={"a.json": OUT},
            environment_sha256=ENV,
            artefacts=artefacts,
        )

    assert problems({"telemetry": TELEMETRY}) == []
    assert problems(None) == [
        "it names runner artefact 'telemetry', which the server does not hold"
    ]
    changed = problems({"telemetry": OUT})
    assert len(changed) == 1
    assert changed[0].startswith("its digest of runner artefact 'telemetry'")


def test_an_unknown_subject_and_another_attempt_are_named() -> None:
    document = _statement()
    document["subject"].append({"name": "extra", "digest": {"sha256": OUT}})

    problems = run_statement_problems(
        document, run="r-1", attempt=2, outputs={"a.json": OUT}, environment_sha256=ENV
    )

    assert problems == [
        "it is the statement of attempt 1",
        "it names an unknown subject 'extra'",
    ]


def test_the_envelope_opens_with_its_key_only(tmp_path: Path) -> None:
    key = host_key_load_or_create(tmp_path / "a")
    other = host_key_load_or_create(tmp_path / "b")
    envelope = run_statement_sign(_statement(), key)

    assert (
        run_statement_open(envelope, public_key_pem(key))["predicate"]["run"] == "r-1"
    )
    with pytest.raises(StatementError, match="host key"):
        run_statement_open(envelope, public_key_pem(other))
    assert fingerprint(key) != fingerprint(other)
