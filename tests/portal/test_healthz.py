"""GET /healthz: database, broker and storage probes for load balancers and runners."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from config.celery import app as celery_app
from portal import health

pytestmark = pytest.mark.django_db

PROBE_TIMEOUT = 2.0  # portal.health.check_broker: ensure_connection(timeout=2)


@pytest.fixture(autouse=True)
def embedded_broker(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The embedded default broker (a SQLite file) and var dir, in tmp."""
    settings.VAR_DIR = tmp_path / "var"
    settings.MEDIA_ROOT = tmp_path / "media"
    database = tmp_path / "var" / "broker" / "broker.sqlite3"
    monkeypatch.setattr(celery_app.conf, "broker_url", f"sqla+sqlite:///{database}")
    return database


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections (kernel backlog) and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def test_healthz_is_ok_when_every_probe_passes(client: Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "broker": True,
        "storage": True,
        "disk": True,
        "processes": True,
    }
    assert body["checks"]["broker"]["backend"] == "sqlite"
    assert body["checks"]["disk"]["free_mib"] >= 100


def test_healthz_names_the_disk_when_too_little_space_is_free(
    client: Client, settings: Any
) -> None:
    Path(settings.VAR_DIR).mkdir(parents=True)
    settings.REPROGATE_MIN_FREE_DISK_MB = 1024**3  # a petabyte

    response = client.get("/healthz")

    assert response.status_code == 503
    disk = response.json()["checks"]["disk"]
    assert (disk["ok"], disk["min_free_mib"]) == (False, 1024**3)
    assert "error" not in disk  # paths are for the log, not for anonymous callers
    assert response.json()["checks"]["database"]["ok"] is True
    error = health.check_disk()["error"]
    assert f"MiB free under {settings.VAR_DIR}" in str(error)
    assert str(error).startswith("disk full:")


def test_the_disk_check_passes_a_folder_it_may_not_write_to(settings: Any) -> None:
    settings.VAR_DIR = Path("/proc/self")  # no file can be made there, even by root
    settings.REPROGATE_MIN_FREE_DISK_MB = 0  # /proc has no free space to speak of

    assert health.check_disk() == {"ok": True, "free_mib": 0, "min_free_mib": 0}


def test_the_disk_probe_leaves_no_file(settings: Any) -> None:
    var_dir = Path(settings.VAR_DIR)
    var_dir.mkdir(parents=True)

    assert health.check_disk()["ok"] is True
    assert list(var_dir.iterdir()) == []


def test_healthz_needs_no_login(client: Client) -> None:
    response = client.get("/healthz", follow=False)

    assert response.status_code == 200
    assert "Location" not in response


def test_healthz_is_not_redirected_to_https(client: Client, settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True

    response = client.get("/healthz")

    assert response.status_code == 200


def test_healthz_responses_are_not_cacheable(client: Client) -> None:
    response = client.get("/healthz")

    assert "no-store" in response["Cache-Control"]
    assert "max-age=0" in response["Cache-Control"]


def test_healthz_refuses_post(client: Client) -> None:
    response = client.post("/healthz")

    assert response.status_code == 405


def test_healthz_reports_the_embedded_broker_as_sqlite(client: Client) -> None:
    response = client.get("/healthz")

    assert response.json()["checks"]["broker"] == {
        "ok": True,
        "backend": "sqlite",
        "ms": response.json()["checks"]["broker"]["ms"],
    }


def test_healthz_fails_when_the_broker_database_is_not_a_database(
    client: Client, embedded_broker: Path
) -> None:
    embedded_broker.parent.mkdir(parents=True)
    embedded_broker.write_bytes(b"this is not a SQLite database, not even close!" * 4)

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["status"] == "fail"
    assert response.json()["checks"]["broker"]["ok"] is False


def test_check_broker_names_a_folder_it_cannot_write(
    embedded_broker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health.os, "access", lambda path, mode: False)

    with pytest.raises(RuntimeError, match=r"broker folder .*broker is not writable"):
        health.check_broker()


def test_healthz_fails_fast_when_the_broker_refuses_connections(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:1/0")

    started = time.monotonic()
    response = client.get("/healthz")
    elapsed = time.monotonic() - started

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True
    assert elapsed < PROBE_TIMEOUT + 1.0


@pytest.mark.timeout(20)
def test_healthz_fails_fast_when_the_broker_never_answers(
    client: Client, monkeypatch: pytest.MonkeyPatch, silent_server: int
) -> None:
    monkeypatch.setattr(
        celery_app.conf, "broker_url", f"redis://127.0.0.1:{silent_server}/0"
    )

    started = time.monotonic()
    response = client.get("/healthz")
    elapsed = time.monotonic() - started

    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["ok"] is False
    assert elapsed < PROBE_TIMEOUT + 1.0


def _write_status(settings: Any, supervisor_pid: int, worker_state: str) -> None:
    worker: dict[str, object] = {
        "state": worker_state,
        "pid": 4242,
        "restarts": 3,
        "last_exit": {"code": 1, "description": "exited with 1", "at": "now"},
    }
    if worker_state == "restarting":
        worker["restart_in_s"] = 4.0
    status = {
        "supervisor_pid": supervisor_pid,
        "programs": {
            "web": {"state": "running", "pid": 4241, "restarts": 0, "last_exit": None},
            "worker": worker,
        },
    }
    path = Path(settings.VAR_DIR) / "supervisor.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(status), encoding="utf-8")


def test_healthz_reports_no_processes_without_a_supervisor(client: Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["checks"]["processes"]["backend"] == "none"


def test_healthz_shows_a_worker_being_restarted_and_still_answers(
    client: Client, settings: Any
) -> None:
    _write_status(settings, os.getpid(), "restarting")

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    processes = body["checks"]["processes"]
    assert processes["ok"] is False
    assert processes["backend"] == "supervisor"
    assert processes["programs"]["worker"] == {
        "state": "restarting",
        "pid": 4242,
        "restarts": 3,
        "last_exit": {"code": 1, "description": "exited with 1", "at": "now"},
        "restart_in_s": 4.0,
    }
    assert processes["programs"]["web"]["state"] == "running"
    assert body["checks"]["database"]["ok"] is True


def test_healthz_is_ok_when_every_supervised_process_runs(
    client: Client, settings: Any
) -> None:
    _write_status(settings, os.getpid(), "running")

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["checks"]["processes"]["programs"]["worker"]["restarts"] == 3


def test_healthz_ignores_the_status_of_a_supervisor_that_is_gone(
    client: Client, settings: Any
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    _write_status(settings, gone.pid, "restarting")

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["checks"]["processes"] == {
        "ok": True,
        "backend": "none",
        "ms": response.json()["checks"]["processes"]["ms"],
    }


def test_check_processes_fails_on_an_unreadable_status_file(settings: Any) -> None:
    path = Path(settings.VAR_DIR) / "supervisor.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")

    with pytest.raises(RuntimeError, match=r"supervisor.json is not readable"):
        health.check_processes()
