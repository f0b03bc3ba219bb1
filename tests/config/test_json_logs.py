"""JSON log lines (config/logs.py): one object a line with the request's id, in a
real gunicorn (its access lines too) and a real Celery worker (the task's id)."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery

from accounts.lib.context import request_id_var
from config.logs import JsonFormatter, gunicorn_logconfig
from tests.integration.conftest import REDIS_URL

PROJECT_DIR = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_TIMEOUT = 60.0
Line = dict[str, Any]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(var_dir: Path, **extra: str) -> dict[str, str]:
    """Production's defaults (DEBUG off, not embedded): JSON unless told."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DJANGO_", "REPROGATE_", "CELERY_", "DATABASE_URL", "GUNICORN_")
        )
    }
    env.update(
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        DJANGO_SECURE_SSL_REDIRECT="False",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        REPROGATE_VAR_DIR=str(var_dir),
        **extra,
    )
    return env


def json_lines(path: Path) -> list[Line]:
    """The file's lines that are JSON objects (a Python warning is not)."""
    found = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if text.startswith("{"):
            found.append(json.loads(text))
    return found


def wait_for(
    path: Path, match: Callable[[Line], bool], process: subprocess.Popen[bytes]
) -> Line:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for line in json_lines(path):
            if match(line):
                return line
        if process.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"no such line in {path.name}:\n{path.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- the formatter in this process -------------------------------------------------


def _format_into(stream: io.StringIO) -> logging.Logger:
    logger = logging.getLogger(f"tests.json_logs.{uuid.uuid4().hex}")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.propagate = False
    return logger


def test_an_exception_is_one_json_line_with_its_traceback() -> None:
    stream = io.StringIO()
    logger = _format_into(stream)
    token = request_id_var.set("req-0123456789")
    try:
        try:
            1 / 0  # noqa: B018
        except ZeroDivisionError:
            logger.exception("sum failed\nfor bundle %s", 'ab"c')
    finally:
        request_id_var.reset(token)

    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["level"] == "ERROR"
    assert line["message"] == 'sum failed\nfor bundle ab"c'
    assert line["request_id"] == "req-0123456789"
    assert line["exception"].startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: division by zero" in line["exception"]
    assert line["time"].endswith("Z")  # UTC
    assert "task_id" not in line


def test_a_line_outside_any_request_has_an_empty_request_id() -> None:
    stream = io.StringIO()
    _format_into(stream).warning("disk %d%% full", 91)

    line = json.loads(stream.getvalue())
    assert line == {
        "time": line["time"],
        "level": "WARNING",
        "logger": line["logger"],
        "message": "disk 91% full",
        "request_id": "",
    }


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(ValueError, match="REPROGATE_LOG_FORMAT"):
        gunicorn_logconfig("xml")


# --- gunicorn ----------------------------------------------------------------------
# The requests are 404s under /api/ (JSON): an HTML page would need
# collectstatic's manifest, which this checkout has not made.


@dataclass(frozen=True)
class Server:
    url: str
    stdout: Path  # access lines
    stderr: Path  # the app's and gunicorn's own lines
    process: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("gunicorn")
    port = _free_port()
    env = _env(folder / "var", GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS="1")
    stdout, stderr = folder / "stdout.log", folder / "stderr.log"
    command = [str(BIN / "gunicorn"), "config.wsgi:application"]
    command += ["-c", "deploy/gunicorn.conf.py"]
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            command, cwd=PROJECT_DIR, env=env, stdout=out, stderr=err
        )
    server = Server(f"http://127.0.0.1:{port}", stdout, stderr, process)
    try:
        wait_for(stderr, lambda line: "Booting worker" in line["message"], process)
        yield server
    finally:
        _stop(process)


