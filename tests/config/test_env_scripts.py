"""scripts/manage runs management commands with scripts/run's environment, set by
nobody: the embedded default with DEBUG off, the var dir, and links that follow
REPROGATE_HOST/PORT."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
from pathlib import Path

from tests.config.scripts_support import (  # noqa: F401 - the fixture
    MANAGE,
    PROJECT_DIR,
    _venv_up_to_date,
    bare_env,
    run_in_project,
)

SHOW = (
    "from django.conf import settings; "
    "print(settings.DEBUG, settings.VAR_DIR, settings.REPROGATE_SITE_URL, "
    "settings.REPROGATE_EMBEDDED)"
)


def manage(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_in_project([str(MANAGE), *args], env, cwd=cwd)


def test_scripts_manage_runs_a_command_with_no_environment(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"

    result = manage("check", cwd=tmp_path, env=bare_env(REPROGATE_VAR_DIR=str(var_dir)))

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert "Traceback" not in result.stderr
    assert var_dir.is_dir()  # made, as scripts/run does


def test_scripts_manage_uses_the_environment_of_scripts_run(tmp_path: Path) -> None:
    var_dir = tmp_path / "demo"
    env = bare_env(REPROGATE_VAR_DIR=str(var_dir), REPROGATE_PORT="8140")

    result = manage("shell", "-v", "0", "-c", SHOW, cwd=PROJECT_DIR, env=env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "False",
        str(var_dir),
        "http://127.0.0.1:8140",
        "True",
    ]


def test_scripts_manage_links_to_the_port_scripts_run_served_the_var_dir_on(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "demo"
    var_dir.mkdir()
    (var_dir / "run-port").write_text("8155\n")  # as scripts/run writes it

    alone = manage(
        "shell", "-v", "0", "-c", SHOW, cwd=PROJECT_DIR,
        env=bare_env(REPROGATE_VAR_DIR=str(var_dir)),
    )  # fmt: skip
    told = manage(
        "shell", "-v", "0", "-c", SHOW, cwd=PROJECT_DIR,
        env=bare_env(REPROGATE_VAR_DIR=str(var_dir), REPROGATE_PORT="8156"),
    )  # fmt: skip
    (var_dir / "run-port").write_text("8155; rm -rf /\n")
    garbled = manage(
        "shell", "-v", "0", "-c", SHOW, cwd=PROJECT_DIR,
        env=bare_env(REPROGATE_VAR_DIR=str(var_dir)),
    )  # fmt: skip

    assert alone.stdout.split()[2] == "http://127.0.0.1:8155", alone.stderr
    assert told.stdout.split()[2] == "http://127.0.0.1:8156", told.stderr
    assert garbled.stdout.split()[2] == "http://127.0.0.1:8000", garbled.stderr


def test_scripts_manage_keeps_what_the_caller_set(tmp_path: Path) -> None:
    env = bare_env(
        REPROGATE_VAR_DIR=str(tmp_path / "var"),
        DJANGO_DEBUG="True",
        REPROGATE_EMBEDDED="False",
        DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
        REPROGATE_SITE_URL="https://reprogate.example.com",
    )

    result = manage("shell", "-v", "0", "-c", SHOW, cwd=PROJECT_DIR, env=env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0::2] == [
        "True",
        "https://reprogate.example.com",
    ]
    assert result.stdout.split()[3] == "False"


def test_scripts_manage_passes_a_bad_setting_through_as_one_line(
    tmp_path: Path,
) -> None:
    env = bare_env(REPROGATE_VAR_DIR=str(tmp_path / "var"), REPROGATE_PORT="eighty")

    result = manage("check", cwd=PROJECT_DIR, env=env)

    assert result.returncode == 3
    assert result.stderr.strip() == (
        "ReproGate: REPROGATE_PORT='eighty' is not an integer."
    )


def test_scripts_run_and_manage_share_one_environment() -> None:
    """Both source scripts/_env.sh; neither sets the variables on its own."""
    for script in ("run", "manage", "celery"):
        text = (PROJECT_DIR / "scripts" / script).read_text()
        assert 'source "$ROOT/scripts/_env.sh"' in text, script
        assert "DJANGO_DEBUG=" not in text, script
        assert "REPROGATE_EMBEDDED=" not in text, script
        assert "REPROGATE_PORT:-" not in text, script


def test_the_files_the_readme_writes_are_ignored_by_git() -> None:
    names = [
        "acme.tar.gz",
        "var/demo-bundles/acme-flash.tar.gz",
        "evidence.zip",
        "submitted.txt",
        "response.json",
        "plan.json",
        "results.json",
        "report.pdf",
        "package.zip",
    ]

    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *names],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.stdout.split() == names


def test_scripts_celery_uses_the_environment_of_scripts_run(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"

    result = subprocess.run(
        [str(PROJECT_DIR / "scripts" / "celery"), "report"],
        cwd=tmp_path,
        env=bare_env(REPROGATE_VAR_DIR=str(var_dir)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert "DEBUG: False" in result.stdout
    assert "REPROGATE_EMBEDDED: True" in result.stdout
    assert f"VAR_DIR: PosixPath('{var_dir}')" in result.stdout


def test_a_command_on_a_var_dir_without_a_database_refuses_and_makes_none(
    tmp_path: Path,
) -> None:
    """Another REPROGATE_VAR_DIR than scripts/run's (or none set): the command says
    which folder holds no database instead of making an empty one there."""
    var_dir = tmp_path / "fresh"
    env = bare_env(REPROGATE_VAR_DIR=str(var_dir))

    result = manage("escrow_verify", cwd=PROJECT_DIR, env=env)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(
        f"ReproGate: no database in {var_dir} (REPROGATE_VAR_DIR) yet."
    )
    assert "export REPROGATE_VAR_DIR=" in result.stderr
    assert not var_dir.exists()


def test_a_command_on_a_database_never_migrated_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "fresh"
    var_dir.mkdir()
    with contextlib.closing(sqlite3.connect(var_dir / "db.sqlite3")) as database:
        database.execute("CREATE TABLE unrelated (x)")  # a database, never migrated
    env = bare_env(REPROGATE_VAR_DIR=str(var_dir))

    result = manage("escrow_verify", cwd=PROJECT_DIR, env=env)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "ReproGate: the database has no tables yet: start scripts/run once, "
        "or run scripts/manage migrate (manage.py migrate)"
    )


def test_migrate_makes_the_database_the_other_commands_then_read(
    tmp_path: Path,
) -> None:
    env = bare_env(REPROGATE_VAR_DIR=str(tmp_path / "var"))

    migrated = manage("migrate", "--no-input", "-v", "0", cwd=PROJECT_DIR, env=env)
    verified = manage("escrow_verify", cwd=PROJECT_DIR, env=env)

    assert migrated.returncode == 0, migrated.stderr
    assert "no database in" not in verified.stderr
    assert "no tables yet" not in verified.stderr
