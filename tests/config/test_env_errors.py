"""A missing or malformed setting stops every entry point with one line naming it.

``manage.py``, the Celery worker and the WSGI application each run in a fresh
interpreter here (settings are read once per process): stderr is exactly one line,
``ReproGate: …``, with no traceback, and the exit status is 3.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import EXIT_MISCONFIGURED, env_origin
from tests.config.scripts_support import run_in_project

PROJECT_DIR = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))

ENTRY_POINTS = {
    "manage.py": [sys.executable, "manage.py", "escrow_verify"],
    "celery": [CELERY, "-A", "config", "worker", "--pool", "solo"],
    "wsgi": [sys.executable, "-c", "import config.wsgi"],
}

# (what is wrong, the variables set or removed, the words the line must contain)
BAD_SETTINGS = [
    ("no secret key", {"DJANGO_SECRET_KEY": None}, "DJANGO_SECRET_KEY is required"),
    ("debug not a boolean", {"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG='maybe'"),
    ("database url", {"DATABASE_URL": "nonsense"}, "DATABASE_URL='nonsense'"),
    ("port not a number", {"REPROGATE_PORT": "80a"}, "REPROGATE_PORT='80a'"),
    ("port too large", {"REPROGATE_PORT": "70000"}, "REPROGATE_PORT=70000"),
    ("site url", {"REPROGATE_SITE_URL": "ftp://x"}, "REPROGATE_SITE_URL='ftp://x'"),
    (
        "unreadable secret file",
        {"DJANGO_SECRET_KEY": None, "DJANGO_SECRET_KEY_FILE": "/nonexistent/key"},
        "DJANGO_SECRET_KEY_FILE='/nonexistent/key' cannot be read",
    ),
]


@pytest.fixture
def base_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "REPROGATE_", "CELERY_", "DATABASE_URL"))
    }
    env["REPROGATE_VAR_DIR"] = str(tmp_path / "var")
    env["DJANGO_SECRET_KEY"] = "insecure-key-for-the-test-suite-only"
    env["DJANGO_DEBUG"] = "False"
    return env


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_in_project(command, env)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(
    ("changes", "expected"),
    [(c, e) for _, c, e in BAD_SETTINGS],
    ids=[name for name, _, _ in BAD_SETTINGS],
)
def test_a_bad_setting_is_one_line_naming_it(
    base_env: dict[str, str], entry: str, changes: dict[str, str | None], expected: str
) -> None:
    for name, value in changes.items():
        if value is None:
            base_env.pop(name, None)
        else:
            base_env[name] = value

    result = run(ENTRY_POINTS[entry], base_env)

    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ReproGate: ")
    assert expected in lines[0]
    assert result.returncode == EXIT_MISCONFIGURED
    assert result.stdout == ""


def test_a_command_without_debug_or_secret_points_at_scripts_manage(
    base_env: dict[str, str],
) -> None:
    del base_env["DJANGO_DEBUG"], base_env["DJANGO_SECRET_KEY"]

    result = run([sys.executable, "manage.py", "check"], base_env)

    assert result.returncode == EXIT_MISCONFIGURED
    assert result.stderr.strip() == (
        "ReproGate: DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off (set it, "
        "or DJANGO_SECRET_KEY_FILE); scripts/manage runs commands with the embedded "
        "default"
    )


def test_the_server_does_not_point_at_scripts_manage(
    base_env: dict[str, str],
) -> None:
    del base_env["DJANGO_DEBUG"], base_env["DJANGO_SECRET_KEY"]

    result = run(ENTRY_POINTS["wsgi"], base_env)

    assert result.returncode == EXIT_MISCONFIGURED
    assert "scripts/manage" not in result.stderr


def test_good_settings_still_start(base_env: dict[str, str]) -> None:
    result = run([sys.executable, "manage.py", "check"], base_env)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://reprogate.example.com", "https://reprogate.example.com"),
        ("https://reprogate.example.com/", "https://reprogate.example.com"),
        ("http://127.0.0.1:8140", "http://127.0.0.1:8140"),
    ],
)
def test_env_origin_accepts_scheme_host_and_port(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: str
) -> None:
    monkeypatch.setenv("RG_TEST_SITE", raw)

    assert env_origin("RG_TEST_SITE", "http://unused") == expected


@pytest.mark.parametrize(
    "raw",
    [
        "reprogate.example.com",
        "ftp://reprogate.example.com",
        "https://",
        "https://reprogate.example.com/app",
        "https://reprogate.example.com?x=1",
        "https://reprogate.example.com#top",
        "https://user@reprogate.example.com",
        "http://127.0.0.1:port",
    ],
)
def test_env_origin_rejects_anything_else_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("RG_TEST_SITE", raw)

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_SITE=.* is not an http"):
        env_origin("RG_TEST_SITE", "http://unused")