def _get(server: Server, path: str, **headers: str) -> tuple[int, str]:
    """GET on the test's own server (an http:// URL, never a file: one)."""
    request = urllib.request.Request(server.url + path, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.headers.get("X-Request-ID", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("X-Request-ID", "")


def test_a_requests_log_line_carries_its_request_id(gunicorn: Server) -> None:
    request_id = f"e-{uuid.uuid4().hex}"

    status, echoed = _get(
        gunicorn, "/api/v1/no-such-endpoint/", **{"X-Request-ID": request_id}
    )

    assert (status, echoed) == (404, request_id)
    line = wait_for(
        gunicorn.stderr,
        lambda line: line.get("request_id") == request_id,
        gunicorn.process,
    )
    assert line["logger"] == "django.request"
    assert line["level"] == "WARNING"
    assert line["message"] == "Not Found: /api/v1/no-such-endpoint/"
    assert line["status"] == 404


def test_an_access_line_is_json_with_the_id_the_response_carried(
    gunicorn: Server,
) -> None:
    status, request_id = _get(
        gunicorn, "/api/v1/no-such-endpoint/?q=1", **{"User-Agent": 'a"b'}
    )

    assert status == 404
    assert len(request_id) == 32  # made by the app: none was sent
    line = wait_for(
        gunicorn.stdout,
        lambda line: line.get("request_id") == request_id,
        gunicorn.process,
    )
    assert line["logger"] == "gunicorn.access"
    assert (line["method"], line["path"], line["query"]) == (
        "GET",
        "/api/v1/no-such-endpoint/",
        "q=1",
    )
    assert line["status"] == 404
    assert isinstance(line["duration_ms"], int)
    assert line["remote"] == "127.0.0.1"
    assert line["user_agent"] == 'a"b'  # gunicorn's escaping undone


def test_every_line_gunicorn_and_the_app_write_is_json(gunicorn: Server) -> None:
    _get(gunicorn, "/healthz")
    lines = gunicorn.stdout.read_text(encoding="utf-8").splitlines()

    assert lines
    assert all(json.loads(text)["logger"] == "gunicorn.access" for text in lines)
    errors = [
        json.loads(text)  # Python's warnings too (py.warnings)
        for text in gunicorn.stderr.read_text(encoding="utf-8").splitlines()
    ]
    assert any("Listening at" in line["message"] for line in errors)


# --- a Celery worker ---------------------------------------------------------------


@dataclass(frozen=True)
class Worker:
    queue: str
    log: Path
    process: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis is not reachable at {REDIS_URL}: {exc}")
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")
    folder = tmp_path_factory.mktemp("worker")
    queue = f"logs-{uuid.uuid4().hex[:12]}"
    env = _env(folder / "var", CELERY_BROKER_URL=REDIS_URL)
    log = folder / "worker.log"
    command = [str(BIN / "celery"), "-A", "config", "worker", "--pool", "solo"]
    command += ["-Q", queue, "-n", f"{queue}@%h", "--without-gossip"]
    command += ["--without-mingle", "--without-heartbeat"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=PROJECT_DIR, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    running = Worker(queue, log, process)
    try:
        wait_for(log, lambda line: line["message"].endswith(" ready."), process)
        yield running
    finally:
        _stop(process)
        broker = redis.Redis.from_url(REDIS_URL)
        broker.delete(queue, f"_kombu.binding.{queue}")
        broker.close()


def test_a_tasks_log_line_carries_its_task_id(worker: Worker) -> None:
    sender = Celery("probe", broker=REDIS_URL, set_as_current=False)
    try:
        sent = sender.send_task(
            "accounts.worker_ping", args=["nonce"], queue=worker.queue
        )
    finally:
        sender.close()

    done = wait_for(
        worker.log,
        lambda line: line.get("task_id") == sent.id and "succeeded" in line["message"],
        worker.process,
    )
    assert done["task_name"] == "accounts.worker_ping"
    assert done["logger"] == "celery.app.trace"
    received = wait_for(
        worker.log,
        lambda line: line.get("task_id") == sent.id and "received" in line["message"],
        worker.process,
    )
    assert received["task_name"] == "accounts.worker_ping"


# --- the setting -------------------------------------------------------------------


def _started(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A fresh process's log format (settings are read once per process)."""
    code = (
        "import django\ndjango.setup()\nfrom django.conf import settings\n"
        "print(settings.LOGGING['handlers']['console']['formatter'])"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, "json"),  # production
        ({"REPROGATE_EMBEDDED": "True"}, "plain"),
        ({"REPROGATE_EMBEDDED": "True", "REPROGATE_LOG_FORMAT": "json"}, "json"),
    ],
)
def test_the_log_format_by_default_and_by_choice(
    tmp_path: Path, extra: dict[str, str], expected: str
) -> None:
    result = _started(_env(tmp_path / "var", **extra))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_an_unknown_log_format_stops_start_up_naming_it(tmp_path: Path) -> None:
    result = _started(_env(tmp_path / "var", REPROGATE_LOG_FORMAT="xml"))

    assert result.returncode != 0
    assert "REPROGATE_LOG_FORMAT='xml' is not one of: json, plain" in result.stderr
