"""A real worker process consumes tasks from Redis, including a lab pool's queue."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from celery import Celery

from benchmarks.lib.queues import pool_queue
from tests.integration.conftest import REDIS_URL

pytestmark = pytest.mark.integration

PROJECT_DIR = Path(__file__).resolve().parents[2]
CELERY_BIN = Path(sys.executable).with_name("celery")
READY_TIMEOUT = 60.0
RESULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Worker:
    process: subprocess.Popen[bytes]
    queue: str
    pool_queue: str
    log: Path


def _wait_until_ready(worker: Worker) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        log = worker.log.read_text(encoding="utf-8", errors="replace")
        if " ready." in log:
            return
        if worker.process.poll() is not None:
            pytest.fail(f"the worker exited ({worker.process.returncode}):\n{log}")
        time.sleep(0.2)
    pytest.fail(f"the worker was not ready after {READY_TIMEOUT}s:\n{log}")


def _logged(worker: Worker, text: str, timeout: float = 5.0) -> bool:
    """Whether the worker logs ``text`` within ``timeout`` (it logs after storing)."""
    deadline = time.monotonic() + timeout
    while text not in worker.log.read_text(encoding="utf-8", errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _forget_queues(*queues: str) -> None:
    """Remove the queues and kombu's exchange bindings for them from database 15."""
    broker = redis.Redis.from_url(REDIS_URL)
    try:
        for name in queues:
            broker.delete(
                name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}"
            )
    finally:
        broker.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # warm shutdown
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def worker(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    suffix = uuid.uuid4().hex[:12]
    var_dir = tmp_path_factory.mktemp("worker-var")
    queue, lab_queue = f"it-{suffix}", pool_queue(f"it-{suffix}")
    env = dict(os.environ)
    env.update(
        CELERY_BROKER_URL=redis_url,
        CELERY_RESULT_BACKEND=redis_url,
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        DJANGO_SECURE_SSL_REDIRECT="False",
        REPROGATE_VAR_DIR=str(var_dir),
    )
    log = var_dir / "worker.log"
    command = [str(CELERY_BIN), "-A", "config", "worker", "--pool", "solo"]
    command += ["--concurrency", "1", "-Q", f"{queue},{lab_queue}"]
    command += ["-n", f"it-{suffix}@%h", "--without-gossip", "--without-mingle"]
    command += ["--without-heartbeat", "-l", "INFO"]
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=PROJECT_DIR, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    running = Worker(process=process, queue=queue, pool_queue=lab_queue, log=log)
    try:
        _wait_until_ready(running)
        yield running
    finally:
        _stop(process)
        _forget_queues(queue, lab_queue)


@pytest.fixture
def client(redis_url: str) -> Iterator[Celery]:
    probe = Celery("probe", broker=redis_url, backend=redis_url, set_as_current=False)
    yield probe
    probe.close()


def test_worker_answers_a_ping_sent_through_redis(
    worker: Worker, client: Celery
) -> None:
    nonce = uuid.uuid4().hex

    result = client.send_task("accounts.worker_ping", args=[nonce], queue=worker.queue)
    answer = result.get(timeout=RESULT_TIMEOUT)
    result.forget()

    assert answer == {"nonce": nonce, "hostname": socket.gethostname()}
    assert worker.process.poll() is None
    assert _logged(worker, f"Task accounts.worker_ping[{result.id}] succeeded")


def test_worker_consumes_its_lab_pool_queue(worker: Worker, client: Celery) -> None:
    nonce = uuid.uuid4().hex

    result = client.send_task(
        "accounts.worker_ping", args=[nonce], queue=worker.pool_queue
    )
    answer = result.get(timeout=RESULT_TIMEOUT)
    result.forget()

    assert answer["nonce"] == nonce
    assert _logged(worker, f"Task accounts.worker_ping[{result.id}] succeeded")


def test_task_for_another_pool_waits_for_its_own_worker(
    worker: Worker, client: Celery
) -> None:
    other_queue = pool_queue(f"it-nobody-{uuid.uuid4().hex[:8]}")
    broker = redis.Redis.from_url(REDIS_URL)
    result = client.send_task("accounts.worker_ping", args=["x"], queue=other_queue)

    time.sleep(2)  # the worker polls its queues far more often than this

    try:
        assert result.state == "PENDING"
        assert broker.llen(other_queue) == 1
        assert result.id not in worker.log.read_text()
    finally:
        broker.close()
        _forget_queues(other_queue)
