"""Host-signed run results, with no Django (docs/runner-api.md, "Host-signed
results"): the lab host's Ed25519 key, made once in the agent's state directory
(file mode 0600), and the in-toto Statement v1 of each run with the
``https://reprogate.dev/lab-run/v1`` predicate, in a DSSE envelope signed with
that key. The agent signs (``reprogate_agent``), the server checks the envelope
against the host's pinned key before it accepts the run, and
``reprogate evidence verify`` checks it again offline
(``benchmarks.lib.evidence``). The encoding is the shared
``artifacts.lib.signatures.statement``'s.

Subjects, each by SHA-256: ``outputs/<path>`` for every output file the host
uploaded, ``environment.json`` (the canonical JSON of the environment capture
the host sent as the harness started) and ``runner/<name>`` for each runner
artefact (the telemetry blob, the spans file) the host uploads.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures.statement import (
    StatementError,
    descriptor_digests,
    envelope_open,
    envelope_sign,
    statement,
)

PREDICATE_TYPE: Final = "https://reprogate.dev/lab-run/v1"
HOST_KEY_FILE: Final = "host_key.pem"
OUTPUT_PREFIX: Final = "outputs/"
ENVIRONMENT: Final = "environment.json"
ARTEFACT_PREFIX: Final = "runner/"
MAX_KEY_FILE: Final = 16 * 1024
MAX_STATEMENT_BYTES: Final = 16 * 1024 * 1024

__all__ = [
    "PREDICATE_TYPE",
    "HostKeyError",
    "environment_bytes",
    "host_key_load_or_create",
    "run_statement",
    "run_statement_open",
    "run_statement_problems",
    "run_statement_sign",
    "run_subjects",
    "sha256_hex",
]


class HostKeyError(Exception):
    """The host key file cannot be used (the message names the file and why)."""


# --- the host key -------------------------------------------------------------------


def host_key_load_or_create(state_dir: Path) -> Ed25519PrivateKey:
    """The host's Ed25519 key in ``state_dir/host_key.pem``, made now (mode
    0600, never overwritten) if there is none. A key file that is not a regular
    file of its own, that others may read, or that is not an unencrypted PKCS#8
    Ed25519 key is refused rather than replaced: a new key would have to be
    accepted by the lab operator again."""
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise HostKeyError(
            f"{state_dir}: cannot make the state folder: {error}"
        ) from error
    path = state_dir / HOST_KEY_FILE
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    if path.exists() or path.is_symlink():
        return _load(path)
    # Written whole under a name of its own, then linked into place: two agents
    # starting at once never read a half-written key, and one never replaces one.
    temporary = state_dir / f".{HOST_KEY_FILE}.{os.getpid()}.{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(temporary, flags, 0o600), "wb") as sink:
            sink.write(pem)
            sink.flush()
            os.fsync(sink.fileno())
        os.link(temporary, path)
    except FileExistsError:
        return _load(path)
    except OSError as error:
        raise HostKeyError(f"{path}: cannot create the host key: {error}") from error
    finally:
        temporary.unlink(missing_ok=True)
    return key


def _load(path: Path) -> Ed25519PrivateKey:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise HostKeyError(f"{path}: cannot open the host key: {error}") from error
    with os.fdopen(descriptor, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise HostKeyError(f"{path}: the host key is not a regular file.")
        if info.st_mode & 0o077:
            raise HostKeyError(
                f"{path}: the host key is readable by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); make it 0600."
            )
        if info.st_uid != os.geteuid():
            raise HostKeyError(f"{path}: the host key belongs to another user.")
        data = source.read(MAX_KEY_FILE + 1)
    if len(data) > MAX_KEY_FILE:
        raise HostKeyError(f"{path}: too large for an Ed25519 key.")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise HostKeyError(
            f"{path}: not an unencrypted PEM private key ({error})."
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise HostKeyError(f"{path}: not an Ed25519 key.")
    return key


# --- the statement ------------------------------------------------------------------


def environment_bytes(environment: Mapping[str, Any]) -> bytes:
    """The environment capture as the statement's ``environment.json`` subject:
    its canonical JSON."""
    return canonical_json(dict(environment))


def run_subjects(
    *,
    outputs: Mapping[str, str],
    environment_sha256: str | None,
    artefacts: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """The (name, SHA-256) subjects of a run: every output by its path, the
    environment capture, and each runner artefact (``{name: sha256}``, e.g.
    ``{"telemetry": …, "spans.jsonl": …}``), sorted by name."""
    subjects = [(OUTPUT_PREFIX + path, sha) for path, sha in outputs.items()]
    if environment_sha256:
        subjects.append((ENVIRONMENT, environment_sha256))
    subjects += [(ARTEFACT_PREFIX + n, sha) for n, sha in (artefacts or {}).items()]
    return sorted(subjects)


def run_statement(
    *,
    subjects: list[tuple[str, str]],
    run: str,
    attempt: int,
    campaign: str,
    scenario: Mapping[str, Any],
    repetition: int | None,
    exit_code: int | None,
    stop_reason: str,
    started: str,
    ended: str,
    host: str,
    isolation: Mapping[str, Any] | None = None,
    drift: list[Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    actions: list[Any] | None = None,
    seed: int | None = None,
    checks: list[Any] | None = None,
) -> dict[str, Any]:
    """The run's in-toto Statement v1 (lab-run predicate). A run without an
    output still has its environment subject; ``ValueError`` for none at all.
    ``checks`` (the anti-gaming checks, ``benchmarks.lib.lab.checks``) are in
    the predicate when given."""
    predicate = {
        "run": run,
        "attempt": attempt,
        "campaign": campaign,
        "scenario": dict(scenario),
        "repetition": repetition,
        "host": host,
        "policy": dict(policy) if policy is not None else None,
        "isolation": dict(isolation or {}),
        "drift": list(drift or []),
        "actions": list(actions or []),
        "seed": seed,
        "exit": {"code": exit_code, "stop_reason": stop_reason},
        "started": started,
        "ended": ended,
    }
    if checks is not None:
        predicate["checks"] = list(checks)
    return statement(
        subjects=subjects, predicate_type=PREDICATE_TYPE, predicate=predicate
    )


def run_statement_sign(document: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The DSSE envelope (canonical JSON bytes) of the run's statement."""
    return envelope_sign(document, key)


