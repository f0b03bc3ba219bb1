"""The lab host's key and the run statement's checks, without Django
(``benchmarks.lib.signing``): the key file is made once with mode 0600 and
refused rather than replaced when it is unsafe; a statement is checked against
the outputs, environment and runner artefacts the server holds."""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

from artifacts.lib.evidence.reader import Entry, EvidenceReport, PackageReader
from artifacts.lib.signatures.statement import (
    StatementError,
    fingerprint,
    public_key_pem,
)
from benchmarks.lib.evidence import check_runs
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


# --- the offline check of a run's deposit ---------------------------------------------


def _package(tmp_path: Path, blobs: dict[str, bytes]) -> Path:
    path = tmp_path / "package.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for sha256, data in blobs.items():
            archive.writestr(f"blobs/{sha256}", data)
    return path


def _run_deposit(tmp_path: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The blobs and leaf record of a signed run with a telemetry artefact."""
    key = host_key_load_or_create(tmp_path / "key")
    files = {
        ("output", "a.json"): b"out",
        ("document", "environment.json"): b"env",
        ("document", "runner/telemetry"): b"telemetry",
    }
    document = run_statement(
        subjects=run_subjects(
            outputs={"a.json": _sha(b"out")},
            environment_sha256=_sha(b"env"),
            artefacts={"telemetry": _sha(b"telemetry")},
        ),
        run="r-1",
        attempt=1,
        campaign="c-1",
        scenario={},
        repetition=1,
        exit_code=0,
        stop_reason="exited",
        started="",
        ended="",
        host="agent@lab",
    )
    files[("document", "statement.json")] = run_statement_sign(document, key)
    files[("document", "host_key.pem")] = public_key_pem(key)
    record = {
        "kind": "run_output",
        "run": "r-1",
        "attempt": 1,
        "host": "h-1",
        "host_key_fingerprint": fingerprint(key),
        "blobs": [
            {"role": role, "path": path, "sha256": _sha(data), "size": len(data)}
            for (role, path), data in files.items()
        ],
    }
    return {_sha(d): d for d in files.values()}, record


def _checked(tmp_path: Path, blobs: dict[str, bytes], record: dict[str, Any]) -> Any:
    report = EvidenceReport(tmp_path)
    with zipfile.ZipFile(_package(tmp_path, blobs)) as archive:
        entry = Entry("run r-1", 3, b"", [], record)
        check_runs(PackageReader(archive, report), [entry], report)
    return report


def test_a_signed_run_with_its_telemetry_passes(tmp_path: Path) -> None:
    blobs, record = _run_deposit(tmp_path)

    report = _checked(tmp_path, blobs, record)

    assert report.ok, [c.message for c in report.failures]
    assert "1 runner artefacts" in report.checks[-1].message


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("a.json", "output a.json"),
        ("runner/telemetry", "runner artefact telemetry"),
        ("statement.json", "the statement"),
    ],
)
def test_a_flipped_byte_is_named_by_run_and_file(
    tmp_path: Path, path: str, named: str
) -> None:
    blobs, record = _run_deposit(tmp_path)
    sha = next(b["sha256"] for b in record["blobs"] if b["path"] == path)
    data = blobs[sha]
    blobs[sha] = bytes([data[0] ^ 0xFF]) + data[1:]

    report = _checked(tmp_path, blobs, record)

    messages = [f"{c.subject}: {c.message}" for c in report.failures]
    assert any(
        m.startswith("run r-1 (leaf 3): ") and f"{named} (blobs/{sha}) is altered" in m
        for m in messages
    ), messages


def test_a_statement_that_leaves_out_the_telemetry_is_named(tmp_path: Path) -> None:
    blobs, record = _run_deposit(tmp_path)
    extra = b"more telemetry"
    blobs[_sha(extra)] = extra
    record["blobs"].append(
        {"role": "document", "path": "runner/spans.jsonl", "sha256": _sha(extra),
         "size": len(extra)}
    )  # fmt: skip

    report = _checked(tmp_path, blobs, record)

    assert [c.message for c in report.failures] == [
        "statement.json: it does not name runner artefact 'spans.jsonl'"
    ]
