"""Playing the agent's part against the runner API with DRF's test client."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rest_framework.test import APIClient

from artifacts.lib.signatures.statement import public_key_pem
from benchmarks.lib.signing import (
    environment_bytes,
    run_statement,
    run_statement_sign,
    run_subjects,
)
from benchmarks.models import Run

BASE = "/api/v1/runner/"
WORKER = "agent@lab-07"
HOST_KEY = Ed25519PrivateKey.generate()  # the agent's signing key in these tests
ENVIRONMENT = {"os": {"name": "Ubuntu 24.04"}}  # what ``running`` sends


def call(client: APIClient, name: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(BASE + name, body or {}, format="json")


def hello(client: APIClient, worker_name: str = WORKER, **extra: Any) -> Any:
    body = {
        "worker_name": worker_name,
        "hostname": "lab-07",
        "pid": 4242,
        "environment": {"cpu": {"threads": 4}},
        "sandbox": {"bwrap": False},
        "signing_key": public_key_pem(HOST_KEY).decode("ascii"),
        **extra,
    }
    return call(client, "hello", body)


def claim(client: APIClient, run: Run, attempt: int = 1) -> Any:
    body = {"attempt": attempt, "worker_name": WORKER}
    return call(client, f"runs/{run.pk}/claim", body)


def running(client: APIClient, run: Run, attempt: int = 1, **extra: Any) -> Any:
    body = {
        "attempt": attempt,
        "environment": ENVIRONMENT,
        "declared_environment": {},
        "cache_dropped": False,
        **extra,
    }
    return call(client, f"runs/{run.pk}/running", body)


def put_output(
    client: APIClient, run: Run, path: str, data: bytes, attempt: int = 1
) -> Any:
    return client.put(
        f"{BASE}runs/{run.pk}/outputs/{path}?attempt={attempt}",
        data,
        content_type="application/octet-stream",
    )


def result(**fields: Any) -> dict[str, Any]:
    return {
        "exit_code": 0,
        "stop_reason": "exited",
        "isolation": {"network": "none"},
        "duration_s": 1.5,
        "output_truncated": False,
        "log_tail": "::progress:: 1",
        "progress": 1.0,
        "message": "",
        **fields,
    }


def signed_statement(
    run: Run,
    *,
    outputs: Mapping[str, bytes] | None = None,
    artefacts: Mapping[str, bytes] | None = None,
    environment: Mapping[str, Any] | None = None,
    attempt: int = 1,
    key: Ed25519PrivateKey = HOST_KEY,
    exit_code: int | None = 0,
    stop_reason: str = "exited",
    run_public_id: str | None = None,
    predicate: Mapping[str, Any] | None = None,
) -> str:
    """The DSSE envelope the agent sends with ``finish``: its outputs' and
    runner artefacts' digests and the environment it sent at ``running``, the
    run's seed, signed with ``key``; ``predicate`` sets ``seed`` or ``checks``."""
    captured = ENVIRONMENT if environment is None else environment
    document = run_statement(
        subjects=run_subjects(
            outputs={
                p: hashlib.sha256(d).hexdigest() for p, d in (outputs or {}).items()
            },
            environment_sha256=hashlib.sha256(environment_bytes(captured)).hexdigest(),
            artefacts={
                n: hashlib.sha256(d).hexdigest() for n, d in (artefacts or {}).items()
            },
        ),
        run=run_public_id or str(run.public_id),
        attempt=attempt,
        campaign=str(run.campaign.public_id),
        scenario=run.scenario,
        repetition=run.repetition,
        exit_code=exit_code,
        stop_reason=stop_reason,
        started="2026-12-05T04:00:00.000000Z",
        ended="2026-12-05T04:00:01.500000Z",
        host=WORKER,
        isolation={"network": "none"},
        **{"seed": run.seed, **(predicate or {})},
    )
    return run_statement_sign(document, key).decode("utf-8")


def finish(
    client: APIClient,
    run: Run,
    attempt: int = 1,
    *,
    outputs: Mapping[str, bytes] | None = None,
    artefacts: Mapping[str, bytes] | None = None,
    statement: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> Any:
    """Finish as the agent does, with a statement naming ``outputs`` and
    ``artefacts`` (the files uploaded) signed with the host key, unless
    ``statement`` is given."""
    if statement is None:
        statement = signed_statement(
            run,
            outputs=outputs,
            artefacts=artefacts,
            attempt=attempt,
            exit_code=fields.get("exit_code", 0),
            stop_reason=fields.get("stop_reason", "exited"),
            predicate={"checks": checks} if checks is not None else None,
        )
    body: dict[str, Any] = {
        "attempt": attempt,
        "result": result(**fields),
        "warnings": [],
        "statement": statement,
    }
    if checks is not None:
        body["checks"] = checks
    return call(client, f"runs/{run.pk}/finish", body)


def started(client: APIClient, run: Run) -> None:
    """Hello, claim and running: the run's harness runs on the agent."""
    assert hello(client).status_code == 200
    assert claim(client, run).status_code == 200
    response = running(client, run)
    assert response.status_code == 200, response.json()
