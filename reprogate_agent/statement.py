"""The run's signed statement, made by the agent just before ``finish``
(``benchmarks.lib.signing``): the outputs the server accepted, the environment
capture sent at ``running``, the runner artefacts uploaded beside them, and what
the claim, the ``running`` answer and the harness said about the run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchmarks.lib.signing import (
    environment_bytes,
    run_statement,
    run_statement_sign,
    run_subjects,
    sha256_hex,
)


def utc_now() -> str:
    """``2026-12-05T04:20:00.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def signed_statement(
    key: Ed25519PrivateKey,
    *,
    run: Mapping[str, Any],
    run_id: int,
    attempt: int,
    worker_name: str,
    environment: Mapping[str, Any],
    running_answer: Mapping[str, Any],
    result: Mapping[str, Any],
    outputs: Mapping[str, str],
    started: str,
    ended: str,
    artefacts: Mapping[str, str] | None = None,
    actions: list[Any] | None = None,
) -> str:
    """The DSSE envelope of the run's statement, as text for ``finish``.
    ``run`` is the claim's answer; ``outputs`` path → SHA-256 of the uploaded
    outputs; ``artefacts`` name → SHA-256 of the uploaded runner artefacts;
    ``actions`` what the scenario's driver did (default: the scenario's own
    ``actions``)."""
    drift = running_answer.get("drift")
    policy = run.get("policy")
    if actions is None:
        actions = (run.get("scenario") or {}).get("actions")
    document = run_statement(
        subjects=run_subjects(
            outputs=outputs,
            environment_sha256=sha256_hex(environment_bytes(environment)),
            artefacts=artefacts,
        ),
        run=str(run.get("public_id") or run_id),
        attempt=attempt,
        campaign=str(run.get("campaign") or ""),
        scenario=run.get("scenario") or {},
        repetition=_int(run.get("repetition")),
        exit_code=_int(result.get("exit_code")),
        stop_reason=str(result.get("stop_reason") or ""),
        started=started,
        ended=ended,
        host=worker_name,
        isolation=result.get("isolation") or {},
        drift=drift if isinstance(drift, list) else [],
        policy=policy if isinstance(policy, dict) else None,
        actions=actions if isinstance(actions, list) else [],
        seed=_int(run.get("seed")),
    )
    return run_statement_sign(document, key).decode("utf-8")
