"""The bundle, escrow and runner settings come from the environment through
``config/settings.py``: a malformed value stops start-up naming the variable, a
good one reaches the app's ``conf`` accessor, and the embedded default makes the
var directory a fresh clone lacks.

Settings are read once per process, so each case runs in a fresh interpreter.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import EXIT_MISCONFIGURED, env_choice, env_float, env_int

PROJECT_DIR = Path(__file__).resolve().parents[2]
PREFIXES: tuple[str, ...] = ("DJANGO_", "REPROGATE_", "CELERY_", "DATABASE_URL", "AWS_")
PREFIXES += ("BUNDLE_", "ESCROW_", "RUNNER_")


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    """No setting from the suite's environment; its own var directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env["REPROGATE_VAR_DIR"] = str(tmp_path / "var")
    env["DJANGO_SECRET_KEY"] = "insecure-key-for-the-test-suite-only"
    env["DJANGO_DEBUG"] = "False"
    return env


def run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def printed(env: dict[str, str], expression: str) -> str:
    """``expression`` evaluated in a process started with ``env``."""
    code = f"import django\ndjango.setup()\nprint({expression})"
    result = run({**env, "DJANGO_SETTINGS_MODULE": "config.settings"}, "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


BAD_VALUES = [
    (
        "BUNDLE_MAX_UPLOAD_BYTES",
        "4GB",
        "BUNDLE_MAX_UPLOAD_BYTES='4GB' is not an integer",
    ),
    ("BUNDLE_MAX_MEMBERS", "0", "BUNDLE_MAX_MEMBERS=0 must be at least 1"),
    ("BUNDLE_STORAGE_THREADS", "0", "BUNDLE_STORAGE_THREADS=0 must be at least 1"),
    ("BUNDLE_MAX_COMPRESSION_RATIO", "nan", "BUNDLE_MAX_COMPRESSION_RATIO='nan' is"),
    ("ESCROW_OBJECT_LOCK", "on", "ESCROW_OBJECT_LOCK='on' is not one of: auto, off"),
    ("ESCROW_OBJECT_LOCK_MODE", "strict", "ESCROW_OBJECT_LOCK_MODE='strict' is not"),
    ("ESCROW_RETENTION_YEARS", "0", "ESCROW_RETENTION_YEARS=0 must be at least 1"),
    ("RUNNER_HEARTBEAT_SECONDS", "fast", "RUNNER_HEARTBEAT_SECONDS='fast' is not a"),
    ("RUNNER_LOST_AFTER_SECONDS", "0.1", "RUNNER_LOST_AFTER_SECONDS=0.1 must be at"),
    ("RUNNER_MAX_ATTEMPTS", "2.5", "RUNNER_MAX_ATTEMPTS='2.5' is not an integer"),
    ("RUNNER_LOG_TAIL_CHARS", "10", "RUNNER_LOG_TAIL_CHARS=10 must be at least 100"),
    ("REPROGATE_LOG_MAX_LEAF_BYTES", "big", "REPROGATE_LOG_MAX_LEAF_BYTES='big'"),
]


@pytest.mark.parametrize(("name", "value", "expected"), BAD_VALUES)
def test_a_bad_value_stops_start_up_naming_the_variable(
    base_env: dict[str, str], name: str, value: str, expected: str
) -> None:
    base_env[name] = value

    result = run(base_env, "manage.py", "check")

    assert result.returncode == EXIT_MISCONFIGURED
    assert result.stderr.strip().startswith(f"ReproGate: {expected}"), result.stderr
    assert "Traceback" not in result.stderr


def test_runner_values_from_the_environment_reach_benchmarks_conf(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    base_env.update(
        RUNNER_HEARTBEAT_SECONDS="0.5",
        RUNNER_MAX_ATTEMPTS="4",
        RUNNER_WORK_DIR=str(tmp_path / "work"),
    )

    got = printed(
        base_env,
        "(lambda c: (c.heartbeat_seconds(), c.max_attempts(), c.work_dir()))"
        "(__import__('benchmarks.conf').conf)",
    )

    assert got == repr((0.5, 4, str(tmp_path / "work")))


def test_bundle_and_escrow_values_from_the_environment_reach_artifacts_conf(
    base_env: dict[str, str],
) -> None:
    base_env.update(
        BUNDLE_MAX_UPLOAD_BYTES="1000",
        BUNDLE_STORAGE_THREADS="3",
        ESCROW_OBJECT_LOCK_MODE="governance",
        ESCROW_RELEASE_NOTICE_DAYS="3",
    )

    got = printed(
        base_env,
        "(lambda c: (c.bundle_max_upload_bytes(), c.bundle_storage_threads(), "
        "c.object_lock_mode(), c.escrow_release_notice_days()))"
        "(__import__('artifacts.conf').conf)",
    )

    assert got == repr((1000, 3, "GOVERNANCE", 3))


def test_unset_the_defaults_are_those_the_apps_had(base_env: dict[str, str]) -> None:
    got = printed(
        base_env,
        "(lambda a, b: (a.bundle_max_upload_bytes(), a.bundle_archive_limits(), "
        "a.bundle_spool_dir(), a.bundle_storage_threads(), "
        "a.bundle_environment_max_bytes(), a.log_max_leaf_bytes(), "
        "a.object_lock_mode(), a.object_lock_enabled_setting(), "
        "a.escrow_release_notice_days(), a.escrow_fixity_grace_seconds(), "
        "b.heartbeat_seconds(), b.lost_after_seconds(), b.max_attempts(), "
        "b.wall_limit_seconds(60), b.wall_limit_seconds(10**6), "
        "b.wall_grace_seconds(), b.redispatch_after_seconds(), "
        "b.progress_write_seconds(), b.log_tail_chars(), b.work_dir(), "
        "b.output_limit_bytes(), b.max_output_files(), b.max_runs_per_campaign()))"
        "(__import__('artifacts.conf').conf, __import__('benchmarks.conf').conf)",
    )

    limits = (
        "ArchiveLimits(max_member_bytes=2147483648, max_members=10000, "
        "max_total_bytes=8589934592, max_ratio=200.0, ratio_grace_bytes=1048576)"
    )
    assert got == (
        f"(4294967296, {limits}, None, 1, 1048576, 16777216, 'COMPLIANCE', True, "
        "14, 3600, 10.0, 120.0, 2, 480, 21600, 300.0, 300.0, 1.0, 16000, None, "
        "1073741824, 1000, 1000)"
    )


def test_an_s3_secret_may_be_read_from_its_file(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    secret = tmp_path / "aws_secret_access_key"
    secret.write_text("from-the-file\n", encoding="utf-8")
    base_env.update(
        AWS_STORAGE_BUCKET_NAME="escrow",
        AWS_SECRET_ACCESS_KEY_FILE=str(secret),
    )

    got = printed(
        base_env,
        "__import__('django.conf').conf.settings.STORAGES['default']['OPTIONS']"
        "['secret_key']",
    )

    assert got == "from-the-file"


def test_migrate_on_a_fresh_clone_makes_the_var_directory(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    var_dir = tmp_path / "fresh" / "var"  # neither exists, as in a fresh clone
    base_env["REPROGATE_VAR_DIR"] = str(var_dir)

    result = run(base_env, "manage.py", "migrate", "--no-input", "--verbosity=0")

    assert result.returncode == 0, result.stderr
    assert (var_dir / "db.sqlite3").is_file()


def test_a_var_directory_that_cannot_be_made_stops_start_up(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    base_env["REPROGATE_VAR_DIR"] = str(tmp_path / "a-file" / "var")

    result = run(base_env, "manage.py", "check")

    assert result.returncode == EXIT_MISCONFIGURED
    assert result.stderr.startswith("ReproGate: REPROGATE_VAR_DIR="), result.stderr
    assert "cannot be created" in result.stderr


# --- the helpers the new settings use --------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [("0.5", 0.5), ("3", 3.0), ("1e3", 1e3)])
def test_env_float_parses_a_number(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: float
) -> None:
    monkeypatch.setenv("RG_TEST_SECONDS", raw)

    assert env_float("RG_TEST_SECONDS", default=1.0) == expected


@pytest.mark.parametrize("raw", ["fast", "inf", "-inf", "nan", "1,5"])
def test_env_float_rejects_anything_but_a_finite_number(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("RG_TEST_SECONDS", raw)

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_SECONDS=.* not a number"):
        env_float("RG_TEST_SECONDS", default=1.0)


def test_env_float_rejects_a_value_below_the_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_SECONDS", "0.05")

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_SECONDS=0.05 must be"):
        env_float("RG_TEST_SECONDS", default=1.0, minimum=0.1)


def test_env_float_uses_the_default_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_SECONDS", raising=False)

    assert math.isclose(env_float("RG_TEST_SECONDS", default=2.5), 2.5)


def test_env_int_without_a_default_is_none_when_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RG_TEST_THREADS", raising=False)

    assert env_int("RG_TEST_THREADS", default=None, minimum=1) is None


def test_env_choice_takes_any_case_and_returns_the_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_MODE", "governance")

    assert env_choice("RG_TEST_MODE", "A", choices=("COMPLIANCE", "GOVERNANCE")) == (
        "GOVERNANCE"
    )


def test_env_choice_rejects_another_value_listing_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_MODE", "on")

    with pytest.raises(
        ImproperlyConfigured, match=r"^RG_TEST_MODE='on' is not one of: auto, off\.$"
    ):
        env_choice("RG_TEST_MODE", "auto", choices=("auto", "off"))


DATABASE_OPTIONS = "__import__('django.conf').conf.settings.DATABASES['default']"


@pytest.mark.django_db
def test_the_postgresql_connection_runs_without_jit() -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite has no JIT")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


@pytest.mark.django_db
def test_a_sqlite_connection_keeps_sqlites_default_page_cache() -> None:
    """2 MiB of pages a connection, SQLite's default: a read of every row (the
    fixity check's) keeps no more than that; the ingest's accept transaction asks
    for more while it runs (``artifacts.storage.bulk.large_write_cache``)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite only")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone()[0] == -2000
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == 5000


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", "-c jit=off"),  # the URL's own options come after and win
        (
            "?options=-c%20jit%3Don%20-c%20work_mem%3D8MB",
            "-c jit=off -c jit=on -c work_mem=8MB",
        ),
    ],
)
def test_a_postgresql_url_starts_its_connections_with_jit_off(
    base_env: dict[str, str], query: str, expected: str
) -> None:
    url = f"postgres://u@127.0.0.1:5432/db{query}"
    expression = f"{DATABASE_OPTIONS}['OPTIONS']['options']"
    assert printed({**base_env, "DATABASE_URL": url}, expression) == expected


def test_a_sqlite_url_gets_no_postgresql_options(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    expression = f"'options' in {DATABASE_OPTIONS}['OPTIONS']"
    assert printed({**base_env, "DATABASE_URL": url}, expression) == "False"
