"""The embedded default broker, as a fresh process reads its settings: kombu's
SQLAlchemy transport (benchmarks/lib/broker.py) on a SQLite file under the var dir; the
environment overrides it; kombu's filesystem transport (whose consumer died on an
empty message file) is refused with one line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.config.scripts_support import run_in_project

PROJECT_DIR = Path(__file__).resolve().parents[2]
PROBE = (
    "import django; django.setup()\n"
    "from config.celery import app\n"
    "with app.connection_for_write() as conn:\n"
    "    transport = type(conn.transport)\n"
    "print(app.conf.broker_url)\n"
    "print(f'{transport.__module__}.{transport.__qualname__}')\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        REPROGATE_VAR_DIR=str(tmp_path / "var"),
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        DJANGO_DEBUG="False",
    )
    env.pop("CELERY_BROKER_URL", None)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_project([sys.executable, *args], env)


def test_the_embedded_default_is_the_sqlite_broker_under_the_var_dir(
    env: dict[str, str], tmp_path: Path
) -> None:
    result = _run(env, "-c", PROBE)

    assert result.returncode == 0, result.stderr
    url, transport = result.stdout.split()
    assert url == f"sqla+sqlite:///{tmp_path / 'var' / 'broker' / 'broker.sqlite3'}"
    assert transport == "benchmarks.lib.broker.Transport"


def test_the_environment_chooses_another_broker(env: dict[str, str]) -> None:
    env["CELERY_BROKER_URL"] = "redis://127.0.0.1:6379/15"

    result = _run(env, "-c", PROBE)

    assert result.returncode == 0, result.stderr
    url, transport = result.stdout.split()
    assert url == "redis://127.0.0.1:6379/15"
    assert transport == "kombu.transport.redis.Transport"


@pytest.mark.parametrize("url", ["filesystem://", "filesystem:///tmp/queue"])
def test_the_filesystem_broker_is_refused_in_one_line(
    env: dict[str, str], url: str
) -> None:
    env["CELERY_BROKER_URL"] = url

    result = _run(env, "manage.py", "check")

    assert result.returncode != 0
    assert f"CELERY_BROKER_URL={url!r}" in result.stderr
    assert "Traceback" not in result.stderr
