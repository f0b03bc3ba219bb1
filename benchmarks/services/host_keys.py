"""The lab hosts' signing keys and the runs' signed statements
(``benchmarks.lib.signing``, docs/runner-api.md "Host-signed results").

- ``host_key_offer``: the agent's ``hello`` names its Ed25519 public key. The
  first one is pinned on the host; the same one again changes nothing; another
  one is kept as *pending* and refused until the lab operator accepts it
  (``host_key_accept``, the pools page: one transaction, one audit row). Until
  then the host's statements verify only with the pinned key, so its runs are
  not accepted.
- ``run_statement_accept``: ``finish`` carries the run's DSSE envelope; the
  server verifies it with the pinned key and checks that it is this run's and
  names exactly the outputs, the environment capture and the runner artefacts
  the server received, before the run is accepted. The envelope is stored as a
  blob and deposited in escrow with the outputs (``results``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from django.db import transaction

from accounts.selectors import clock
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from artifacts.lib.signatures.statement import (
    StatementError,
    fingerprint,
    load_public_key,
    public_key_pem,
)
from artifacts.models import Blob
from artifacts.storage.blobs import blob_put
from benchmarks.lib.signing import (
    environment_bytes,
    run_statement_open,
    run_statement_problems,
    sha256_hex,
)
from benchmarks.models import LabHost, Run
from benchmarks.services.common import RunnerConflict, RunnerError

PINNED: Final = "pinned"
PENDING: Final = "pending"
MAX_PROBLEMS: Final = 5


def _normalised(pem: str) -> tuple[str, str]:
    """The key as canonical PEM text and its fingerprint; a 400 if it is not an
    Ed25519 public key."""
    try:
        key = load_public_key(pem.strip().encode("ascii", "replace"))
    except StatementError as error:
        raise RunnerError(
            f"signing_key: {error} Send the host's Ed25519 public key as PEM.",
            code="signing_key_invalid",
        ) from None
    return public_key_pem(key).decode("ascii"), fingerprint(key)


def host_key_offer(*, host: LabHost, pem: str) -> str:
    """Pin ``pem`` on ``host`` if it has no key yet; keep another key pending.
    ``"pinned"`` when the host's statements verify with it, ``"pending"`` when
    the lab operator must accept it first. Runs in the hello's transaction; a
    change is audited there."""
    text, print_ = _normalised(pem)
    host = LabHost.objects.select_for_update().select_related("pool").get(pk=host.pk)
    if host.signing_key == text:
        if host.pending_signing_key:  # the old key came back: nothing to accept
            host.pending_signing_key = host.pending_signing_key_fingerprint = ""
            host.pending_signing_key_at = None
            host.save(update_fields=_PENDING_FIELDS)
        return PINNED
    now = clock.now()
    if not host.signing_key:
        host.signing_key, host.signing_key_fingerprint = text, print_
        host.signing_key_pinned_at = now
        host.save(update_fields=_PINNED_FIELDS)
        _audit(host, None, "lab_host.key_pinned", {"fingerprint": print_})
        return PINNED
    if host.pending_signing_key != text:
        host.pending_signing_key, host.pending_signing_key_fingerprint = text, print_
        host.pending_signing_key_at = now
        host.save(update_fields=_PENDING_FIELDS)
        _audit(
            host,
            None,
            "lab_host.key_offered",
            {"fingerprint": print_, "pinned": host.signing_key_fingerprint},
        )
    return PENDING


_PINNED_FIELDS: Final = [
    "signing_key",
    "signing_key_fingerprint",
    "signing_key_pinned_at",
    "updated_at",
]
_PENDING_FIELDS: Final = [
    "pending_signing_key",
    "pending_signing_key_fingerprint",
    "pending_signing_key_at",
    "updated_at",
]


def _audit(host: LabHost, actor: Actor, action: str, data: dict[str, str]) -> None:
    audit_record(
        actor=actor,
        action=action,
        target=host,
        organisation=host.pool.lab_organisation,
        data={"pool": host.pool.name, "worker": host.worker_name, **data},
    )


@transaction.atomic
def host_key_accept(*, host: LabHost, fingerprint_shown: str, actor: Actor) -> LabHost:
    """The lab operator accepts the host's pending key (the one whose
    fingerprint the page showed): it is pinned, the old one no longer verifies
    the host's new statements (those it signed stay verified in escrow)."""
    host = LabHost.objects.select_for_update().select_related("pool").get(pk=host.pk)
    if not host.pending_signing_key:
        raise RunnerConflict(
            f"{host.worker_name} has no key waiting to be accepted.",
            code="no_pending_key",
        )
    if host.pending_signing_key_fingerprint != fingerprint_shown:
        raise RunnerConflict(
            f"{host.worker_name} offered another key meanwhile "
            f"({host.pending_signing_key_fingerprint}): check it and accept again.",
            code="pending_key_changed",
        )
    old = host.signing_key_fingerprint
    host.signing_key = host.pending_signing_key
    host.signing_key_fingerprint = host.pending_signing_key_fingerprint
    host.signing_key_pinned_at = clock.now()
    host.pending_signing_key = host.pending_signing_key_fingerprint = ""
    host.pending_signing_key_at = None
    host.save(update_fields=sorted({*_PINNED_FIELDS, *_PENDING_FIELDS}))
    _audit(
        host,
        actor,
        "lab_host.key_accepted",
        {"fingerprint": host.signing_key_fingerprint, "replaced": old},
    )
    return host


