"""A Celery application on the embedded broker (benchmarks/lib/broker.py) without
Django, for the broker's real-process tests (``celery -A
tests.integration.broker_app worker``).

``BROKER_TEST_URL`` names the broker (``sqla+sqlite:///…``), ``BROKER_TEST_LEDGER``
a SQLite file where ``record`` writes what it did: every delivery, and a claim per
item id (``INSERT OR IGNORE``, the shape of the runner's idempotent claim) and
the work past the claim, in ``done``.
"""

from __future__ import annotations

import os
import sqlite3
import time

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

# As config/celery.py does (importing it would set Django up).
TRANSPORT_ALIASES["sqla"] = "benchmarks.lib.broker:Transport"

app = Celery("broker-test", set_as_current=False)
app.conf.update(
    broker_url=os.environ.get("BROKER_TEST_URL", "sqla+sqlite:///broker-test.sqlite3"),
    broker_transport_options={
        "polling_interval": 0.05,
        "visibility_timeout": float(os.environ.get("BROKER_TEST_VISIBILITY", "4")),
    },
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)

LEDGER_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS deliveries (item TEXT, pid INTEGER)",
    "CREATE TABLE IF NOT EXISTS claims (item TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS done (item TEXT, pid INTEGER)",
)


def ledger_create(path: str) -> None:
    """Made once, before any worker starts: switching the journal mode takes a
    lock that no busy timeout waits for, so two pool processes doing it at once
    could fail a task with ``database is locked``."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")  # kept by the file
        for statement in LEDGER_SCHEMA:
            conn.execute(statement)
    finally:
        conn.close()


def ledger(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=30, isolation_level=None)


@app.task(name="broker_test.record")
def record(item: str, seconds: float = 0.0) -> None:
    """Count the delivery, then claim ``item`` and do its work in one transaction:
    a worker killed in the middle leaves neither, and a later delivery does both."""
    conn = ledger(os.environ["BROKER_TEST_LEDGER"])
    try:
        conn.execute("INSERT INTO deliveries VALUES (?, ?)", (item, os.getpid()))
        conn.execute("BEGIN IMMEDIATE")
        claimed = conn.execute(
            "INSERT OR IGNORE INTO claims VALUES (?)", (item,)
        ).rowcount
        if claimed:
            time.sleep(seconds)
            conn.execute("INSERT INTO done VALUES (?, ?)", (item, os.getpid()))
        conn.execute("COMMIT")
    finally:
        conn.close()
