"""Start-up fails fast, naming the variable, on a malformed environment.

Each test runs ``manage.py check`` in a fresh interpreter, because settings are read
once per process.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.config.scripts_support import run_in_project

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    """The test suite's environment, with its own var/ folder."""
    env = dict(os.environ)
    env["REPROGATE_VAR_DIR"] = str(tmp_path / "var")
    env["DJANGO_SECRET_KEY"] = "insecure-key-for-the-test-suite-only"
    env["DJANGO_DEBUG"] = "False"
    env.pop("DJANGO_SECRET_KEY_FILE", None)
    env.pop("CELERY_BROKER_URL", None)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_project([sys.executable, "manage.py", *args], env)


def test_check_passes_with_the_test_environment(base_env: dict[str, str]) -> None:
    result = manage(base_env, "check")

    assert result.returncode == 0, result.stderr


def test_startup_rejects_a_malformed_database_url(base_env: dict[str, str]) -> None:
    base_env["DATABASE_URL"] = "nonsense"

    result = manage(base_env, "check")

    assert result.returncode != 0
    assert "ReproGate: DATABASE_URL='nonsense'" in result.stderr


def test_startup_rejects_a_non_boolean_debug(base_env: dict[str, str]) -> None:
    base_env["DJANGO_DEBUG"] = "maybe"

    result = manage(base_env, "check")

    assert result.returncode != 0
    assert "ReproGate: DJANGO_DEBUG='maybe'" in result.stderr


def test_startup_requires_a_secret_key_without_debug(
    base_env: dict[str, str],
) -> None:
    del base_env["DJANGO_SECRET_KEY"]

    result = manage(base_env, "check")

    assert result.returncode != 0
    assert "ReproGate: DJANGO_SECRET_KEY is required" in result.stderr


def test_startup_reads_the_secret_key_from_a_file(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    secret_file = tmp_path / "django_secret_key"
    secret_file.write_text(secrets.token_urlsafe(45) + "\n", encoding="utf-8")
    del base_env["DJANGO_SECRET_KEY"]
    base_env["DJANGO_SECRET_KEY_FILE"] = str(secret_file)

    result = manage(base_env, "check")

    assert result.returncode == 0, result.stderr


def test_startup_rejects_an_unsupported_broker_url(base_env: dict[str, str]) -> None:
    base_env["CELERY_BROKER_URL"] = "ftp://x"

    result = manage(base_env, "check")

    assert result.returncode != 0
    assert "ReproGate: CELERY_BROKER_URL='ftp://x'" in result.stderr


def test_check_deploy_passes_with_a_production_environment(
    base_env: dict[str, str],
) -> None:
    for name in [n for n in base_env if n.startswith("DJANGO_SECURE_")]:
        del base_env[name]  # production keeps the secure defaults
    base_env.update(
        DJANGO_DEBUG="False",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(45),  # 60 characters
        DJANGO_ALLOWED_HOSTS="reprogate.example.com",
    )

    result = manage(base_env, "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_makemigrations_check_runs_without_a_secret_key(
    base_env: dict[str, str],
) -> None:
    env = {k: v for k, v in base_env.items() if k != "DJANGO_SECRET_KEY"}
    env["DJANGO_DEBUG"] = "False"

    result = manage(env, "makemigrations", "--check", "--dry-run")

    assert result.returncode == 0, result.stderr
    assert "No changes detected" in result.stdout
