"""The embedded broker (benchmarks/lib/broker.py) between real processes: producer
processes sending at the same time, a real Celery worker SIGKILLed mid-stream and
started again, rows that are not messages. Nothing is lost, nothing runs twice
past the idempotent claim, the worker never dies of a bad message.

The worker is ``tests.integration.broker_app`` (no Django, no server), whose task
counts every delivery and, past an ``INSERT OR IGNORE`` claim, the work done."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker_app import ledger_create

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PROJECT_DIR = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
CONCURRENCY = 2
VISIBILITY_S = 4.0


class Lab:
    """A broker file, a ledger file and the worker processes started on them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.broker = root / "broker" / "broker.sqlite3"
        self.ledger = root / "ledger.sqlite3"
        self.workers: list[subprocess.Popen[bytes]] = []
        self.env = {
            **os.environ,
            "BROKER_TEST_URL": f"sqla+sqlite:///{self.broker}",
            "BROKER_TEST_LEDGER": str(self.ledger),
            "BROKER_TEST_VISIBILITY": str(VISIBILITY_S),
        }
        # No Django in these processes (Celery's Django fix-up would set it up).
        for name in ("CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"):
            self.env.pop(name, None)
        ledger_create(str(self.ledger))

    def start_worker(self) -> subprocess.Popen[bytes]:
        log = self.root / f"worker-{len(self.workers)}.log"
        command = [sys.executable, "-m", "celery", "-A", "tests.integration.broker_app"]
        command += ["worker", "-c", str(CONCURRENCY), "-l", "INFO"]
        command += ["-n", f"broker-test-{len(self.workers)}@%h"]
        with log.open("wb") as out:
            worker = subprocess.Popen(
                command,
                cwd=PROJECT_DIR,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.workers.append(worker)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while " ready." not in log.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not start:\n{log.read_text()}")
            time.sleep(0.1)
        return worker

    def worker_log(self, index: int) -> str:
        return (self.root / f"worker-{index}.log").read_text(errors="replace")

    def produce(self, items: list[str], seconds: float = 0.0) -> str:
        """A producer process's script: send ``record`` for every item."""
        return textwrap.dedent(
            f"""
            from tests.integration.broker_app import record
            for item in {items!r}:
                record.delay(item, {seconds!r})
            """
        )

    def spawn(self, script: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", script], cwd=PROJECT_DIR, env=self.env
        )

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        if not self.ledger.exists():
            return []
        with sqlite3.connect(self.ledger, timeout=30) as conn:
            try:
                return conn.execute(sql).fetchall()
            except sqlite3.OperationalError:  # tables not made yet
                return []

    def done(self) -> list[str]:
        return [row[0] for row in self.query("SELECT item FROM done")]

    def deliveries(self) -> list[str]:
        return [row[0] for row in self.query("SELECT item FROM deliveries")]

    def broker_rows(self) -> int:
        with sqlite3.connect(self.broker, timeout=30) as conn:
            return conn.execute("SELECT count(*) FROM kombu_message").fetchone()[0]

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in self.workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=20)
            _kill_group(worker)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    lab = Lab(tmp_path)
    yield lab
    lab.stop()


def test_concurrent_producers_and_a_worker_killed_mid_stream_lose_nothing(
    lab: Lab,
) -> None:
    producers_n, per_producer = 4, 60
    items = [f"p{p}-{i}" for p in range(producers_n) for i in range(per_producer)]
    first = lab.start_worker()
    producers = [
        lab.spawn(lab.produce(items[p * per_producer : (p + 1) * per_producer], 0.02))
        for p in range(producers_n)
    ]

    # SIGKILL the worker's main process (as the OOM killer would) mid-stream.
    assert _wait_until(lambda: len(lab.done()) >= 40, 90), "no progress before kill"
    first.send_signal(signal.SIGKILL)
    _kill_group(first)  # and its pool processes
    done_at_kill = len(lab.done())
    assert done_at_kill < len(items), "the stream was over before the kill"

    lab.start_worker()
    assert all(p.wait(timeout=120) == 0 for p in producers)
    assert _wait_until(lambda: len(lab.done()) >= len(items), VISIBILITY_S + 90)
    time.sleep(VISIBILITY_S + 1)  # anything left to redeliver would be by now

    done = lab.done()
    deliveries = lab.deliveries()
    assert sorted(done) == sorted(items)  # every message ran, none twice
    # Deliveries beyond one per item: only what the killed worker held (each of
    # its pool processes one task, and one prefetched).
    assert len(deliveries) - len(items) <= 2 * CONCURRENCY
    assert lab.broker_rows() == 0  # every message acknowledged and deleted


@pytest.mark.parametrize("payload", ["", '{"body": "trunc', "\x00\x01garbage"])
def test_a_row_that_is_not_a_message_does_not_stop_the_worker(
    lab: Lab, payload: str
) -> None:
    """The filesystem transport's empty ``*.msg`` file, as a row: logged and
    deleted; the worker keeps consuming."""
    worker = lab.start_worker()
    before = lab.spawn(lab.produce(["a1", "a2"]))
    assert before.wait(timeout=60) == 0
    assert _wait_until(lambda: len(lab.done()) == 2, 60)

    with sqlite3.connect(lab.broker, timeout=30) as conn:
        conn.execute(
            "INSERT INTO kombu_message (visible, payload, version, queue_id) "
            "VALUES (1, ?, 1, (SELECT id FROM kombu_queue WHERE name = 'celery'))",
            (payload,),
        )
    after = lab.spawn(lab.produce(["b1", "b2", "b3"]))
    assert after.wait(timeout=60) == 0

    assert _wait_until(lambda: len(lab.done()) == 5, 60)
    assert worker.poll() is None
    assert "is not a kombu message" in lab.worker_log(0)
    # The ledger's row is written inside the task; the acknowledgement that
    # deletes the message comes just after it.
    assert _wait_until(lambda: lab.broker_rows() == 0, 30)


def test_a_task_longer_than_the_visibility_timeout_runs_once(lab: Lab) -> None:
    """A live worker renews its lease: no second delivery while it works."""
    lab.start_worker()
    lab.start_worker()  # an idle second consumer that would take a lapsed lease
    producer = lab.spawn(lab.produce(["long"], VISIBILITY_S * 2.5))
    assert producer.wait(timeout=60) == 0

    assert _wait_until(lambda: lab.done() == ["long"], VISIBILITY_S * 2.5 + 60)
    time.sleep(VISIBILITY_S)

    assert lab.deliveries() == ["long"]
    assert lab.broker_rows() == 0