def run_statement_open(
    envelope: bytes, public_key: bytes | Ed25519PublicKey
) -> dict[str, Any]:
    """The statement once a signature by the host key verifies and it is a
    lab-run Statement v1; ``StatementError`` naming the problem otherwise."""
    if len(envelope) > MAX_STATEMENT_BYTES:
        raise StatementError(f"The statement exceeds {MAX_STATEMENT_BYTES} bytes.")
    return envelope_open(
        envelope, public_key, predicate_type=PREDICATE_TYPE, what="host key"
    )


def _differences(
    kind: str, signed: Mapping[str, str], held: Mapping[str, str]
) -> list[str]:
    problems = []
    for name in sorted(set(signed) | set(held)):
        if name not in held:
            problems.append(f"it names {kind} {name!r}, which the server does not hold")
        elif name not in signed:
            problems.append(f"it does not name {kind} {name!r}")
        elif signed[name] != held[name]:
            problems.append(
                f"its digest of {kind} {name!r} is {signed[name][:16]}…, "
                f"not the {held[name][:16]}… received"
            )
    return problems


def run_statement_problems(
    document: Mapping[str, Any],
    *,
    run: str,
    attempt: int | None,
    outputs: Mapping[str, str],
    environment_sha256: str | None,
    artefacts: Mapping[str, str] | None = None,
) -> list[str]:
    """How a verified statement disagrees with the run the server (or an
    evidence package) holds: another run or attempt, an output, the environment
    or a runner artefact it names differently or not at all. Empty: it agrees."""
    problems = []
    predicate = document.get("predicate")
    predicate = predicate if isinstance(predicate, dict) else {}
    if predicate.get("run") != run:
        problems.append(f"it is the statement of run {predicate.get('run')!r}")
    if attempt is not None and predicate.get("attempt") != attempt:
        problems.append(f"it is the statement of attempt {predicate.get('attempt')!r}")
    subjects = descriptor_digests(document.get("subject"))
    groups: dict[str, dict[str, str]] = {
        "output": {},
        "environment": {},
        "artefact": {},
    }
    for name, digest in subjects.items():
        if name.startswith(OUTPUT_PREFIX):
            groups["output"][name[len(OUTPUT_PREFIX) :]] = digest
        elif name.startswith(ARTEFACT_PREFIX):
            groups["artefact"][name[len(ARTEFACT_PREFIX) :]] = digest
        elif name == ENVIRONMENT:
            groups["environment"][ENVIRONMENT] = digest
        else:
            problems.append(f"it names an unknown subject {name[:80]!r}")
    problems += _differences("output", groups["output"], outputs)
    held_env = {ENVIRONMENT: environment_sha256} if environment_sha256 else {}
    problems += _differences("the environment", groups["environment"], held_env)
    problems += _differences("runner artefact", groups["artefact"], artefacts or {})
    return problems


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