def environment_canonical(environment: Mapping[str, object]) -> str:
    """The environment capture as the statement names it (canonical JSON), kept
    on the run as text so that it is deposited byte for byte."""
    return environment_bytes(environment).decode("utf-8")


def run_statement_accept(
    *,
    run: Run,
    attempt: int,
    envelope: str | None,
    outputs: Mapping[str, str],
    exit_code: object = None,
    stop_reason: str = "",
    artefacts: Mapping[str, str] | None = None,
    checks: list[Any] | None = None,
) -> Blob:
    """Verify the run's statement before the run is accepted (the caller holds
    the run's lock): signed by the host's pinned key, about this run and
    attempt, naming exactly ``outputs`` (path → SHA-256 of what was uploaded),
    the environment stored at ``running`` and ``artefacts``, the run's seed and
    the anti-gaming ``checks`` the finish sends. The envelope is
    stored and recorded on the run; a ``RunnerError`` naming the problem
    otherwise (the run stays as it was)."""
    host = run.host
    if host is None or not host.signing_key:
        raise RunnerError(
            "This host has no pinned signing key: restart its agent (it sends its "
            "key at hello) before it finishes runs.",
            code="host_key_missing",
        )
    if not envelope:
        raise RunnerError(
            "Send the run's statement signed with the host key.",
            code="statement_missing",
        )
    data = envelope.encode("utf-8")
    try:
        document = run_statement_open(data, host.signing_key.encode("ascii"))
    except StatementError as error:
        pending = (
            " The host offered another key, which the lab operator has not accepted."
            if host.pending_signing_key
            else ""
        )
        raise RunnerError(
            f"The run's statement is refused: {error}{pending}",
            code="statement_invalid",
        ) from None
    canonical = run.environment_canonical.encode("utf-8")
    environment = sha256_hex(canonical) if canonical else None
    problems = run_statement_problems(
        document,
        run=str(run.public_id),
        attempt=attempt,
        outputs=outputs,
        environment_sha256=environment,
        artefacts=artefacts,
    )
    predicate = document.get("predicate") or {}
    said = predicate.get("exit") if isinstance(predicate, dict) else None
    if said != {"code": exit_code, "stop_reason": stop_reason}:
        problems.append(
            f"it says the harness ended {said!r}, the finish says "
            f"{{'code': {exit_code!r}, 'stop_reason': {stop_reason!r}}}"
        )
    problems += _predicate_problems(predicate, run, checks or [])
    if problems:
        raise RunnerError(
            "The run's statement is not this run's: "
            + "; ".join(problems[:MAX_PROBLEMS])
            + ".",
            code="statement_mismatch",
        )
    blob = blob_put(data, sha256_hex(data), len(data))
    Run.objects.filter(pk=run.pk).update(
        statement_blob=blob, signing_key_fingerprint=host.signing_key_fingerprint
    )
    run.statement_blob, run.signing_key_fingerprint = (
        blob,
        host.signing_key_fingerprint,
    )
    return blob


def _predicate_problems(predicate: Any, run: Run, checks: list[Any]) -> list[str]:
    """The seed and the checks as the statement names them, against the run's
    seed and the checks the finish sends."""
    said = predicate if isinstance(predicate, dict) else {}
    problems = []
    if run.seed is not None and said.get("seed") != run.seed:
        problems.append(
            f"it says the harness had seed {said.get('seed')!r}, the lab issued "
            f"{run.seed}"
        )
    if (said.get("checks") or []) != checks:
        problems.append("its checks are not the ones the finish sends")
    return problems
