"""Playing the agent's part against the runner API with DRF's test client."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from benchmarks.models import Run

BASE = "/api/v1/runner/"
WORKER = "agent@lab-07"


def call(client: APIClient, name: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(BASE + name, body or {}, format="json")


def hello(client: APIClient, worker_name: str = WORKER, **extra: Any) -> Any:
    body = {
        "worker_name": worker_name,
        "hostname": "lab-07",
        "pid": 4242,
        "environment": {"cpu": {"threads": 4}},
        "sandbox": {"bwrap": False},
        **extra,
    }
    return call(client, "hello", body)


def claim(client: APIClient, run: Run, attempt: int = 1) -> Any:
    body = {"attempt": attempt, "worker_name": WORKER}
    return call(client, f"runs/{run.pk}/claim", body)


def running(client: APIClient, run: Run, attempt: int = 1, **extra: Any) -> Any:
    body = {
        "attempt": attempt,
        "environment": {"os": {"name": "Ubuntu 24.04"}},
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


def finish(client: APIClient, run: Run, attempt: int = 1, **fields: Any) -> Any:
    body = {"attempt": attempt, "result": result(**fields), "warnings": []}
    return call(client, f"runs/{run.pk}/finish", body)


def started(client: APIClient, run: Run) -> None:
    """Hello, claim and running: the run's harness runs on the agent."""
    assert hello(client).status_code == 200
    assert claim(client, run).status_code == 200
    response = running(client, run)
    assert response.status_code == 200, response.json()
