"""1,000 appends from 4 PROCESSES at once give one
consistent tree on PostgreSQL (the test database); so do 1,000 real escrow
deposits (row + log entry + audit row per transaction); 200 appends do on SQLite
(a file: its busy handler sleeps, so contention is slow there, not wrong):
indexes 0…n-1 with no gap and no duplicate, every leaf exactly once and each
worker's leaves in its own order, the signed root is the RFC 9162 root of the
stored leaves, and the checkpoints before and after are provably consistent."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection

from artifacts.lib.transparency import merkle, note

ROOT = Path(__file__).resolve().parents[3]
WORKERS, BEFORE = 4, 10
WORKER = "tests.artifacts.transparency.log_worker"


def _environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "insecure-key-for-the-test-suite-only",
        "DJANGO_DEBUG": "False",
        "DJANGO_LOG_LEVEL": "WARNING",
        "DATABASE_URL": database_url,
        "REPROGATE_VAR_DIR": str(tmp_path / "var"),
        "REPROGATE_LOG_KEY_PATH": str(tmp_path / "log.pem"),
        "REPROGATE_LOG_ORIGIN": "reprogate.test/concurrency",
    }


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", WORKER, *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _append_concurrently(env: dict[str, str], barrier: Path, each: int) -> None:
    barrier.mkdir()
    command = [sys.executable, "-m", WORKER, "append"]
    options: dict[str, Any] = {"cwd": ROOT, "env": env, "text": True}
    workers = [
        subprocess.Popen(
            [*command, f"w{n}", str(each), str(barrier)],
            stderr=subprocess.PIPE,
            **options,
        )
        for n in range(WORKERS)
    ]
    while len(list(barrier.glob("ready-*"))) < WORKERS:
        assert all(w.poll() is None for w in workers), "a worker died starting up"
        time.sleep(0.01)
    (barrier / "go").touch()
    for worker in workers:
        _, errors = worker.communicate(timeout=300)
        assert worker.returncode == 0, errors[-3000:]


def _check_one_consistent_tree(env: dict[str, str], tmp_path: Path, each: int) -> None:
    migrate = ["--migrate"] if env["DATABASE_URL"].startswith("sqlite") else []
    before_note = _run(env, "start", str(BEFORE), *migrate)
    _append_concurrently(env, tmp_path / "barrier", each)
    finished = json.loads(_run(env, "finish", str(BEFORE)))

    total = BEFORE + WORKERS * each
    before = note.open_checkpoint(before_note, finished["verifier_key"])
    after = note.open_checkpoint(finished["checkpoint"], finished["verifier_key"])
    indexes = [index for index, _ in finished["entries"]]
    leaves = [base64.b64decode(leaf) for _, leaf in finished["entries"]]
    assert (before.size, after.size) == (BEFORE, total)
    assert indexes == list(range(total))
    _check_leaves(leaves, each)
    hashes = [merkle.leaf_hash(leaf) for leaf in leaves]
    assert merkle.root_from_leaf_hashes(hashes) == after.root_hash
    assert merkle.root_from_leaf_hashes(hashes[:BEFORE]) == before.root_hash
    proof = [base64.b64decode(h) for h in finished["proof"]]
    merkle.verify_consistency(
        before.size, after.size, before.root_hash, after.root_hash, proof
    )


def _check_leaves(leaves: list[bytes], each: int) -> None:
    """Every leaf once; each worker's leaves in the order it appended them."""
    records = [json.loads(leaf) for leaf in leaves]
    by_worker: dict[str, list[int]] = {}
    for record in records:
        by_worker.setdefault(record["worker"], []).append(record["n"])
    assert by_worker.pop("before") == list(range(BEFORE))
    assert by_worker == {f"w{n}": list(range(each)) for n in range(WORKERS)}


@pytest.mark.django_db(transaction=True)
def _postgres_url() -> str:
    if connection.vendor != "postgresql":
        pytest.skip("runs when the suite runs on PostgreSQL (DATABASE_URL)")
    db: dict[str, Any] = connection.settings_dict
    user = quote(db["USER"] or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    return (
        f"postgres://{user}{password}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
        f"/{quote(db['NAME'], safe='')}"
    )


@pytest.mark.django_db(transaction=True)
def test_processes_appending_at_once_on_postgresql(tmp_path: Path) -> None:
    env = _environment(_postgres_url(), tmp_path)

    _check_one_consistent_tree(env, tmp_path, each=250)


@pytest.mark.django_db(transaction=True)
def test_processes_depositing_at_once_on_postgresql(tmp_path: Path) -> None:
    from artifacts.models import Deposit, LogEntry

    env = {**_environment(_postgres_url(), tmp_path), "LOG_WORKER_DEPOSITS": "1"}

    _check_one_consistent_tree(env, tmp_path, each=250)

    deposits = Deposit.objects.order_by("log_index")
    assert deposits.count() == BEFORE + WORKERS * 250
    entries = dict(LogEntry.objects.values_list("index", "leaf"))
    assert all(bytes(entries[d.log_index]) == bytes(d.leaf) for d in deposits)


def test_processes_appending_at_once_on_sqlite(tmp_path: Path) -> None:
    env = _environment(f"sqlite:///{tmp_path / 'log.sqlite3'}", tmp_path)

    _check_one_consistent_tree(env, tmp_path, each=50)
