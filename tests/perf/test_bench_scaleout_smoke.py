"""The scale-out benchmark (``tests/perf/bench_scaleout.py``) at a small size: 1
and 2 agents, 2 runs each, a harness sleeping half a second, on a PostgreSQL
database of its own beside the test database (the PostgreSQL pass) and RabbitMQ
(Redis when ``rabbitmqctl`` is not usable here). Every run must succeed and the
figures must be printed; no timing is asserted (the figures measured are in the
benchmark's docstring and tests/perf/README.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(
    r"^ +(\d+) +(\d+) +(\d+) +(\d+) +(\d+\.\d) +(\d+\.\d\d) +(\d+\.\d\d) +(\d+) "
    r"+(\d+\.\d\d)  ([\d ]+)$",
    re.M,
)


@pytest.fixture
def scaleout_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """An empty PostgreSQL database beside the test database, dropped after."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the scale-out benchmark runs on PostgreSQL (the PostgreSQL pass)")
    settings = connection.settings_dict
    name = f"{settings['NAME']}_scaleout"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    user, host, port = settings["USER"], settings["HOST"], settings["PORT"]
    yield f"postgres://{user}@{host}:{port or 5432}/{name}"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _rabbitmq_usable() -> bool:
    if shutil.which("rabbitmqctl") is None:
        return False
    done = subprocess.run(
        ["rabbitmqctl", "await_startup", "--timeout", "10"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    return done.returncode == 0


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_scaleout_benchmark_runs_every_run_with_one_and_two_agents(
    scaleout_database: str, tmp_path: Path
) -> None:
    broker = "rabbitmq" if _rabbitmq_usable() else "redis"
    command = [sys.executable, "-m", "tests.perf.bench_scaleout", "--agents", "1,2"]
    command += ["--runs-per-agent", "2", "--sleep", "0.5", "--broker", broker]
    command += ["--database-url", scaleout_database, "--work-dir", str(tmp_path)]

    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False
    )

    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert f"broker {broker}" in done.stdout
    rows = ROW.findall(done.stdout)
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("1", "2", "2"),
        ("2", "4", "4"),
    ], done.stdout
    assert rows[0][6] == "1.00"  # the ratio is to one agent
    assert float(rows[1][5]) > 0
    # every agent took part: one count per agent
    assert [len(row[9].split()) for row in rows] == [1, 2], done.stdout
    assert [sum(int(n) for n in row[9].split()) for row in rows] == [2, 4]
