"""What the tests of the scripts (scripts/manage, scripts/run) share: the project
folder, a bare shell's environment, and a skip while .venv is stale (the scripts
would reinstall it)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
MANAGE = PROJECT_DIR / "scripts" / "manage"


@pytest.fixture(autouse=True)
def _venv_up_to_date() -> None:
    """scripts/_venv.sh would reinstall the virtualenv: never from a test."""
    stamp = PROJECT_DIR / ".venv" / ".reprogate-installed"
    want = hashlib.sha256((PROJECT_DIR / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text().strip() != want:
        pytest.skip(".venv is not installed from the current pyproject.toml")


def bare_env(**extra: str) -> dict[str, str]:
    """What a new shell has: no DJANGO_* or REPROGATE_* variable at all."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    env.update(extra)
    return env


def run_in_project(
    command: list[str], env: dict[str, str], *, cwd: Path = PROJECT_DIR
) -> subprocess.CompletedProcess[str]:
    """``command`` run in the project folder (or ``cwd``) with exactly ``env``,
    its output captured as text; never raises on a failing status."""
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
